"""The writes of an attempt's life, the hot path's transactions: start the dispatch of a
batch, record a batch's outcomes, give back what was not delivered. Each is one fenced,
conditional transition (store/fenced.py) run by TaskStore inside its transaction; a task
that is not where the write expects it (cancelled, finished, moved on) is left alone, so a
duplicate delivery or outcome is harmless.

The happy path keeps a task's events in the row's own columns (dispatched_at/_by,
started_at, finished_by, updated_at) instead of task_events rows: one UPDATE per batch and
node instead of three INSERTs per task. Everything else goes to task_events.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dispatcher.store import dead_lettering, fenced
from dispatcher.store import records as r
from dispatcher.store.graph_notes import graph_cancels, note_ends
from dispatcher.store.sql_literals import CASE_ROWS, case_times, marks, names
from taskring.task import TaskState


def happy_success(w: r.OutcomeWrite) -> tuple[dt.datetime | None, dt.datetime, str] | None:
    """(started_at, succeeded_at, node) when the write is a success whose events the
    row's columns can hold (an optional "running", then "succeeded", of this attempt,
    by one node, without details); None otherwise (its events go to task_events)."""
    if w.result != r.SUCCEEDED or not w.events or len(w.events) > 2:
        return None
    *running, done = w.events
    if done.state != TaskState.SUCCEEDED or any(e.detail is not None or e.attempt != w.attempt for e in w.events):
        return None
    if running and (running[0].state != TaskState.RUNNING or running[0].node != done.node):
        return None
    return (running[0].at if running else None), done.at, done.node


def _first_of_each(items: Sequence) -> list:
    """The items in order, a task listed twice counted once, at its first place."""
    return list({i.task_id: i for i in reversed(items)}.values())[::-1]


def _expected_rows(cur, items: Sequence, expected) -> tuple[dict, list]:
    """(the locked rows, the items whose row is where `expected(item)` = (status,
    attempts) says): the opening of every attempt write off the happy path."""
    if not items:
        return {}, []
    rows = fenced.lock_states(cur, [i.task_id for i in items])
    return rows, [i for i in items if i.task_id in rows and rows[i.task_id].expects(*expected(i))]


_WANT = {"kafka": r.ENQUEUED, "mysql": r.CLAIMED}
"""The status a row has while the attempt about to be dispatched waits on each path."""


def begin_dispatch(cur, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                   now: dt.datetime) -> tuple[set[str], set[int]]:
    """Move eligible tasks to dispatched; returns (dispatched task ids, stale slots).

    Eligible: the row still expects this attempt on this path. A cancelled,
    finished or already re-routed task is skipped, so duplicates are harmless.
    """
    firsts = _first_of_each(claims)
    if firsts and all(c.attempt == 1 for c in firsts):
        if _first_attempts(cur, firsts, epochs, node, now):
            return {c.task_id for c in firsts}, set()
        # Some row was not where its claim expects (a duplicate, a cancel, a stale
        # slot, an insert not yet committed): undo, and find out which, row by row,
        # below, under the locks that wait for such an insert.
        cur.connection.rollback()
    stale = fenced.stale_slots(cur, {c.slot: epochs[c.slot] for c in claims})
    live = [c for c in claims if c.slot not in stale]
    if not live:
        return set(), stale
    # A task claimed twice (its row swept to the MySQL path while its message was on the
    # way: one claim per path) is dispatched by the first claim its row expects.
    rows, expected = _expected_rows(cur, live, lambda c: (_WANT[c.source], c.attempt - 1))
    ok = _first_of_each(expected)
    if ok:
        # Every way out of dispatched moves its event to task_events; this only
        # guards the columns of the attempt about to be overwritten.
        fenced.move_dispatch_to_events(cur, [c.task_id for c in ok], rows)
        # One statement per epoch (a handful), not per task: every eligible row
        # has attempts = attempt - 1, so attempts + 1 is the attempt being made.
        by_epoch: dict[int, list[str]] = {}
        for c in ok:
            by_epoch.setdefault(epochs[c.slot], []).append(c.task_id)
        for epoch, ids_ in by_epoch.items():
            # The dispatched event is the row's dispatched_at/_by columns.
            cur.execute(f"UPDATE tasks SET status = %s, attempts = attempts + 1, epoch = %s, updated_at = %s,"
                        f" dispatched_at = %s, dispatched_by = %s WHERE task_id IN ({names(ids_)})",
                        [r.DISPATCHED, epoch, now, now, node])
        # retry_wait -> queued happened when the retry fell due (off the happy path).
        fenced.append_events(cur, [r.Event(c.task_id, TaskState.QUEUED, min(c.due_at, now), node, c.attempt)
                                  for c in ok if c.attempt > 1])
    return {c.task_id for c in ok}, stale


def _first_attempts(cur, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                    now: dt.datetime) -> bool:
    """The happy path of begin_dispatch: first attempts, each written by a conditional
    UPDATE that checks the slots' epochs itself (fenced.epochs_hold), with no read
    before it. True when every claim's row was where it expects and every slot's
    epoch held (then each is dispatched, under the epochs' shared locks); False when
    any was not, and the caller rolls these writes back. A row at attempts 0 was
    never dispatched, so its columns hold no dispatched event to save."""
    groups: dict[str, list[str]] = {}
    for c in claims:
        groups.setdefault(_WANT[c.source], []).append(c.task_id)
    held = {c.slot: epochs[c.slot] for c in claims}
    fence = fenced.epochs_hold(held)
    epoch = fenced.epoch_of_slot(held)   # each row's epoch is its slot's, the one the fence checks
    for status, ids_ in groups.items():
        moved = cur.execute(f"UPDATE tasks SET status = %s, attempts = 1, epoch = {epoch}, updated_at = %s,"
                            f" dispatched_at = %s, dispatched_by = %s"
                            f" WHERE task_id IN ({names(ids_)}) AND status = %s AND attempts = 0 AND {fence}",
                            [r.DISPATCHED, now, now, node, status])
        if moved != len(ids_):
            return False
    return True


def record_outcomes(cur, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int],
                    now: dt.datetime) -> set[int]:
    """Record finished attempts; returns the stale slots whose writes were refused."""
    firsts = _first_of_each(writes)
    happy = {w.task_id: h for w in firsts if (h := happy_success(w)) is not None}
    ends = [w for w in firsts if w.notify]   # ends, and retries that `continue` edges wait for
    if firsts and len(happy) == len(firsts):
        # The usual batch: successes only, each statement checking the slots' epochs
        # itself. Every row written: no slot was stale. Otherwise the way below finds
        # out which slots were, and writes the others' rows (those written here are
        # succeeded now, and its conditional writes leave them alone).
        if _record_happy(cur, happy, {w.task_id: w.attempt for w in firsts},
                         {w.slot: epochs[w.slot] for w in firsts}) == len(happy):
            note_ends(cur, [(w.slot, w.task_id) for w in ends], now)
            _keep_results(cur, ends)
            return set()
    stale = fenced.stale_slots(cur, {w.slot: epochs[w.slot] for w in writes})
    live = _first_of_each([w for w in writes if w.slot not in stale])
    if not live:
        return stale
    happy = {w.task_id: h for w in live if (h := happy_success(w)) is not None}
    _record_happy(cur, happy, {w.task_id: w.attempt for w in live})
    # Off the happy path: the rows are read under lock first, since the events written
    # depend on them; the attempt's dispatched event joins the others in task_events.
    rows, others = _expected_rows(cur, [w for w in live if w.task_id not in happy],
                                  lambda w: (r.DISPATCHED, w.attempt))
    fenced.move_dispatch_to_events(cur, [w.task_id for w in others], rows)
    fenced.append_events(cur, [e for w in others for e in w.events])
    done = [w.task_id for w in others if w.result == r.SUCCEEDED]
    retry = [w for w in others if w.result == r.RETRY]
    dead = [w for w in others if w.result == r.DEAD_LETTERED]
    stopped = graph_cancels(cur, [w for w in retry if w.in_graph], now)
    if stopped:   # their graph was cancelled: no retry (graph_notes.py)
        retry = [w for w in retry if w.task_id not in stopped]
    if done:
        cur.execute("UPDATE tasks SET status = %s, updated_at = %s"
                    f" WHERE task_id IN ({marks(len(done))})", [r.SUCCEEDED, now, *done])
    if retry:
        cur.executemany("UPDATE tasks SET status = %s, trigger_at = %s, last_error = %s,"
                        " last_stack_trace = %s, updated_at = %s WHERE task_id = %s",
                        [(w.retry_status, w.retry_at, w.error, w.stack_trace, now, w.task_id) for w in retry])
    if dead:
        cur.executemany("UPDATE tasks SET status = %s, last_error = %s, last_stack_trace = %s,"
                        " updated_at = %s WHERE task_id = %s",
                        [(r.DEAD_LETTERED, w.error, w.stack_trace, now, w.task_id) for w in dead])
        dead_lettering.enter(cur, dead, now)
    # A note for each end this write made (a happy success is one unless its row had moved
    # on; a note for a task that did not end is read and dropped by its applier).
    written = set(happy) | {w.task_id for w in others}
    note_ends(cur, [(w.slot, w.task_id) for w in ends if w.task_id in written], now)
    _keep_results(cur, [w for w in ends if w.task_id in written])
    return stale


def _keep_results(cur, ends: Sequence[r.OutcomeWrite]) -> None:
    """The results of the successes among `ends`, for their dependents, with the outcome."""
    kept = [(w.result_json, w.task_id) for w in ends if w.result_json and w.result == r.SUCCEEDED]
    if kept:
        cur.executemany("UPDATE graph_nodes SET result_json = %s WHERE task_id = %s", kept)


def _record_happy(cur, happy: dict[str, tuple[dt.datetime | None, dt.datetime, str]],
                  attempt_of: dict[str, int], epochs: dict[int, int] | None = None) -> int:
    """Successes whose running and succeeded events become the row's started_at,
    finished_by and updated_at: conditional UPDATEs with no read before them (a row
    no longer dispatched at that attempt is left alone, and these write no event, so
    nothing depends on which rows matched). With `epochs`, each statement also checks
    the slots' epochs (fenced.epochs_hold), for a caller that has not. Returns how
    many rows were written."""
    groups: dict[tuple[str, int], list[str]] = {}
    for task_id, (_, _, node) in happy.items():
        groups.setdefault((node, attempt_of[task_id]), []).append(task_id)
    fence = "" if epochs is None else f" AND {fenced.epochs_hold(epochs)}"
    written = 0
    for (node, attempt), all_ids in groups.items():
        # A CASE is searched row by row, so a statement takes at most CASE_ROWS rows
        # (measured: 1,000 rows in one cost the server half as much again as 100 at a time).
        for i in range(0, len(all_ids), CASE_ROWS):
            ids_ = all_ids[i:i + CASE_ROWS]
            started = case_times("started_at", [(tid, happy[tid][0]) for tid in ids_])
            finished = case_times("updated_at", [(tid, happy[tid][1]) for tid in ids_])
            written += cur.execute(f"UPDATE tasks SET status = %s, finished_by = %s, {started}, {finished}"
                                   f" WHERE task_id IN ({names(ids_)}) AND status = %s AND attempts = %s{fence}",
                                   [r.SUCCEEDED, node, r.DISPATCHED, attempt])
    return written


def return_undelivered(cur, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                       now: dt.datetime) -> set[int]:
    stale = fenced.stale_slots(cur, {c.slot: epochs[c.slot] for c in claims})
    live = _first_of_each([c for c in claims if c.slot not in stale])
    rows, back = _expected_rows(cur, live, lambda c: (r.DISPATCHED, c.attempt))
    if back:
        fenced.move_dispatch_to_events(cur, [c.task_id for c in back], rows)
        cur.executemany("UPDATE tasks SET status = %s, attempts = attempts - 1, trigger_at = %s,"
                        " updated_at = %s WHERE task_id = %s",
                        [(r.PENDING, c.due_at, now, c.task_id) for c in back])
        unspent = "not run: the session lease ran out; attempt not spent"
        fenced.append_events(cur, [r.Event(c.task_id, TaskState.QUEUED, now, node, c.attempt, unspent)
                                  for c in back])
    return stale
