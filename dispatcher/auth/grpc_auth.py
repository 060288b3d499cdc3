"""The access check of the task API (TaskService, CronService): who calls, and may they.

Callers send `authorization: Bearer <secret>` metadata. Each RPC asks `token(context, call)`
first, before its request is looked at, and `check_namespaces` once it knows the namespaces
it touches (a batch: every one of them), before anything is written. Without a tokens file
the API is open and both checks return at once (local use; the node warns at start).

The hot path is one sha256 and one dict lookup per call (tokens.TokenSet.find), and a
frozenset membership per task only for a token limited to some namespaces.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from dispatcher.auth.tokens import Token, TokenLookup
from dispatcher.base.errors import PermissionDenied, Unauthenticated
from dispatcher.base.metrics import NodeMetrics

log = logging.getLogger(__name__)

METADATA_KEY = "authorization"
_BEARER = "Bearer "


class _Throttled:
    """At most one log line per `interval_s` per reason; the lines held back are counted
    into the next one (a client retrying a bad token in a loop must not flood the log)."""

    def __init__(self, interval_s: float, monotonic: Callable[[], float]):
        self._interval_s = interval_s
        self._monotonic = monotonic
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, reason: str, message: str, *args: object) -> None:
        now = self._monotonic()
        last = self._last.get(reason)
        if last is not None and now - last < self._interval_s:
            self._held[reason] = self._held.get(reason, 0) + 1
            return
        self._last[reason] = now
        held = self._held.pop(reason, 0)
        log.warning("access denied (%s): " + message + ("" if not held else f" (and {held} more since the last line)"),
                    reason, *args)


class Authorizer:
    def __init__(self, tokens: TokenLookup | None, metrics: NodeMetrics | None = None, *,
                 log_interval_s: float = 1.0, monotonic: Callable[[], float] = time.monotonic):
        """tokens None: the API is open to every caller."""
        self._tokens = tokens
        self._metrics = metrics
        self._log = _Throttled(log_interval_s, monotonic)

    @property
    def open(self) -> bool:
        return self._tokens is None

    def _deny(self, reason: str, call: str, message: str, *args: object) -> None:
        if self._metrics is not None:
            self._metrics.auth_denied.labels(reason, call).inc()
        self._log.warning(reason, message, *args)

    def token(self, context, call: str) -> Token | None:
        """The caller's token, allowed `call`; None on an open API. Unauthenticated without a
        known token, PermissionDenied for a token not allowed the call."""
        if self._tokens is None:
            return None
        secret = None
        for key, value in context.invocation_metadata() or ():
            if key == METADATA_KEY and isinstance(value, str) and value.startswith(_BEARER):
                secret = value[len(_BEARER):]
                break
        if secret is None:
            self._deny("no_token", call, "%s without a token", call)
            raise Unauthenticated(f"a token is required: send the metadata '{METADATA_KEY}: Bearer <secret>'")
        token = self._tokens.find(secret)
        if token is None:
            self._deny("unknown_token", call, "%s with a token this node does not know", call)
            raise Unauthenticated("the token is not known to this node")
        if call not in token.calls:
            self._deny("call", call, "token %r may not %s", token.name, call)
            raise PermissionDenied(token.name, call)
        return token

    def check_namespaces(self, token: Token | None, call: str, namespaces: Iterable[str]) -> None:
        """PermissionDenied naming the first namespace of `namespaces` the token may not use."""
        if token is None or token.namespaces is None:
            return
        allowed = token.namespaces
        for namespace in namespaces:
            if namespace not in allowed:
                self._deny("namespace", call, "token %r may not %s in namespace %r", token.name, call, namespace)
                raise PermissionDenied(token.name, call, namespace)

