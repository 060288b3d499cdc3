"""MemoryTaskStore: the task store's contract (interface.py) kept in memory, for
unit tests of logic (the engine, the API, ownership). It passes the same
conformance suite as TaskStore (tests/conformance/).

One lock guards everything, and every method does its fencing check and its
writes under it, which is what the real store gets from a transaction that
reads the slot's epoch under a shared lock. Rows are copied in and out, so a
caller never holds a live reference. Times are truncated to milliseconds, as
DATETIME(3) does in MariaDB.

It is also the twins' database: the tables the MariaDB store keeps beside the tasks
(dead letters and their groups' counts, cron rules, the audit trail, bulk replay jobs)
are here, and the twins of those stores (memory_cron.py, memory_dead_letters.py,
memory_ops.py) work on them under the same lock, as their MariaDB versions share a
transaction with the task rows.

Beyond the contract, for tests: `dead_letters()` (the dead letters table),
`dead_letter_rows()` (its columns), `events()`, `rows()`, and `fail(method, ...)`, which
makes the next calls of a method raise (Unavailable by default) without writing anything
(`failures_left`).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Container, Iterable, Sequence
from typing import overload

from cluster.interface import LOST, RENEWED, WANTED, SlotLeased
from dispatcher.base.errors import TaskAlreadyFinished, TaskIdTaken, TaskNotFound, Unavailable
from dispatcher.base.failures import classify
from dispatcher.store import records as r
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_cron import StoredRule
from dispatcher.store.interface_dead_letters import FailureGroup
from dispatcher.store.interface_replays import Job
from dispatcher.store.interface_stats import StatsRow
from taskring.task import TaskState


@dataclasses.dataclass(frozen=True)
class DeadEntry:
    """A row of the dead letters table: the entry, and the envelope and stack trace it keeps."""

    letter: r.DeadLetter
    envelope: bytes
    last_stack_trace: str | None


@overload
def _ms(value: dt.datetime) -> dt.datetime: ...
@overload
def _ms(value: None) -> None: ...
def _ms(value: dt.datetime | None) -> dt.datetime | None:
    """DATETIME(3): naive, milliseconds, truncated."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


class MemoryTaskStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, r.TaskRow] = {}
        # task_id -> (epoch of the claim, dispatched at, attempt): attempts a claim took back from
        # dispatched (attempts_in_doubt); MariaDB keeps the row's dispatched_at for this.
        self._in_doubt: dict[str, tuple[int, dt.datetime, int]] = {}
        self._heartbeat_details: dict[str, str] = {}   # MariaDB: the row's heartbeat_details
        self._wait_notes: dict[str, tuple[int, str]] = {}   # MariaDB: the row's wait_attempt, wait_reason
        self._events: dict[str, list[r.Event]] = {}
        self._dead: dict[str, DeadEntry] = {}
        self._groups: dict[tuple[str, str, str], FailureGroup] = {}
        """(namespace, task_type, error_group) -> its running count: dead_letter_groups."""
        self._traces: dict[str, str] = {}
        """task_id -> trace_id, for the tasks submitted with one."""
        self._rules: dict[tuple[str, str], StoredRule] = {}
        self._audit: list[AuditRecord] = []
        self._policies: dict[tuple[str, str], tuple[object, bool]] = {}
        """(namespace, task_type) -> (StoredPolicy, deleted): memory_policies.py."""
        self._jobs: dict[int, Job] = {}
        self._task_stats: dict[tuple[dt.datetime, str, str, str], StatsRow] = {}
        self._owners: dict[int, tuple[int, str]] = {}
        self._leases: dict[int, tuple[str, int, dt.datetime, str]] = {}   # slot -> (owner, epoch, until, wanted_by)
        self._types: set[tuple[int, str, str]] = set()
        self._keys: dict[tuple[str, str], tuple[str, dt.datetime | None]] = {}
        """(namespace, unique_key) -> (holder task id, held_until): the unique_keys table."""
        self._offsets: dict[tuple[str, int], int] = {}
        self._failures: dict[str, list[BaseException]] = {}

    # ---- test hooks ----

    def fail(self, method: str, times: int = 1, exc: BaseException | None = None) -> None:
        """Make the next `times` calls of `method` raise `exc` (Unavailable by default)
        before touching anything."""
        if not callable(getattr(self, method, None)):
            raise AttributeError(f"MemoryTaskStore has no method {method!r}")
        with self._lock:
            self._failures.setdefault(method, []).extend(
                [exc or Unavailable(f"memory store: {method} made to fail")] * times)

    def failures_left(self, method: str) -> int:
        """How many of the failures `fail` queued for `method` are still to come."""
        with self._lock:
            return len(self._failures.get(method, ()))

    def _maybe_fail(self, method: str) -> None:
        queued = self._failures.get(method)
        if queued:
            raise queued.pop(0)

    def dead_letters(self) -> dict[str, r.DeadLetter]:
        with self._lock:
            return {task_id: entry.letter for task_id, entry in self._dead.items()}

    def dead_letter_rows(self) -> dict[str, dict]:
        """The dead letters table as {task_id: {column: value}}."""
        with self._lock:
            return {task_id: {**dataclasses.asdict(e.letter), "envelope": e.envelope,
                              "last_stack_trace": e.last_stack_trace} for task_id, e in self._dead.items()}

    def histories(self) -> dict[str, list[r.Event]]:
        """Every task's history (a twin's window for tests: the lifecycle check)."""
        with self._lock:
            return {task_id: list(events) for task_id, events in self._events.items()}

    def events(self, task_id: str) -> list[r.Event]:
        with self._lock:
            return list(self._events.get(task_id, ()))

    def rows(self) -> dict[str, r.TaskRow]:
        with self._lock:
            return dict(self._rows)

    # ---- lifecycle ----

    def start(self) -> None:
        with self._lock:
            self._maybe_fail("start")

    def stop(self) -> None:
        pass

    # ---- fencing ----

    def _stale(self, epochs: dict[int, int]) -> set[int]:
        return {s for s, e in epochs.items() if s not in self._owners or self._owners[s][0] != e}

    def _update(self, task_id: str, **changes) -> None:
        self._rows[task_id] = dataclasses.replace(self._rows[task_id], **changes)

    def _append(self, events: Iterable[r.Event]) -> None:
        for e in events:
            self._events.setdefault(e.task_id, []).append(dataclasses.replace(e, at=_ms(e.at)))

    def ensure_slots(self, slot_count: int) -> None:
        with self._lock:
            self._maybe_fail("ensure_slots")
            for s in range(slot_count):
                self._owners.setdefault(s, (0, ""))

    def claim_slot(self, slot: int, node: str, now: dt.datetime, lease_ms: int = 0) -> int:
        with self._lock:
            self._maybe_fail("claim_slot")
            now_ms = _ms(now)
            holder, holder_epoch, until, _wanted = self._leases.get(slot, ("", 0, now_ms, ""))
            if holder not in ("", node) and until > now_ms:
                self._leases[slot] = (holder, holder_epoch, until, node)
                raise SlotLeased(slot, holder, -(-(until - now_ms) // dt.timedelta(milliseconds=1)))
            previous_epoch, previous_owner = self._owners.get(slot, (0, ""))
            epoch = previous_epoch + 1
            self._owners[slot] = (epoch, node)
            self._leases[slot] = (node, epoch, now_ms + dt.timedelta(milliseconds=lease_ms), "")
            reset = (r.CLAIMED, r.DISPATCHED) + ((r.ENQUEUED,) if previous_owner else ())
            for row in list(self._rows.values()):
                if row.slot == slot and row.status in reset:
                    doubt = self._in_doubt.get(row.task_id)
                    if row.status == r.DISPATCHED:   # its handler may still run: MariaDB keeps dispatched_at
                        self._in_doubt[row.task_id] = (epoch, row.updated_at, row.attempts)
                    elif doubt is not None and doubt[2] == row.attempts:   # still not dispatched again
                        self._in_doubt[row.task_id] = (epoch, doubt[1], doubt[2])
                    self._update(row.task_id, status=r.PENDING, epoch=epoch, updated_at=now_ms)
            return epoch

    def attempts_in_doubt(self, slot: int, epoch: int, now: dt.datetime) -> list[r.InDoubt]:
        with self._lock:
            self._maybe_fail("attempts_in_doubt")
            out = []
            for task_id, (at_epoch, dispatched_at, attempts) in self._in_doubt.items():
                row = self._rows.get(task_id)
                if row is not None and row.slot == slot and at_epoch == epoch and row.epoch == epoch \
                        and row.status == r.PENDING and row.attempts == attempts and row.trigger_at <= now:
                    out.append(r.InDoubt(task_id, row.namespace, row.task_type, attempts, dispatched_at,
                                         row.envelope))
            return out

    def release_slot(self, slot: int, epoch: int, now: dt.datetime) -> bool:
        with self._lock:
            self._maybe_fail("release_slot")
            if self._stale({slot: epoch}):
                return False
            now_ms = _ms(now)
            for row in list(self._rows.values()):
                if row.slot == slot and row.status == r.CLAIMED:
                    self._update(row.task_id, status=r.PENDING, updated_at=now_ms)
            self._owners[slot] = (epoch, "")
            self._leases.pop(slot, None)
            return True

    def renew_leases(self, node: str, epochs: dict[int, int], lease_ms: int, now: dt.datetime) -> dict[int, str]:
        with self._lock:
            self._maybe_fail("renew_leases")
            until = _ms(now) + dt.timedelta(milliseconds=lease_ms)
            out: dict[int, str] = {}
            for slot, epoch in epochs.items():
                holder, holder_epoch, _until, wanted = self._leases.get(slot, ("", 0, until, ""))
                if (holder, holder_epoch) != (node, epoch):
                    out[slot] = LOST
                    continue
                self._leases[slot] = (node, epoch, until, wanted)
                out[slot] = WANTED if wanted else RENEWED
            return out

    def slot_owners(self) -> dict[int, tuple[int, str]]:
        with self._lock:
            self._maybe_fail("slot_owners")
            return dict(self._owners)

    # ---- the API's writes ----

    def insert_tasks(self, tasks: Sequence[r.NewTask], node: str) -> dict[str, r.Status | r.Held]:
        with self._lock:
            self._maybe_fail("insert_tasks")
            self._check_ids(tasks)
            existing: dict[str, r.Status | r.Held] = {
                t.task_id: self._rows[t.task_id].status for t in tasks if t.task_id in self._rows}
            fresh = list({t.task_id: t for t in reversed(tasks) if t.task_id not in existing}.values())[::-1]
            existing.update(self._hold_keys([t for t in fresh if t.unique_key]))
            self._insert_rows([t for t in fresh if t.task_id not in existing], node)  # others: key held
            return existing

    def _insert_rows(self, fresh: Iterable[r.NewTask], node: str) -> None:
        """New rows (ids that do not exist), with their accepted and queued events."""
        for t in fresh:
            created = _ms(t.created_at)
            self._rows[t.task_id] = r.TaskRow(
                task_id=t.task_id, slot=t.slot, namespace=t.namespace, task_type=t.task_type,
                priority=t.priority, status=t.status, trigger_at=_ms(t.trigger_at), attempts=0, epoch=0,
                envelope=bytes(t.envelope), last_error=None, last_stack_trace=None, created_at=created,
                updated_at=created)
            self._append([r.Event(t.task_id, TaskState.ACCEPTED, created, node, 0),
                          r.Event(t.task_id, TaskState.QUEUED, created, node, 0,
                                  "kafka" if t.status == r.ENQUEUED else "mysql")])
            self._types.add((t.slot, t.namespace, t.task_type))
            if t.trace_id:
                self._traces[t.task_id] = t.trace_id

    def _check_ids(self, tasks: Sequence[r.NewTask]) -> None:
        """TaskIdTaken, before anything is written, for an id that is a task of another namespace."""
        for t in {t.task_id: t for t in reversed(tasks)}.values():  # each id's first occurrence
            row = self._rows.get(t.task_id)
            if row is not None and row.namespace != t.namespace:
                raise TaskIdTaken(t.task_id)

    def take_key(self, task: r.NewTask) -> r.Held | None:
        with self._lock:
            return self._hold_keys([task]).get(task.task_id)

    def _hold_keys(self, keyed: list[r.NewTask]) -> dict[str, r.Held]:
        """The twin of store/unique_keys.py hold_keys: take each key for its first task, or hold it."""
        held: dict[str, r.Held] = {}
        first: dict[tuple[str, str], r.NewTask] = {}
        for t in keyed:
            key = (t.namespace, t.unique_key)
            candidate = first.setdefault(key, t)
            if candidate is not t:
                held[t.task_id] = held.get(candidate.task_id) or r.Held(candidate.task_id, candidate.status,
                                                                        candidate.slot)
                continue
            holder = self._keys.get(key)
            if holder is not None and holder[0] != t.task_id:   # a key of its own is simply kept
                holder_id, until = holder
                row = self._rows.get(holder_id)
                status = row.status if row is not None else None
                if r.key_holds(until, status, _ms(t.created_at)):
                    assert row is not None
                    held[t.task_id] = r.Held(holder_id, row.status, row.slot)
                    continue
            self._keys[key] = (t.task_id, None if t.unique_until is None else _ms(t.unique_until))
        return held

    def reroute_to_mysql(self, task_ids: Sequence[str], now: dt.datetime) -> int:
        with self._lock:
            self._maybe_fail("reroute_to_mysql")
            moved = 0
            for tid in dict.fromkeys(task_ids):
                row = self._rows.get(tid)
                if row is not None and row.status == r.ENQUEUED:
                    self._update(tid, status=r.PENDING, updated_at=_ms(now))
                    moved += 1
            return moved

    def server_time_ms(self) -> int:
        """The twin's clock is this machine's."""
        return int(time.time() * 1000)

    def get_task(self, task_id: str) -> tuple[r.TaskRow, list[r.Event]]:
        with self._lock:
            self._maybe_fail("get_task")
            row = self._rows.get(task_id)
            if row is None:
                raise TaskNotFound(task_id)
            return row, list(self._events.get(task_id, ()))

    def cancel(self, task_id: str, node: str, now: dt.datetime,
               heartbeat_types: Container[tuple[str, str]] = ()) -> None:
        with self._lock:
            self._maybe_fail("cancel")
            row = self._rows.get(task_id)
            if row is None:
                raise TaskNotFound(task_id)
            running_ok = row.status == r.DISPATCHED and (row.namespace, row.task_type) in heartbeat_types
            if row.status not in r.CANCELLABLE and not running_ok:
                raise TaskAlreadyFinished(task_id, TaskState.RUNNING if row.status == r.DISPATCHED else row.status)
            now = _ms(now)
            self._update(task_id, status=r.CANCELLED, updated_at=now)
            self._append([r.Event(task_id, TaskState.CANCELLED, now, node, row.attempts, "cancelled by request")])

    def record_heartbeats(self, beats: Sequence[r.HeartbeatWrite], now: dt.datetime) -> list[r.HeartbeatResult]:
        with self._lock:
            self._maybe_fail("record_heartbeats")
            stale = self._stale({b.slot: b.epoch for b in beats})
            results = []
            for b in beats:
                row = self._rows.get(b.task_id)
                if row is not None and row.status == r.CANCELLED:
                    results.append(r.HeartbeatResult.CANCELLED)
                elif row is not None and b.slot not in stale \
                        and (row.status, row.attempts, row.epoch) == (r.DISPATCHED, b.attempt, b.epoch):
                    results.append(r.HeartbeatResult.RECORDED)
                    if b.details is not None:
                        self._heartbeat_details[b.task_id] = b.details
                else:
                    results.append(r.HeartbeatResult.LOST)
            return results

    def heartbeat_details(self, task_ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            return {tid: self._heartbeat_details[tid] for tid in task_ids if tid in self._heartbeat_details}

    def note_waiting(self, notes: Sequence[r.WaitNote]) -> None:
        with self._lock:
            self._maybe_fail("note_waiting")
            for n in notes:
                row = self._rows.get(n.task_id)
                if row is not None and row.status in r.NOT_HANDED_OUT:
                    self._wait_notes[n.task_id] = (n.attempt, n.reason[:200])

    def wait_note(self, task_id: str) -> tuple[int, str] | None:
        with self._lock:
            return self._wait_notes.get(task_id)

    # ---- the owner's writes (fenced) ----

    def claim_due(self, slot: int, epoch: int, until: dt.datetime, limit: int,
                  now: dt.datetime) -> tuple[bool, list[r.TaskRow]]:
        with self._lock:
            self._maybe_fail("claim_due")
            if self._stale({slot: epoch}):
                return False, []
            until, now = _ms(until), _ms(now)
            due = sorted((row for row in self._rows.values()
                          if row.slot == slot and row.status == r.PENDING and row.trigger_at <= until),
                         key=lambda row: (row.trigger_at, row.task_id))[:max(limit, 0)]
            for row in due:
                self._update(row.task_id, status=r.CLAIMED, epoch=epoch, updated_at=now)
            return True, [self._rows[row.task_id] for row in due]

    def sweep_enqueued(self, slot: int, epoch: int, older_than: dt.datetime, limit: int,
                       now: dt.datetime) -> int:
        with self._lock:
            self._maybe_fail("sweep_enqueued")
            if self._stale({slot: epoch}):
                return 0
            older_than, now = _ms(older_than), _ms(now)
            overdue = sorted((row for row in self._rows.values()
                              if row.slot == slot and row.status == r.ENQUEUED and row.trigger_at < older_than),
                             key=lambda row: (row.trigger_at, row.task_id))[:max(limit, 0)]
            for row in overdue:
                self._update(row.task_id, status=r.PENDING, updated_at=now)
            return len(overdue)

    def begin_dispatch(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                       now: dt.datetime) -> tuple[set[str], set[int]]:
        with self._lock:
            self._maybe_fail("begin_dispatch")
            stale = self._stale({c.slot: epochs[c.slot] for c in claims})
            want = {"kafka": r.ENQUEUED, "mysql": r.CLAIMED}
            now = _ms(now)
            dispatched: set[str] = set()
            for c in claims:
                if c.slot in stale:
                    continue
                row = self._rows.get(c.task_id)
                if row is None or row.status != want[c.source] or row.attempts != c.attempt - 1:
                    continue  # also a second claim of a task this call already dispatched
                self._update(c.task_id, status=r.DISPATCHED, attempts=c.attempt, epoch=epochs[c.slot],
                             updated_at=now)
                if c.attempt > 1:  # retry_wait -> queued happened when the retry fell due
                    self._append([r.Event(c.task_id, TaskState.QUEUED, min(_ms(c.due_at), now), node, c.attempt)])
                self._append([r.Event(c.task_id, TaskState.DISPATCHED, now, node, c.attempt)])
                dispatched.add(c.task_id)
            return dispatched, stale

    def return_undelivered(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                           now: dt.datetime) -> set[int]:
        with self._lock:
            self._maybe_fail("return_undelivered")
            stale = self._stale({c.slot: epochs[c.slot] for c in claims})
            now = _ms(now)
            for c in claims:
                row = self._rows.get(c.task_id)
                if c.slot in stale or row is None or (row.status, row.attempts) != (r.DISPATCHED, c.attempt):
                    continue
                self._update(c.task_id, status=r.PENDING, attempts=c.attempt - 1, trigger_at=_ms(c.due_at),
                             updated_at=now)
                self._append([r.Event(c.task_id, TaskState.QUEUED, now, node, c.attempt,
                                      "not run: the session lease ran out; attempt not spent")])
            return stale

    def stranded(self, slot: int, epoch: int, dispatched_before: dt.datetime, claimed_before: dt.datetime,
                 limit: int) -> tuple[bool, list[r.TaskRow]]:
        with self._lock:
            self._maybe_fail("stranded")
            if self._stale({slot: epoch}):
                return False, []
            dispatched_before, claimed_before = _ms(dispatched_before), _ms(claimed_before)
            rows = [row for row in self._rows.values() if row.slot == slot and (
                (row.status == r.DISPATCHED and row.updated_at < dispatched_before)
                or (row.status == r.CLAIMED and row.trigger_at < claimed_before and row.updated_at < claimed_before))]
            return True, sorted(rows, key=lambda row: (row.updated_at, row.task_id))[:max(limit, 0)]

    def unclaim(self, task_ids: Sequence[str], slot: int, epoch: int, now: dt.datetime) -> bool:
        with self._lock:
            self._maybe_fail("unclaim")
            if self._stale({slot: epoch}):
                return False
            for tid in task_ids:
                row = self._rows.get(tid)
                if row is not None and row.slot == slot and row.status == r.CLAIMED:
                    self._update(tid, status=r.PENDING, updated_at=_ms(now))
            return True

    def record_outcomes(self, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int],
                        now: dt.datetime) -> set[int]:
        with self._lock:
            self._maybe_fail("record_outcomes")
            stale = self._stale({w.slot: epochs[w.slot] for w in writes})
            now = _ms(now)
            # Eligibility is decided on the rows as they were before this call, as the
            # real store does with one SELECT ... FOR UPDATE.
            before = {w.task_id: self._rows.get(w.task_id) for w in writes}
            for w in writes:
                row = before[w.task_id]
                if w.slot in stale or row is None or (row.status, row.attempts) != (r.DISPATCHED, w.attempt):
                    continue
                if w.result == r.SUCCEEDED:
                    self._update(w.task_id, status=r.SUCCEEDED, updated_at=now)
                elif w.result == r.RETRY:
                    self._update(w.task_id, status=w.retry_status, trigger_at=_ms(w.retry_at), last_error=w.error,
                                 last_stack_trace=w.stack_trace, updated_at=now)
                elif w.result == r.DEAD_LETTERED:
                    self._update(w.task_id, status=r.DEAD_LETTERED, last_error=w.error,
                                 last_stack_trace=w.stack_trace, updated_at=now)
                    if w.task_id not in self._dead:
                        self._enter_dead_letter(self._rows[w.task_id], now)
                else:
                    raise ValueError(f"OutcomeWrite.result: unknown {w.result!r} for task {w.task_id!r}")
                self._append(w.events)
            return stale

    def _enter_dead_letter(self, t: r.TaskRow, now: dt.datetime) -> None:
        """The twin of store/dead_lettering.py enter: the entry, classified, and its group's count."""
        first = min((e.at for e in self._events.get(t.task_id, ()) if e.state == TaskState.DISPATCHED), default=None)
        failure = classify(t.last_error, "failure")
        self._dead[t.task_id] = DeadEntry(r.DeadLetter(
            task_id=t.task_id, slot=t.slot, namespace=t.namespace, task_type=t.task_type, attempts=t.attempts,
            last_error=t.last_error, error_class=failure.error_class, error_shape=failure.shape,
            error_group=failure.group, first_attempt_at=first, dead_lettered_at=now), t.envelope, t.last_stack_trace)
        key = (t.namespace, t.task_type, failure.group)
        seen = self._groups.get(key)
        self._groups[key] = dataclasses.replace(
            seen, count=seen.count + 1, last_at=max(seen.last_at, now), sample_task_id=t.task_id,
            sample_error=t.last_error or "") if seen is not None else FailureGroup(
            *key, failure.error_class, failure.shape, 1, now, now, t.task_id, t.last_error or "")

    # ---- Kafka progress (fenced) ----

    def load_offsets(self, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        with self._lock:
            self._maybe_fail("load_offsets")
            return {p: self._offsets[p] for p in pairs if p in self._offsets}

    def commit_offsets(self, commits: Sequence[tuple[str, int, int]], epochs: dict[int, int],
                       now: dt.datetime) -> set[int]:
        with self._lock:
            self._maybe_fail("commit_offsets")
            stale = self._stale({p: epochs[p] for _, p, _ in commits})
            for topic, partition, offset in commits:
                if partition not in stale:
                    self._offsets[(topic, partition)] = offset
            return stale

    # ---- observation ----

    def pending_by_slot(self, slots: Iterable[int] | None = None) -> dict[int, int]:
        with self._lock:
            out = dict.fromkeys(self._owners if slots is None else slots, 0)
            for row in self._rows.values():
                if row.slot in out and row.status in (r.PENDING, r.ENQUEUED, r.CLAIMED):
                    out[row.slot] += 1
            return out

    def task_types_by_slot(self) -> dict[int, list[str]]:
        with self._lock:
            out: dict[int, list[str]] = {}
            for slot, ns, tt in sorted(self._types):
                out.setdefault(slot, []).append(f"{ns}/{tt}")
            return out

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        with self._lock:
            return dict(self._offsets)
