"""The policies file (TASKRING_RETRY_POLICIES), read again when it changes: a limit, a rate, a
fair-share weight, a heartbeat timeout or a retry policy is changed on a running cluster by
editing the file (or the ConfigMap it is mounted from), without a restart.

Every `interval_s` a thread compares the file's stamp with what it last read. A file that no
longer parses is refused whole, naming the field (logged at ERROR and counted as `failed`):
the policies in use stay as they were. One that parses replaces them all at once
(`on_change`, which the node applies on its event loop), and the change is logged with the
task types whose entries changed.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from dispatcher.base.file_stamp import file_stamp
from dispatcher.base.periodic_thread import PeriodicThread
from dispatcher.policy.retry import InvalidRetryPolicy, RetryPolicies, parse_retry_policies

log = logging.getLogger(__name__)


def read_policies(path: str) -> RetryPolicies:
    with open(path, encoding="utf-8") as f:
        return parse_retry_policies(f.read())


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


class PolicyFile:
    def __init__(self, path: str, current: RetryPolicies, *, interval_s: float = 5.0,
                 on_change: Callable[[RetryPolicies], None],
                 on_reload: Callable[[str], None] = lambda result: None):
        """`current`: the policies read at start from `path` (a node does not start on a
        file it cannot use). on_reload gets "loaded" or "failed" after each read past the first."""
        self._path = path
        self._stamp = file_stamp(path)
        self.current = current
        self._on_change = on_change
        self._on_reload = on_reload
        self._follower = PeriodicThread("taskring-policies-reload", interval_s, self.check)

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def check(self) -> bool:
        """Read the file again if it changed since the last read; True when new policies apply."""
        stamp = file_stamp(self._path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp   # a bad file is reported once, not every interval
        try:
            policies = read_policies(self._path)
        except (OSError, InvalidRetryPolicy) as exc:
            log.error("policies file %s changed but cannot be used, keeping the policies in use: %s", self._path, exc)
            self._on_reload("failed")
            return False
        changed = changed_types(self.current, policies)
        self.current = policies
        self._on_reload("loaded")
        if not changed:
            return False
        log.warning("policies file %s read again; changed: %s", self._path, ", ".join(changed))
        try:
            self._on_change(policies)
        except Exception:
            log.exception("applying the new policies failed")
        return True
