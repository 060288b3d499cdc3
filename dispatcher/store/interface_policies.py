"""The contract of the policies set through the API (PolicyService), kept by PolicyStore
(policies.py, on the first shard) and its twin MemoryPolicyStore (memory_ops.py);
tests/conformance/policies.py checks both.

One entry per task type, in the policies file's JSON shape, replacing the file's entry for
that type. Every change raises the entry's revision by one; a deleted entry keeps its revision
(a tombstone) so that a change made against a revision read before the delete never matches.
A change may be made conditional on the revision read (`if_revision`, 0 = no entry), and takes
the audit record of the change, written in the same atomic step. Every method may raise
dispatcher.base.errors.Unavailable (nothing written). Times are naive UTC, millisecond precision.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Protocol

from dispatcher.store.interface_audit import AuditRecord


@dataclasses.dataclass(frozen=True)
class StoredPolicy:
    namespace: str
    task_type: str
    policy_json: str
    """The entry, as the caller gave it (validated by the API before it is written)."""
    revision: int
    updated_by: str
    updated_at: dt.datetime

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.task_type}"


PolicyAudit = Callable[[StoredPolicy | None, StoredPolicy | None], AuditRecord]
"""The audit record of a change, from the entry before and after it (None: no entry)."""


class PolicyStoreProtocol(Protocol):
    def all(self) -> list[StoredPolicy]:
        """Every live entry (no tombstones), by namespace then task type."""

    def put(self, namespace: str, task_type: str, policy_json: str, *, actor: str, now: dt.datetime,
            if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        """Set the type's entry (a new one, or a replacement) at the next revision.
        PolicyRevisionMismatch (nothing written) when `if_revision` is given and the live entry's
        revision differs (0: there must be no live entry)."""

    def delete(self, namespace: str, task_type: str, *, actor: str, now: dt.datetime,
               if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        """Remove the type's entry; returns it as it was. PolicyNotFound when there is no live
        entry; PolicyRevisionMismatch as put's."""
