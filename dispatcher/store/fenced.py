"""The statements every fenced write of the store is made of (store/mysql.py explains the
fencing): check the slots' epochs under a shared lock, lock the task rows a conditional
transition reads, move an attempt's "dispatched" event off the row, append events. Shared
by the task store, the attempt writes, cron and the operators' dead-letter actions, each of
which runs them inside its own transaction (`cur`).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple

from dispatcher.store import records as r
from dispatcher.store.sql_literals import marks, names
from taskring.task import TaskState


class Locked(NamedTuple):
    """A task row as a conditional transition sees it under its lock."""

    status: str
    attempts: int
    dispatched_at: dt.datetime | None
    dispatched_by: str | None

    def expects(self, status: str, attempts: int) -> bool:
        return self.status == status and self.attempts == attempts


def lock_states(cur, task_ids: Sequence[str]) -> dict[str, Locked]:
    """Lock the tasks' rows and return what every conditional transition checks
    before it writes (status, attempts), with the current attempt's dispatch."""
    cur.execute("SELECT task_id, status, attempts, dispatched_at, dispatched_by FROM tasks"
                f" WHERE task_id IN ({names(task_ids)}) FOR UPDATE")
    return {row[0]: Locked(*row[1:]) for row in cur.fetchall()}

def move_dispatch_to_events(cur, task_ids: Sequence[str], rows: dict[str, Locked]) -> None:
    """The attempt of these rows ends off the happy path: its "dispatched" event
    leaves the row's columns for task_events, before the events that follow it."""
    events = [r.Event(tid, TaskState.DISPATCHED, at, rows[tid].dispatched_by or "", rows[tid].attempts)
              for tid in task_ids if (at := rows[tid].dispatched_at) is not None]
    if not events:
        return
    moving = [e.task_id for e in events]
    append_events(cur, events)
    cur.execute(f"UPDATE tasks SET dispatched_at = NULL, dispatched_by = NULL WHERE task_id IN ({names(moving)})")

def stale_slots(cur, epochs: dict[int, int]) -> set[int]:
    """Lock the slots' ownership rows (shared) and return those whose epoch moved on."""
    if not epochs:
        return set()
    slots = sorted(epochs)
    cur.execute(f"SELECT slot, epoch FROM slot_owners WHERE slot IN ({marks(len(slots))}) LOCK IN SHARE MODE",
                slots)
    current = dict(cur.fetchall())
    return {s for s in slots if current.get(s) != epochs[s]}


def epochs_hold(epochs: dict[int, int]) -> str:
    """A condition for a conditional write's WHERE: every slot's epoch is still the one
    given. It lets the write check the fence itself instead of after stale_slots' read,
    a round trip less: the subquery reads the slots' rows under a shared lock, as
    stale_slots does, so a claim that bumps an epoch waits for this transaction, and one
    already committed makes the write match nothing (for every slot: the caller then
    asks stale_slots which). Uncorrelated, it runs once per statement, not per row (a
    join to slot_owners, per row, cost the server 5-7 µs a row more)."""
    slots = sorted(epochs)
    return (f"(SELECT COUNT(*) FROM slot_owners WHERE slot IN ({','.join(str(int(s)) for s in slots)})"
            f" AND epoch = {epoch_of_slot(epochs)} LOCK IN SHARE MODE) = {len(slots)}")


def epoch_of_slot(epochs: dict[int, int]) -> str:
    """`CASE slot WHEN 3 THEN 17 ... END`: each slot's epoch, as an expression on a row's slot."""
    return "CASE slot " + " ".join(f"WHEN {int(s)} THEN {int(e)}" for s, e in sorted(epochs.items())) + " END"


def append_events(cur, events: Sequence[r.Event]) -> None:
    if events:
        cur.executemany("INSERT INTO task_events (task_id, state, at, node, attempt, detail, stack_trace)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [(e.task_id, e.state, e.at, e.node, e.attempt, e.detail, e.stack_trace) for e in events])
