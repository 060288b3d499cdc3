"""The contract of the task store, kept by TaskStore (mysql.py) and by its
in-memory twin MemoryTaskStore (memory.py); tests/conformance/ (tasks.py,
slots_and_offsets.py) checks both against it. The stores beside it (cron rules, dead
letters, search, audit, bulk replay jobs) have theirs in interface_<area>.py.

Design note
-----------
One row per task is the source of truth for its state (statuses in records.py).
Two kinds of writer touch it:

- the API (insert_tasks, reroute_to_mysql, cancel): unfenced, conditional on
  the row's status;
- the owner of the row's slot (claim_due, sweep_enqueued, begin_dispatch,
  record_outcomes, commit_offsets, release_slot): fenced. Each call carries the
  epoch the caller holds for every slot it writes; the store compares it with
  the slot's current epoch *in the same atomic step as the write*, and a slot
  whose epoch moved on is reported stale and gets no write at all. claim_slot
  is what moves an epoch on.

Transitions are conditional on (status, attempts), so a task that reaches an
owner twice (a replayed Kafka message, a swept row) is dispatched once, and an
outcome of an attempt that is no longer current changes nothing.

What is returned, what is written and what is refused is specified per method
below. Every method may raise dispatcher.base.errors.Unavailable when the backend
underneath refused (nothing was written: each call is all-or-nothing). Times
are naive UTC datetimes, stored with millisecond precision (truncated).
Task ids, namespaces and task types are compared exactly (case-sensitive).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Container, Iterable, Sequence
from typing import Protocol

from dispatcher.store import records as r


class TaskStoreProtocol(Protocol):
    """What the engine, the API, ownership and the admin view need from a task store."""

    # ---- lifecycle ----

    def start(self) -> None:
        """Make the store usable; raises Unavailable if the backend cannot be reached."""

    def stop(self) -> None:
        """Release what the store holds. Safe before start and twice."""

    # ---- slot ownership (the fencing record) ----

    def ensure_slots(self, slot_count: int) -> None:
        """Make sure slots 0..slot_count-1 have an ownership record (epoch 0, no owner).
        An existing record is never changed."""

    def claim_slot(self, slot: int, node: str, now: dt.datetime, lease_ms: int = 0) -> int:
        """Take `slot` for `node` and return its new epoch, unless another node's
        lease on it is live.

        Leased (cluster.interface.SlotLeased): another node holds a lease on the
        slot that has not run out by the store's clock. The slot is marked wanted
        by `node` (its owner's next renew_leases says WANTED) and nothing else is
        written.

        Otherwise the epoch becomes the previous one + 1 (a slot without a record
        starts from 0, so its first claim returns 1), the owner becomes `node`, and
        the slot is leased to it for `lease_ms` (0: a lease that has already run
        out, for callers without leases). From then on every fenced write carrying
        an older epoch for the slot is refused. The slot's rows that a previous
        owner held (claimed) or had handed to an executor without recording the
        outcome (dispatched) go back to pending, stamped with the new epoch,
        attempts unchanged: they run again (at-least-once). Rows in any other
        status are untouched.
        """

    def attempts_in_doubt(self, slot: int, epoch: int, now: dt.datetime) -> list[r.InDoubt]:
        """The attempts the claim that made `epoch` took back from `dispatched`: rows of the
        slot pending under that epoch whose last attempt a previous owner handed to an
        executor without an outcome, each with when it was dispatched. Their handlers may
        still run; the new owner counts them against its limits until their timeout has
        passed (engine/limits.py). Once such a row is dispatched again, or moved on by
        anything else, it is no longer in doubt. Read before the new owner dispatches; `now`
        is the claim's time or later."""

    def release_slot(self, slot: int, epoch: int, now: dt.datetime) -> bool:
        """Give the slot up after a clean handoff. Fenced.

        Stale `epoch`: returns False and writes nothing. Otherwise the slot's
        claimed rows go back to pending, its owner is cleared ('') with its lease
        (anyone may claim it at once) and True is returned. The epoch is *not*
        bumped (the next claim_slot does that), so outcomes of attempts still in
        flight may be recorded until then; rows still dispatched are left alone
        (the next claim_slot resets them).
        """

    def renew_leases(self, node: str, epochs: dict[int, int], lease_ms: int, now: dt.datetime) -> dict[int, str]:
        """Extend `node`'s lease on each slot of `epochs` it holds under that epoch to
        `lease_ms` from now (the MySQL store reads its own clock; the twin, `now`).
        Returns {slot: RENEWED | WANTED | LOST} (cluster.interface) for each: WANTED is
        renewed too (the owner hands the slot over, cleanly, under its lease); LOST
        means another claim has taken it, or it was released."""

    def slot_owners(self) -> dict[int, tuple[int, str]]:
        """{slot: (epoch, owner)} for every slot with a record; owner '' when released
        or never claimed."""

    # ---- the API's writes (unfenced) ----

    def insert_tasks(self, tasks: Sequence[r.NewTask], node: str) -> dict[str, r.Status | r.Held]:
        """Insert new tasks, atomically, and return what already stands for the task ids
        that were not inserted: {task_id: status} for the ids that already existed,
        {task_id: Held(holder, status)} for tasks whose unique key another task holds.

        Nothing is written for an existing id (a retried Submit gets the existing
        task back, its row and history untouched). An id repeated within `tasks`
        is inserted once, from its first occurrence. Each new row has the given
        status (pending or enqueued), attempts 0, epoch 0, updated_at =
        created_at, and two events at created_at by `node`, attempt 0:
        "accepted", then "queued" with detail "kafka" (enqueued) or "mysql"
        (pending). Its (slot, namespace, task_type) is recorded for
        task_types_by_slot. An empty `tasks` writes nothing and returns {}.

        Unique keys: a new task with a `unique_key` is inserted only if it can take
        the key in its namespace: nobody holds it, or its holder no longer does
        (records.key_holds: past its unique_until, else terminal). Otherwise it is
        answered Held by the holder. Within one call, the first new task with a key
        is the candidate and later ones with the same key are held by it (or by
        whoever holds the key against it).
        """

    def take_key(self, task: r.NewTask) -> r.Held | None:
        """Take `task.unique_key` for the existing task `task.task_id` (an operator's replay
        of a dead letter), under the same rule as an insert: None when it is taken (free,
        no longer held by its holder, or already this task's), else Held by the holder.
        Only task_id, slot, namespace, unique_key, unique_until and created_at are read."""

    def reroute_to_mysql(self, task_ids: Sequence[str], now: dt.datetime) -> int:
        """Kafka refused these tasks: move those still enqueued to pending (the MySQL
        path). Conditional on status; unknown ids and rows in any other status are
        left alone. Returns how many rows moved. No event is written."""

    def get_task(self, task_id: str) -> tuple[r.TaskRow, list[r.Event]]:
        """The row and its whole history, in the order the events were written.
        Raises TaskNotFound."""

    def cancel(self, task_id: str, node: str, now: dt.datetime,
               heartbeat_types: Container[tuple[str, str]] = ()) -> None:
        """Cancel a task that has not been handed to an executor, or a running one whose
        type heartbeats.

        pending, enqueued or claimed, or dispatched with (namespace, task_type) in
        `heartbeat_types`: becomes cancelled, with a "cancelled" event at `now` by `node`,
        attempt = the row's attempts (a dispatched row's "dispatched" event moves to the
        history first). An owner that later tries to dispatch it is refused by
        begin_dispatch; the running attempt's next heartbeat is answered "cancelled", and
        its outcome changes nothing. Otherwise raises TaskAlreadyFinished naming the API
        state ("running" for dispatched, else the status itself) and writes nothing;
        unknown id: TaskNotFound.
        """

    def record_heartbeats(self, beats: Sequence[r.HeartbeatWrite], now: dt.datetime) -> list[r.HeartbeatResult]:
        """Record running attempts' heartbeats, one result per beat in order.

        A beat whose row is dispatched at that attempt under that epoch, and whose slot the
        epoch still holds, is RECORDED: the row's heartbeat time becomes `now` and its
        details the beat's (None keeps the last). A cancelled row answers CANCELLED; any
        other (finished, another attempt or epoch, a stale slot, no such task) LOST, and
        nothing is written for it.
        """

    def heartbeat_details(self, task_ids: Sequence[str]) -> dict[str, str]:
        """The details of the last recorded heartbeat of each task that has some."""

    def note_waiting(self, notes: Sequence[r.WaitNote]) -> None:
        """Note why each task waits (its row's wait note, replaced), for tasks still not handed
        out (pending, enqueued, claimed); others are left alone. Not fenced: a note only
        informs, and names its attempt."""

    def wait_note(self, task_id: str) -> tuple[int, str] | None:
        """(attempt, reason) of the task's last wait note, or None."""

    # ---- the owner's writes (fenced) ----

    def claim_due(self, slot: int, epoch: int, until: dt.datetime, limit: int,
                  now: dt.datetime) -> tuple[bool, list[r.TaskRow]]:
        """Claim pending rows of `slot` due by `until` (inclusive) for the owner's heap.

        Stale `epoch`: (False, []) and nothing written. Otherwise at most `limit`
        rows, earliest trigger_at first (ties by task_id), become claimed under
        `epoch` and are returned in that order as claimed (status claimed, epoch
        `epoch`, updated_at `now`; attempts is the number of attempts made so
        far). Rows of other slots or other statuses are never claimed. Rows a
        concurrent claimer holds are skipped, not waited for.
        """

    def sweep_enqueued(self, slot: int, epoch: int, older_than: dt.datetime, limit: int,
                       now: dt.datetime) -> int:
        """Move enqueued rows of `slot` due before `older_than` (strictly) to pending:
        the safety net for a Kafka message lost to a crash. At most `limit` rows,
        oldest first. Returns how many moved; 0 when `epoch` is stale (nothing
        written). No event is written."""

    def begin_dispatch(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                       now: dt.datetime) -> tuple[set[str], set[int]]:
        """Mark the eligible claims dispatched; returns (dispatched task ids, stale slots).

        `epochs` holds the caller's epoch for every slot in `claims`. Claims of a
        stale slot write nothing. A claim is eligible when its row still expects
        this attempt on this path: status enqueued (source "kafka") or claimed
        (source "mysql"), and attempts == attempt - 1. Anything else (cancelled,
        finished, re-routed, already dispatched, unknown) is skipped, so
        duplicates are harmless; a task claimed twice in one call is dispatched
        once. An eligible row becomes dispatched with attempts = attempt and
        epoch = its slot's epoch, and gets the events ("queued" at
        min(due_at, now), only for attempt > 1: the retry fell due) then
        "dispatched" at `now`, by `node`, with the attempt.
        """

    def record_outcomes(self, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int],
                        now: dt.datetime) -> set[int]:
        """Record finished attempts; returns the stale slots, whose writes were refused.

        `epochs` holds the caller's epoch for every slot in `writes`. A write of
        a live slot applies only if its row is dispatched at exactly
        `write.attempt`; others are ignored (no row change, no event). Applied:
        SUCCEEDED -> succeeded; "retry" -> `retry_status` (pending or enqueued)
        with trigger_at = retry_at, last_error and last_stack_trace set;
        DEAD_LETTERED -> dead_lettered with last_error and last_stack_trace, and
        an entry in the dead letters (slot, namespace, task_type, envelope,
        attempts, last error and stack trace, first_attempt_at = the time of the
        task's first "dispatched" event, dead_lettered_at = now). attempts is
        never changed here. The write's events are appended in its order.
        """

    def return_undelivered(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                           now: dt.datetime) -> set[int]:
        """Give back attempts marked dispatched that were never sent (the owner lost its
        session lease in between); returns the stale slots, whose claims were refused.

        A claim of a live slot applies only if its row is dispatched at exactly
        `claim.attempt`: the row becomes pending with attempts = attempt - 1 (the
        attempt is not spent) and trigger_at = due_at, and gets a "queued" event at
        `now` by `node` with the attempt and a detail saying it was not run.
        """

    def stranded(self, slot: int, epoch: int, dispatched_before: dt.datetime, claimed_before: dt.datetime,
                 limit: int) -> tuple[bool, list[r.TaskRow]]:
        """Rows of `slot` that may have nobody acting on them: dispatched with updated_at
        (the dispatch time) before `dispatched_before`, and claimed with updated_at and
        trigger_at both before `claimed_before`. At most `limit`, oldest updated_at
        first. (False, []) when `epoch` is stale. Reads only; the owner decides which
        of them it is really not acting on, and recovers those through record_outcomes
        (dispatched) or unclaim (claimed)."""

    def unclaim(self, task_ids: Sequence[str], slot: int, epoch: int, now: dt.datetime) -> bool:
        """Claimed rows of `slot` among `task_ids` go back to pending (trigger_at kept),
        for the poller to claim again; other rows are untouched. False when `epoch` is
        stale (nothing written). No event is written."""

    # ---- Kafka progress (fenced) ----

    def load_offsets(self, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """{(topic, partition): next offset to read} for the pairs that have a committed
        offset; pairs never committed are absent. Not fenced."""

    def commit_offsets(self, commits: Sequence[tuple[str, int, int]], epochs: dict[int, int],
                       now: dt.datetime) -> set[int]:
        """Store (topic, partition = slot, next_offset) under each slot's epoch; returns
        the stale slots, whose commits were refused (the others are stored).
        The offset given replaces the stored one (the caller commits only its
        low watermark, which does not move backwards within an epoch)."""

    def server_time_ms(self) -> int:
        """The store's own clock, unix epoch milliseconds: the time every node follows."""

    # ---- observation (the admin view) ----

    def pending_by_slot(self, slots: Iterable[int] | None = None) -> dict[int, int]:
        """{slot: rows not yet dispatched (pending, enqueued or claimed)}, zeros included,
        for exactly the given slots, or for every slot with an ownership record when
        None (rows of a slot without a record are then not counted)."""

    def task_types_by_slot(self) -> dict[int, list[str]]:
        """{slot: sorted ["namespace/task_type", ...]} of every type ever inserted."""

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        """Every committed {(topic, partition): next_offset}."""
