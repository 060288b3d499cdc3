"""The contract of the dead letters, kept by DeadLetterStore (dead_letters.py, over the task
store's shards) and its twin MemoryDeadLetterStore (memory_dead_letters.py);
tests/conformance/dead_letters.py checks both.

A dead letter is a task row in status dead_lettered plus its entry (records.DeadLetter),
which the task store's record_outcomes writes with the row, with its failure group counted.
Here they are read grouped and paged, replayed or deleted. A replay, in one atomic step,
rewrites the envelope, puts the row back to pending for its slot's poller, removes the entry
(and its count from its group), appends a "retry_wait" event saying who replayed it and why
(the dispatch that follows adds "queued" as for any retry) and the audit record: the task
keeps its id and its history. A replay of a task that is no longer a dead letter writes
nothing, so a bulk replay that runs again over the same entries after a crash is harmless.

Every method may raise dispatcher.base.errors.Unavailable (nothing written). Times are naive UTC,
with millisecond precision.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable
from typing import Protocol

from dispatcher.store import records as r
from dispatcher.store.interface_audit import AuditRecord


def envelope_digest(envelope: bytes) -> str:
    """What a confirmation names: the envelope the caller saw."""
    return hashlib.sha256(envelope).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class DeadLetterFilter:
    namespace: str = ""
    task_type: str = ""
    error_class: str = ""
    error_group: str = ""
    since: dt.datetime | None = None
    """Dead-lettered at or after."""
    until: dt.datetime | None = None
    """Dead-lettered before."""

    def matches(self, entry: r.DeadLetter) -> bool:
        """Whether `entry` is one the filter names ("" matches every value)."""
        equal = all(not want or got == want for want, got in (
            (self.namespace, entry.namespace), (self.task_type, entry.task_type),
            (self.error_class, entry.error_class), (self.error_group, entry.error_group)))
        return (equal and (self.since is None or entry.dead_lettered_at >= self.since)
                and (self.until is None or entry.dead_lettered_at < self.until))

    def as_dict(self) -> dict:
        return {k: (v.isoformat(timespec="milliseconds") + "Z" if isinstance(v, dt.datetime) else v)
                for k, v in dataclasses.asdict(self).items() if v}


@dataclasses.dataclass(frozen=True)
class FailureGroup:
    namespace: str
    task_type: str
    error_group: str
    error_class: str
    error_shape: str
    count: int
    first_at: dt.datetime
    last_at: dt.datetime
    sample_task_id: str
    sample_error: str


@dataclasses.dataclass(frozen=True)
class Replayed:
    task_id: str
    namespace: str
    before: bytes
    after: bytes
    attempts: int


class DeadLetterStoreProtocol(Protocol):
    """What the operators' services (dispatcher/ops) and the admin view need."""

    # ---- reads ----

    def page(self, where: DeadLetterFilter, *, limit: int, cursor: tuple[dt.datetime, str] | None = None,
             oldest_first: bool = False) -> list[r.DeadLetter]:
        """The entries `where` matches, at most `limit` from all shards: newest first by
        (dead_lettered_at, task_id), strictly before `cursor`; or oldest first (a bulk
        replay's walk), strictly after it."""

    def count(self, where: DeadLetterFilter) -> int:
        """How many entries `where` matches."""

    def groups(self, where: DeadLetterFilter, limit: int = 100) -> list[FailureGroup]:
        """One line per (namespace, task type, failure group) with entries, the largest
        count first (ties by namespace, task type, group), at most `limit`. Without a time
        range or an error class the lines are the groups' running counts: first_at and
        last_at are when the group first and last gained a dead letter, sample_* its latest
        one. With one, they are computed from the entries in range (first_at, last_at:
        their earliest and latest dead_lettered_at; sample: the greatest task id and
        error)."""

    def get(self, task_id: str) -> tuple[r.DeadLetter, str | None]:
        """The entry and its last stack trace; TaskNotFound when there is none."""

    # ---- actions (each with its audit record, in one atomic step) ----

    def replay(self, task_id: str, *, rewrite: Callable[[bytes, int], bytes], detail: str,
               record: Callable[[Replayed], AuditRecord], node: str, now: dt.datetime,
               expect_digest: str | None = None) -> Replayed:
        """Put a dead letter back to pending with the envelope `rewrite(envelope, attempts)`
        gives, trigger_at and updated_at `now`, attempts kept; remove its entry and take it
        from its group's count; append a "retry_wait" event at `now` by `node` with the
        row's attempts and `detail`; write the audit record `record(replayed)`. Returns
        what was replayed (envelope before and after).

        Refused, nothing written: TaskNotFound (no such task); NotDeadLettered when the
        row is not dead_lettered or its entry was deleted (its `state` says which);
        ChangedSinceRead when `expect_digest` is given and is not envelope_digest of the
        stored envelope."""

    def delete(self, task_id: str, record: Callable[[r.DeadLetter, bytes], AuditRecord]) -> r.DeadLetter:
        """Remove the entry and take it from its group's count (the task stays dead_lettered,
        its history whole), with the audit record `record(entry, envelope)`; returns the
        entry. TaskNotFound when there is no entry."""
