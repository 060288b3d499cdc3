"""Tasks added to a graph by one of its running tasks (AddGraphTasks; docs/graphs.md, "Adding
tasks while it runs"), on MariaDB: a part of GraphStore (store/graphs.py), kept apart for its size.

Why it needs no transaction across shards: every added task waits for its adder (an edge from
the adder, on_failure skip), so nothing added can run before the adder has ended and that end
was counted, which is after every write below. The writes go in an order whose every prefix is
safe, and each is idempotent, so a call cut short by a crash is completed by the adder's next
attempt adding the same keys:

1. the adder is checked running its attempt, under its row's lock; the graph not cancelled;
2. each shard's new tasks, `waiting`, with their edges (rows already there are left alone);
3. each also_before task, under its rows' locks: still `waiting`, it gets an edge from each new
   task and as many more parents; a task that waits for more parents can only wait longer, so
   no rule it was about to meet is met by this (graph_rules.evaluate);
4. the adder marked as having dependents (a cancel of it leaves a note), the graph's count.

The adder's end leaves a note because its outcome says it added tasks (Outcome.added_graph_tasks);
an end counted before step 2 (an attempt given up meanwhile) is counted again by the graph watch.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dispatcher.store import fenced
from dispatcher.store import records as r
from dispatcher.store.errors import AdderNotRunning, GraphCancelled, NotWaiting
from dispatcher.store.graph_rules import OnFailure
from dispatcher.store.interface_graphs import AddedTasks, NewNode
from dispatcher.store.shards import Shards


def add_tasks(shards: Shards, index_of_shard: Callable[[Sequence[Any], Callable[[Any], int]], dict[int, list[Any]]],
              insert_nodes: Callable[[Any, str, Sequence[NewNode], str], None], namespace: str, graph_id: str,
              adder: tuple[str, int, int], nodes: Sequence[NewNode], targets: Sequence[tuple[int, str, str, int]],
              node: str) -> AddedTasks:
    """`adder` is (task id, slot, attempt); `targets` (index in also_before, key, task id, slot)."""
    adder_id, adder_slot, attempt = adder
    adder_shard = shards.of_slot(adder_slot)

    def check(cur) -> None:
        cur.execute("SELECT cancel_mode FROM graph_nodes WHERE task_id = %s", (adder_id,))
        row = cur.fetchone()
        if row is not None and row[0] is not None:
            raise GraphCancelled(namespace, graph_id)
        state = fenced.lock_states(cur, [adder_id]).get(adder_id)
        if state is None or state.status != r.DISPATCHED or state.attempts != attempt:
            raise AdderNotRunning(adder_id, attempt, str(state.status) if state else "gone",
                                  state.attempts if state else 0)
    adder_shard.run(check)
    ids = [n.task.task_id for n in nodes]
    before = _existing(shards, ids)
    for index, group in sorted(index_of_shard(nodes, lambda n: n.task.slot).items()):
        shards.all[index].run(lambda cur, group=group: insert_nodes(cur, graph_id, group, node))
    fresh = [n for n in nodes if n.task.task_id not in before]
    for index, group in sorted(index_of_shard(targets, lambda t: t[3]).items()):
        shards.all[index].run(lambda cur, group=group: _wait_also(cur, group, nodes))

    def mark(cur) -> None:
        cur.execute("UPDATE graph_nodes SET has_dependents = 1 WHERE task_id = %s", (adder_id,))
    adder_shard.run(mark)
    if fresh:
        def count(cur) -> None:
            cur.execute("UPDATE graphs SET node_count = node_count + %s, finished_at = NULL"
                        " WHERE namespace = %s AND graph_id = %s", (len(fresh), namespace, graph_id))
        for shard in shards.all:   # the graph's row is on its home shard, which the caller need not know
            shard.run(count)
    return AddedTasks(added=len(fresh), existed=len(nodes) - len(fresh))


def _existing(shards: Shards, ids: list[str]) -> set[str]:
    found: set[str] = set()
    marks = ",".join(["%s"] * len(ids))
    for shard in shards.all:
        def body(cur) -> set[str]:
            cur.execute(f"SELECT task_id FROM graph_nodes WHERE task_id IN ({marks})", ids)
            return {row[0] for row in cur.fetchall()}
        found |= shard.run(body)
    return found


def _wait_also(cur, targets: Sequence[tuple[int, str, str, int]], nodes: Sequence[NewNode]) -> None:
    """Each target ((index in also_before, key, task id, slot)), locked and still waiting, waits for
    every new task too: the edges not there yet, and as many more parents."""
    ids = sorted(tid for _, _, tid, _ in targets)
    cur.execute(f"SELECT task_id FROM graph_nodes WHERE task_id IN ({','.join(['%s'] * len(ids))})"
                " ORDER BY task_id FOR UPDATE", ids)
    states = fenced.lock_states(cur, ids)
    for i, key, tid, _ in targets:
        state = states.get(tid)
        if state is None or state.status != r.WAITING:
            raise NotWaiting(f"also_before[{i}]", key, str(state.status) if state else "gone")
    for _, _, tid, _ in targets:
        cur.execute("INSERT IGNORE INTO graph_edges (child_id, parent_id, parent_key, on_failure) VALUES "
                    + ",".join(["(%s, %s, %s, %s)"] * len(nodes)),
                    [x for n in nodes for x in (tid, n.task.task_id, n.key, OnFailure.SKIP.value)])
        if cur.rowcount:
            cur.execute("UPDATE graph_nodes SET n_parents = n_parents + %s WHERE task_id = %s", (cur.rowcount, tid))
