"""What happens to the tasks that depend on others, inside one transaction on their shard
(store/graphs.py says when it runs and why once is enough): count their parents' ends on
their edges, then release, skip or cancel each one still waiting whose join rule decides.
A parent's end changed other than by a first end (an operator's skip, a replay) is recounted
(`reopen`): the dependents it skipped come back to waiting when their rule can be met again.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

from dispatcher.store import fenced
from dispatcher.store import records as r
from dispatcher.store.graph_notes import note_ends, note_reopened
from dispatcher.store.graph_rules import (
    Counts,
    EdgeOutcome,
    JoinRule,
    OnFailure,
    Verdict,
    effective,
    evaluate,
    skip_reason,
)
from dispatcher.store.interface_graphs import Released, Settled
from dispatcher.store.sql_literals import names
from taskring.task import TaskState

_COUNT_COLUMNS = ("n_succeeded", "n_failed", "n_skipped", "n_ignored", "n_cancelled")
_VERDICT_STATUS = {Verdict.SKIP: r.SKIPPED, Verdict.CANCEL: r.CANCELLED}
_VERDICT_STATE = {Verdict.SKIP: TaskState.SKIPPED, Verdict.CANCEL: TaskState.CANCELLED}


@dataclasses.dataclass(slots=True)
class Child:
    """A dependent's graph row, locked."""

    task_id: str
    slot: int
    rule: JoinRule
    k: int
    delay_ms: int
    has_dependents: bool
    counts: Counts
    cancelled_graph: bool
    operator_skipped: bool


def lock(cur, child_ids: list[str]) -> dict[str, Child]:
    """Lock the children's graph rows, in task-id order: one lock order for every applier, so
    two never deadlock. Their task rows are locked after, and only those that change
    (`decide`): a fan-in's child is counted by many applies and changes at one."""
    ids = sorted(set(child_ids))
    cur.execute("SELECT task_id, slot, join_rule, join_k, delay_ms, has_dependents, n_parents,"
                f" {', '.join(_COUNT_COLUMNS)}, cancel_mode, operator_skipped FROM graph_nodes"
                f" WHERE task_id IN ({names(ids)}) ORDER BY task_id FOR UPDATE")
    return {row[0]: Child(row[0], row[1], JoinRule(row[2]), int(row[3]), int(row[4]), bool(row[5]),
                          Counts(row[6], *row[7:12]), row[12] is not None, bool(row[13]))
            for row in cur.fetchall()}


def count_ends(cur, children: dict[str, Child], ended: Mapping[str, str], now: dt.datetime) -> None:
    """Count each ended parent (task id -> its effective status) on the children's edges still
    unresolved: the edge's outcome and the child's counts change together, once."""
    if not ended or not children:
        return
    cur.execute(f"SELECT child_id, parent_id, on_failure FROM graph_edges WHERE child_id IN ({names(children)})"
                f" AND parent_id IN ({names(ended)}) AND outcome IS NULL FOR UPDATE")
    resolved = []
    for child, parent, on_failure in cur.fetchall():
        outcome = effective(ended[parent], OnFailure(on_failure))
        if outcome is not None:
            children[child].counts.add(outcome)
            resolved.append((outcome.value, now, child, parent))
    if resolved:
        _set_edges(cur, resolved)
        _store_counts(cur, children, {child for _, _, child, _ in resolved})


def recount(cur, children: dict[str, Child], parents: Mapping[str, str | None], now: dt.datetime) -> None:
    """The parents' ends changed (task id -> effective status, None: not ended any more): set
    their edges to what they count now, and every child's counts again from all its edges."""
    if not children:
        return
    cur.execute(f"SELECT child_id, parent_id, on_failure, outcome FROM graph_edges WHERE child_id IN"
                f" ({names(children)}) AND parent_id IN ({names(parents)}) FOR UPDATE")
    changed = []
    for child, parent, on_failure, outcome in cur.fetchall():
        status = parents[parent]
        now_counts = effective(status, OnFailure(on_failure)) if status is not None else None
        if (now_counts.value if now_counts else None) != outcome:
            changed.append((now_counts.value if now_counts else None, now if now_counts else None, child, parent))
    if changed:
        _set_edges(cur, changed)
    cur.execute(f"SELECT child_id, outcome FROM graph_edges WHERE child_id IN ({names(children)})")
    fresh = {tid: Counts(c.counts.parents) for tid, c in children.items()}
    for child, outcome in cur.fetchall():
        if outcome is not None:
            fresh[child].add(EdgeOutcome(outcome))
    for tid, counts in fresh.items():
        children[tid].counts = counts
    _store_counts(cur, children, set(children))


def reopen(cur, children: dict[str, Child], why: str, node: str,
           now: dt.datetime) -> tuple[tuple[int, str], ...]:
    """The children skipped by their rule whose rule can be met again go back to waiting
    (`decide` then releases the due ones); returns (slot, task_id) of those with dependents,
    each of which left a note to recount them in turn."""
    rows = fenced.lock_states(cur, sorted(children))
    back = [c for tid, c in children.items()
            if tid in rows and rows[tid].status == r.SKIPPED and not c.operator_skipped and not c.cancelled_graph
            and evaluate(c.rule, c.k, c.counts) in (Verdict.WAIT, Verdict.DUE)]
    if not back:
        return ()
    ids = [c.task_id for c in back]
    cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE task_id IN ({names(ids)}) AND status = %s",
                (r.WAITING, now, r.SKIPPED))
    cur.execute(f"UPDATE graph_nodes SET released_at = NULL, reason = NULL WHERE task_id IN ({names(ids)})")
    fenced.append_events(cur, [r.Event(tid, TaskState.WAITING, now, node, 0, f"re-opened: {why}") for tid in ids])
    again = tuple((c.slot, c.task_id) for c in back if c.has_dependents)
    note_reopened(cur, list(again), now)
    return again


def decide(cur, children: dict[str, Child], route_threshold_ms: int, node: str, now: dt.datetime) -> Settled:
    """Release, skip or cancel each child still waiting whose rule decides (a child of a
    cancelled graph is cancelled, never released)."""
    verdicts = {tid: v for tid, c in children.items() if (v := evaluate(c.rule, c.k, c.counts)) is not Verdict.WAIT}
    rows = fenced.lock_states(cur, sorted(verdicts)) if verdicts else {}
    if verdicts:
        now = _now_under_locks(cur, now)
    due: list[Child] = []
    ends: dict[Verdict, list[tuple[Child, str]]] = {Verdict.SKIP: [], Verdict.CANCEL: []}
    for tid, verdict in verdicts.items():
        c = children[tid]
        if tid not in rows or rows[tid].status != r.WAITING:
            continue
        if c.cancelled_graph:
            ends[Verdict.CANCEL].append((c, "its graph was cancelled"))
        elif verdict is Verdict.DUE:
            due.append(c)
        else:
            ends[verdict].append((c, skip_reason(c.rule, c.k, c.counts) if verdict is Verdict.SKIP
                                  else "a task it depends on was cancelled"))
    released = _release(cur, due, route_threshold_ms, node, now)
    for end, group in ends.items():
        if not group:
            continue
        ids = [c.task_id for c, _ in group]
        cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE task_id IN ({names(ids)}) AND status = %s",
                    (_VERDICT_STATUS[end], now, r.WAITING))
        by_reason: dict[str, list[str]] = {}
        for c, reason in group:
            by_reason.setdefault(reason[:512], []).append(c.task_id)
        for reason, same in by_reason.items():
            cur.execute(f"UPDATE graph_nodes SET released_at = %s, reason = %s WHERE task_id IN ({names(same)})",
                        (now, reason))
        fenced.append_events(cur, [r.Event(c.task_id, _VERDICT_STATE[end], now, node, 0, reason)
                                   for c, reason in group])
        note_ends(cur, [(c.slot, c.task_id) for c, _ in group if c.has_dependents], now)
    return Settled(released, len(ends[Verdict.SKIP]), len(ends[Verdict.CANCEL]),
                   tuple((c.slot, c.task_id) for group in ends.values() for c, _ in group if c.has_dependents))


def _now_under_locks(cur, now: dt.datetime) -> dt.datetime:
    """When the verdicts take effect: not before the store's clock now, under the children's
    locks. The caller's `now` was read before the apply waited for them, and an end that another
    applier counted meanwhile (committed, so seen here) may have been recorded after it: the
    release must not be stamped before the end that allowed it."""
    cur.execute("SELECT NOW(3)")
    return max(now, cur.fetchone()[0])


def _release(cur, due: list[Child], route_threshold_ms: int, node: str, now: dt.datetime) -> tuple[Released, ...]:
    """Waiting -> queued: on the Kafka path when its own delay is within the route threshold
    (the caller produces its message), else on the MySQL path."""
    if not due:
        return ()
    moves = [(c.task_id, r.ENQUEUED if c.delay_ms <= route_threshold_ms else r.PENDING,
              now + dt.timedelta(milliseconds=c.delay_ms)) for c in due]
    # One statement per (path, due time): a fan-out's children, released together, share both.
    by_move: dict[tuple[r.Status, dt.datetime], list[str]] = {}
    for tid, path, due_at in moves:
        by_move.setdefault((path, due_at), []).append(tid)
    for (path, due_at), same in by_move.items():
        cur.execute(f"UPDATE tasks SET status = %s, trigger_at = %s, updated_at = %s WHERE task_id IN ({names(same)})"
                    " AND status = %s", (path, due_at, now, r.WAITING))
    ids = [c.task_id for c in due]
    cur.execute(f"UPDATE graph_nodes SET released_at = %s WHERE task_id IN ({names(ids)})", (now,))
    fenced.append_events(cur, [r.Event(tid, TaskState.QUEUED, now, node, 0,
                                       "kafka" if status == r.ENQUEUED else "mysql") for tid, status, _ in moves])
    cur.execute(f"SELECT task_id, slot, priority, envelope FROM tasks WHERE task_id IN ({names(ids)})")
    found = {row[0]: row for row in cur.fetchall()}
    return tuple(Released(tid, found[tid][1], found[tid][2], status, at, found[tid][3]) for tid, status, at in moves)


def _store_counts(cur, children: dict[str, Child], ids: set[str]) -> None:
    """The children's counts, one statement per distinct set of counts (a fan-out's children
    all count the same one parent): row-by-row statements were most of an apply's cost."""
    by_counts: dict[tuple[int, ...], list[str]] = {}
    for tid in sorted(ids):
        c = children[tid].counts
        by_counts.setdefault((c.succeeded, c.failed, c.skipped, c.ignored, c.cancelled), []).append(tid)
    sets = ", ".join(c + " = %s" for c in _COUNT_COLUMNS)
    for values, same in by_counts.items():
        cur.execute(f"UPDATE graph_nodes SET {sets} WHERE task_id IN ({names(same)})", values)


def _set_edges(cur, rows: Sequence[tuple[str | None, dt.datetime | None, str, str]]) -> None:
    """(outcome, resolved_at, child, parent) edges, in few statements that each name one side
    of the key: a fan-out's edges share their parent, a fan-in's their child. (A list of
    (child, parent) pairs cost MariaDB 90 ms a statement: it does not seek a row-constructor
    list by the primary key.)"""
    groups: dict[tuple[str | None, dt.datetime | None], list[tuple[str, str]]] = {}
    for outcome, at, child, parent in rows:
        groups.setdefault((outcome, at), []).append((child, parent))
    for (outcome, at), pairs in groups.items():
        by_parent: dict[str, list[str]] = {}
        by_child: dict[str, list[str]] = {}
        for child, parent in pairs:
            by_parent.setdefault(parent, []).append(child)
            by_child.setdefault(child, []).append(parent)
        fixed, column, other = ((by_parent, "parent_id", "child_id") if len(by_parent) <= len(by_child)
                                else (by_child, "child_id", "parent_id"))
        for key, keys in fixed.items():
            for i in range(0, len(keys), 1000):
                cur.execute(f"UPDATE graph_edges SET outcome = %s, resolved_at = %s WHERE {column} = %s"
                            f" AND {other} IN ({names(keys[i:i + 1000])})", (outcome, at, key))
