"""Console sign-in sessions: a browser trades a token for a cookie once, and no URL, page or
script of the console carries the token after that.

A token in a URL ends up in the address bar, the browser's history, bookmarks, screenshots
and any proxy's log; one kept by the page's script is readable by any script that runs
there. The session cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's
page sends it) and Secure on a TLS endpoint. Its name carries the endpoint's port, because
browsers share cookies across the ports of one host and a local cluster runs several nodes
on 127.0.0.1: each node's console keeps its own session.

Sessions live in the node's memory: a restarted node asks the browser to sign in again,
which is what a restart of the process that checks the tokens should do. Each session
expires `ttl_s` after sign-in (no sliding renewal: a console left open refreshes every few
seconds and would otherwise never expire).
"""
from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie

from dispatcher.auth.identity import Identity

CSRF_HEADER = "X-Requested-By"
"""A request that acts (POST, DELETE) on the strength of the cookie alone must carry this
header: a cross-site form cannot set it, and without a CORS answer from this endpoint no
cross-site script may. SameSite=Strict already keeps the cookie off such requests; this is
the second lock, for browsers that do not honour SameSite."""

DEFAULT_TTL_S = 8 * 3600.0
"""A working shift."""


def cookie_name(port: int) -> str:
    return f"taskring_session_{port}"


class Sessions:
    def __init__(self, *, ttl_s: float = DEFAULT_TTL_S, max_sessions: int = 10_000,
                 monotonic: Callable[[], float] = time.monotonic):
        self._ttl_s = ttl_s
        self._max = max_sessions
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # sha256 of the session id -> (identity, expiry): the ids themselves are never kept,
        # so a dump of the node's memory hands out no live session.
        self._by_digest: OrderedDict[str, tuple[Identity, float]] = OrderedDict()

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def create(self, identity: Identity) -> str:
        """A new session for `identity`; returns its id (the cookie's value)."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            self._by_digest[_digest(session_id)] = (identity, self._monotonic() + self._ttl_s)
            while len(self._by_digest) > self._max:
                self._by_digest.popitem(last=False)   # the oldest sign-in goes first
        return session_id

    def find(self, session_id: str) -> Identity | None:
        digest = _digest(session_id)
        with self._lock:
            found = self._by_digest.get(digest)
            if found is None:
                return None
            identity, expires = found
            if self._monotonic() >= expires:
                del self._by_digest[digest]
                return None
            return identity

    def end(self, session_id: str) -> bool:
        with self._lock:
            return self._by_digest.pop(_digest(session_id), None) is not None

    def clear(self) -> int:
        """End every session (the tokens changed); returns how many there were."""
        with self._lock:
            n = len(self._by_digest)
            self._by_digest.clear()
            return n

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_digest)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def session_id_from(cookie_header: str | None, name: str) -> str | None:
    """The value of cookie `name` in a Cookie header; None without one (or a header that
    does not parse: a browser's other cookies for this host are not ours to judge)."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None and morsel.value else None


def set_cookie(name: str, session_id: str, *, max_age_s: float, secure: bool) -> str:
    """The Set-Cookie value that signs a browser in."""
    return (f"{name}={session_id}; Path=/; Max-Age={int(max_age_s)}; HttpOnly; SameSite=Strict"
            + ("; Secure" if secure else ""))


def clear_cookie(name: str, *, secure: bool) -> str:
    """The Set-Cookie value that signs a browser out."""
    return f"{name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")
