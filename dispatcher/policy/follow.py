"""The policies in use, followed on a running node: the policies file (TASKRING_RETRY_POLICIES)
and the entries set through the API (PolicyService), laid over it (layers.py). A limit, a rate,
a fair-share weight, a heartbeat timeout or a retry policy changes on a running cluster, without
a restart, by editing the file (or the ConfigMap it is mounted from) or by a PutTypePolicy.

Every `interval_s` a thread compares the file's stamp with what it last read and reads the API
entries (a few rows on the first shard). A file that no longer parses, or a merge that does not,
is refused whole, naming the field (logged at ERROR and counted as `failed`): the policies in use
stay as they were. New policies replace the old at once (`on_change`, which the node applies on
its event loop), with the task types that changed and where the change came from ("file" or
"api"). A node that took a PutTypePolicy calls `check` itself, so the change applies there at once.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from dispatcher.base.errors import TaskringError
from dispatcher.base.file_stamp import file_stamp
from dispatcher.base.periodic_thread import PeriodicThread
from dispatcher.policy.layers import ApiEntry, PolicyLayers, file_document
from dispatcher.policy.retry import InvalidRetryPolicy, RetryPolicies

log = logging.getLogger(__name__)


class PolicyEntries(Protocol):
    def all(self) -> Sequence[ApiEntry]: ...


def read_layers(path: str | None, entries: PolicyEntries | None) -> PolicyLayers:
    """Both sources as they are now (at start: a node does not start on policies it cannot use)."""
    document: dict = {}
    if path is not None:
        with open(path, encoding="utf-8") as f:
            document = file_document(f.read())
    return PolicyLayers(file=document, api=tuple(entries.all()) if entries is not None else ())


def changed_types(before: RetryPolicies, after: RetryPolicies) -> list[str]:
    """The "namespace/task_type" entries that differ, in any of their rules."""
    tables = ("by_type", "unique_by_type", "limits_by_type", "heartbeat_by_type", "fairness_by_type")
    keys: set[tuple[str, str]] = set()
    for table in tables:
        old, new = getattr(before, table), getattr(after, table)
        keys |= {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    changed = sorted(f"{ns}/{task_type}" for ns, task_type in keys)
    if before.server_default != after.server_default:
        changed.insert(0, "default")
    return changed


@dataclasses.dataclass(frozen=True)
class PolicyChange:
    policies: RetryPolicies
    changed: list[str]
    """The task types whose policies changed ("default" first when the server default did)."""
    source: str
    """"file" or "api" (both read in one check: "file")."""


class PolicyFollower:
    def __init__(self, path: str | None, entries: PolicyEntries | None, layers: PolicyLayers,
                 current: RetryPolicies, *, interval_s: float = 5.0,
                 on_change: Callable[[PolicyChange], None],
                 on_reload: Callable[[str], None] = lambda result: None):
        """`layers` and `current`: what was read at start (read_layers, then its policies()).
        on_reload gets "loaded" or "failed" after each read of a changed source."""
        self._path = path
        self._entries = entries
        self._stamp = file_stamp(path) if path is not None else None
        self.layers = layers
        self.current = current
        self._on_change = on_change
        self._on_reload = on_reload
        self._lock = threading.Lock()   # the periodic thread and an API call's check
        self._follower = PeriodicThread("taskring-policies-reload", interval_s, self.check)

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def check(self) -> bool:
        """Read what changed since the last read; True when new policies apply."""
        with self._lock:
            return self._check()

    def _check(self) -> bool:
        layers, source = self._read_file(self.layers)
        if self._entries is not None:
            try:
                api = tuple(self._entries.all())
            except TaskringError as exc:
                log.warning("cannot read the policies set through the API (kept as they were): %s", exc)
                api = tuple(layers.api)
            if tuple((p.key, p.revision) for p in api) != layers.revisions():
                layers, source = dataclasses.replace(layers, api=api), source or "api"
        if source is None:
            return False
        try:
            policies = layers.policies()
        except InvalidRetryPolicy as exc:
            log.error("the policies changed (%s) but cannot be used, keeping the policies in use: %s", source, exc)
            self._on_reload("failed")
            # What the sources say now, kept: each bad change is reported once, and the next change
            # of either source is merged with it (the policies in use stay the last good ones).
            self.layers = layers
            return False
        changed = changed_types(self.current, policies)
        self.layers, self.current = layers, policies
        self._on_reload("loaded")
        if not changed:
            return False
        log.warning("policies read again (%s); changed: %s", source, ", ".join(changed))
        try:
            self._on_change(PolicyChange(policies, changed, source))
        except Exception:
            log.exception("applying the new policies failed")
        return True

    def _read_file(self, layers: PolicyLayers) -> tuple[PolicyLayers, str | None]:
        if self._path is None:
            return layers, None
        stamp = file_stamp(self._path)
        if stamp == self._stamp:
            return layers, None
        self._stamp = stamp   # a bad file is reported once, not every interval
        try:
            with open(self._path, encoding="utf-8") as f:
                document = file_document(f.read())
        except (OSError, InvalidRetryPolicy) as exc:
            log.error("policies file %s changed but cannot be used, keeping the policies in use: %s", self._path, exc)
            self._on_reload("failed")
            return layers, None
        return dataclasses.replace(layers, file=document), "file"
