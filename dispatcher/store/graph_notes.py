"""The notes a task of a graph leaves when it ends (graph_outbox, migrations/016_graphs.sql):
written inside the transaction of the end by whichever write ends it, so the note exists iff
the end does (store/graphs.py says how they are applied)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

TASK_NOTE, GRAPH_NOTE = "task", "graph"


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
