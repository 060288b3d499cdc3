"""MemoryPolicyStore: the policies set through the API (interface_policies.py) kept in memory,
on the twin task store's tables and under its lock, for unit tests; it passes the same
conformance suite as PolicyStore (tests/conformance/policies.py)."""
from __future__ import annotations

import datetime as dt
from typing import cast

from dispatcher.store.errors import PolicyNotFound, PolicyRevisionMismatch
from dispatcher.store.interface_policies import PolicyAudit, StoredPolicy
from dispatcher.store.memory import MemoryTaskStore, _ms
from dispatcher.store.memory_ops import append_audit


class MemoryPolicyStore:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    def all(self) -> list[StoredPolicy]:
        with self._db._lock:
            rows = [cast(StoredPolicy, p) for p, deleted in self._db._policies.values() if not deleted]
        return sorted(rows, key=lambda p: (p.namespace, p.task_type))

    def put(self, namespace: str, task_type: str, policy_json: str, *, actor: str, now: dt.datetime,
            if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        with self._db._lock:
            before, revision = self._checked(namespace, task_type, if_revision)
            after = StoredPolicy(namespace, task_type, policy_json, revision + 1, actor[:128], _ms(now))
            self._db._policies[(namespace, task_type)] = (after, False)
            if record is not None:
                append_audit(self._db, record(before, after))
            return after

    def delete(self, namespace: str, task_type: str, *, actor: str, now: dt.datetime,
               if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        with self._db._lock:
            before, _ = self._checked(namespace, task_type, if_revision)
            if before is None:
                raise PolicyNotFound(f"{namespace}/{task_type}")
            self._db._policies[(namespace, task_type)] = (before, True)
            if record is not None:
                append_audit(self._db, record(before, None))
            return before

    def _checked(self, namespace: str, task_type: str, if_revision: int | None) -> tuple[StoredPolicy | None, int]:
        found = self._db._policies.get((namespace, task_type))
        live, revision = None, 0
        if found is not None:
            stored, deleted = cast(tuple[StoredPolicy, bool], found)
            revision = stored.revision
            live = None if deleted else stored
        if if_revision is not None and if_revision != (live.revision if live is not None else 0):
            raise PolicyRevisionMismatch(f"{namespace}/{task_type}", if_revision, live.revision if live else 0)
        return live, revision
