"""The notes a task of a graph leaves when it ends (graph_outbox, migrations/016_graphs.sql):
written inside the transaction of the end by whichever write ends it, so the note exists iff
the end does (store/graphs.py says how they are applied)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dispatcher.store import fenced
from dispatcher.store import records as r
from taskring.task import TaskState

TASK_NOTE, GRAPH_NOTE, REOPEN_NOTE = "task", "graph", "reopen"


def note_ends(cur, ended: Sequence[tuple[int, str]], now: dt.datetime) -> None:
    """The notes of tasks that ended and have dependents ((slot, task_id)), written by the
    caller inside the transaction of their ends."""
    if ended:
        cur.executemany("INSERT INTO graph_outbox (slot, kind, ref, created_at) VALUES (%s, %s, %s, %s)",
                        [(slot, TASK_NOTE, task_id, now) for slot, task_id in ended])


def note_end_if_graph(cur, task_id: str, now: dt.datetime) -> None:
    """A note for a task that ended off the engine's path (a cancel), if it is a task of a
    graph with dependents; nothing for any other task."""
    cur.execute("INSERT INTO graph_outbox (slot, kind, ref, created_at) SELECT slot, %s, task_id, %s"
                " FROM graph_nodes WHERE task_id = %s AND has_dependents = 1", (TASK_NOTE, now, task_id))


def graph_cancels(cur, retries: Sequence[r.OutcomeWrite], now: dt.datetime) -> set[str]:
    """Of these failed attempts of tasks of graphs, those whose graph was cancelled: cancelled
    now instead of retried (a graceful cancel lets a running task finish, and nothing new
    start). Inside the outcome's transaction, after the attempt's events; returns their ids."""
    if not retries:
        return set()
    by_id = {w.task_id: w for w in retries}
    marks = ",".join(["%s"] * len(by_id))
    cur.execute(f"SELECT task_id FROM graph_nodes WHERE task_id IN ({marks}) AND cancel_mode IS NOT NULL",
                list(by_id))
    stopped = {row[0] for row in cur.fetchall()}
    if stopped:
        cur.executemany("UPDATE tasks SET status = %s, last_error = %s, updated_at = %s WHERE task_id = %s",
                        [(r.CANCELLED, by_id[t].error, now, t) for t in sorted(stopped)])
        fenced.append_events(cur, [r.Event(t, TaskState.CANCELLED, now, by_id[t].events[-1].node, by_id[t].attempt,
                                           "its graph was cancelled: not retried") for t in sorted(stopped)])
    return stopped


def note_reopened(cur, tasks: Sequence[tuple[int, str]], now: dt.datetime) -> None:
    """Notes of tasks whose end changed other than by a first end ((slot, task_id)): their
    dependents' edges are counted again (graph_settle.recount)."""
    if tasks:
        cur.executemany("INSERT INTO graph_outbox (slot, kind, ref, created_at) VALUES (%s, %s, %s, %s)",
                        [(slot, REOPEN_NOTE, task_id, now) for slot, task_id in tasks])


def note_reopen_if_graph(cur, task_id: str, now: dt.datetime) -> None:
    """A replayed dead letter that is a task of a graph with dependents: they count it again
    (it has not ended any more); nothing for any other task."""
    cur.execute("INSERT INTO graph_outbox (slot, kind, ref, created_at) SELECT slot, %s, task_id, %s"
                " FROM graph_nodes WHERE task_id = %s AND has_dependents = 1", (REOPEN_NOTE, now, task_id))
