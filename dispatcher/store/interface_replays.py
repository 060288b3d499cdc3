"""The contract of the bulk replay jobs, kept by BulkReplayStore (bulk_replays.py, on shard
0) and its twin MemoryReplayStore (memory_ops.py); tests/conformance/replays.py checks both.

A job is a filter over the dead letters, a rate and a retry budget. A node runs it while it
holds the job's lease (take_lease); each step stores the cursor it reached and the counts in
the same write that renews the lease (advance), conditional on still holding it: a node that
lost the lease writes nothing, and whoever takes the job next goes on from the stored
cursor. State changes by a person (pause, resume, cancel) are audited in the same atomic
step. Every method may raise dispatcher.base.errors.Unavailable (nothing written). Times are
naive UTC, with millisecond precision.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol

from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter

RUNNING, PAUSED, CANCELLED, DONE = "running", "paused", "cancelled", "done"
STATES = (RUNNING, PAUSED, CANCELLED, DONE)
NEXT_STATE = {"pause": ({RUNNING}, PAUSED), "resume": ({PAUSED}, RUNNING), "cancel": ({RUNNING, PAUSED}, CANCELLED)}
"""action -> (the states it may be taken from, the state it leads to)."""


@dataclasses.dataclass(frozen=True)
class Job:
    id: int
    where: DeadLetterFilter
    rate_per_s: int
    retries: int
    state: str
    total: int
    replayed: int
    skipped: int
    cursor_at: dt.datetime | None
    cursor_task_id: str | None
    reason: str
    created_by: str
    created_at: dt.datetime
    updated_at: dt.datetime
    lease_owner: str
    lease_until: dt.datetime | None

    @property
    def cursor(self) -> tuple[dt.datetime, str] | None:
        return (self.cursor_at, self.cursor_task_id) if self.cursor_at and self.cursor_task_id else None

    def as_dict(self) -> dict:
        shown = dataclasses.asdict(self)
        shown["filter"] = self.where.as_dict()
        del shown["where"]
        shown["done_count"] = self.replayed + self.skipped
        return shown


class ReplayStoreProtocol(Protocol):
    """What bulk replays (dispatcher/ops/bulk_replay.py) need."""

    def create(self, where: DeadLetterFilter, *, rate_per_s: int, retries: int, total: int,
               record: AuditRecord) -> Job:
        """A new running job (id greater than every earlier one; no cursor, counts 0, no
        lease; reason and created_by from `record`, created_at = updated_at = record.at),
        with `record` written under the target `bulk_replay:<id>`."""

    def get(self, job_id: int) -> Job:
        """The job; JobNotFound."""

    def jobs(self, limit: int = 50) -> list[Job]:
        """The latest `limit` jobs, newest (greatest id) first."""

    def change_state(self, job_id: int, action: str, record: AuditRecord) -> Job:
        """pause, resume or cancel (NEXT_STATE), updated_at = record.at, with `record` given
        before {"state": old} and after {"state": new}; returns the job after. JobNotFound;
        JobStateConflict from a state that does not allow it (a done or cancelled job stays
        so); nothing written then."""

    # ---- the runner's side ----

    def take_lease(self, node: str, now: dt.datetime, until: dt.datetime) -> Job | None:
        """The oldest running job whose lease is `node`'s or free (never taken, or ran out
        before `now`) is leased to `node` until `until`; returns the oldest running job
        `node` holds, None when there is none."""

    def advance(self, job_id: int, node: str, *, cursor: tuple[dt.datetime, str] | None, replayed: int,
                skipped: int, finished: bool, now: dt.datetime, lease_until: dt.datetime) -> bool:
        """Store a step's progress and renew the lease, if `node` holds it: the cursor (kept
        when None), replayed and skipped added, updated_at `now`, the lease until
        `lease_until`, and running -> done when `finished` (another state is kept). False
        (nothing written) when `node` does not hold the lease."""
