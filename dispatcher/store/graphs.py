"""Graphs on MariaDB (migrations/016_graphs.sql): the contract is interface_graphs.py's.

How a dependency is released exactly once, whatever crashes (docs/design/dependencies.md 3.3):

- Every end of a task that has dependents writes a note into `graph_outbox` in the
  transaction of that end, on its own shard (attempt_writes.record_outcomes, TaskStore.cancel,
  and `_settle` below for a dependent it skips or cancels). So the note exists iff the end
  does.
- Applying a note (`apply_ends`) reads the parent's row for how it ended, finds its
  dependents' unresolved edges on every shard, and settles each dependent in one
  transaction on the dependent's shard: under the lock of its rows, an edge still
  unresolved is counted (its `outcome` set and the dependent's counts moved in the same
  transaction), the join rule is evaluated (graph_rules.py), and a dependent still
  `waiting` is released, skipped or cancelled. A repeated note finds the edge counted and
  the dependent no longer waiting: nothing happens twice. Any node may apply any note.
- Notes are deleted after they were applied; the owner of the note's slot applies what a
  crash left behind (engine/graph_relay.py).

A graph is inserted `waiting` whole (one transaction per shard) before any task runs: its
row on the home shard is marked complete, with a "graph" note, only once every shard's rows
are committed, and only a complete graph's roots are released. A retried SubmitGraph
completes a graph an earlier call left incomplete.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Container, Iterable, Sequence
from typing import TypeVar

from dispatcher.base.errors import TaskIdTaken, TaskNotFound
from dispatcher.store import audit, dead_lettering, fenced, graph_adds
from dispatcher.store import graph_settle as settle
from dispatcher.store import records as r
from dispatcher.store.errors import GraphExists, GraphNotFound, NotSkippable
from dispatcher.store.graph_notes import GRAPH_NOTE, TASK_NOTE, note_reopened
from dispatcher.store.graph_rules import FAILED_ATTEMPT, JoinRule, OnFailure
from dispatcher.store.graph_watch_queries import WatchQueries
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_graphs import (
    AddedTasks,
    EdgeView,
    GraphView,
    NewGraph,
    NewNode,
    NodeView,
    Note,
    ParentEnd,
    Settled,
)
from dispatcher.store.mysql import TaskStore
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import marks, names
from taskring.task import TaskState

T = TypeVar("T")
_OPEN = tuple(str(s) for s in (r.WAITING, r.PENDING, r.ENQUEUED, r.CLAIMED, r.DISPATCHED))


class GraphStore(WatchQueries):
    """GraphStoreProtocol over the task store's shards."""

    def __init__(self, shards: Shards, route_threshold_ms: int):
        self._shards = shards
        self._route_threshold_ms = route_threshold_ms
        self._index = {id(s): i for i, s in enumerate(shards.all)}

    def _by_shard(self, items: Iterable[T], slot: Callable[[T], int]) -> dict[int, list[T]]:
        groups: dict[int, list[T]] = {}
        for item in items:
            groups.setdefault(self._index[id(self._shards.of_slot(slot(item)))], []).append(item)
        return groups

    # ---- insert ----

    def insert_graph(self, graph: NewGraph, node: str, now: dt.datetime) -> bool:
        home = self._shards.of_slot(graph.home_slot)

        def open_graph(cur) -> bool | None:
            cur.execute("SELECT digest, complete FROM graphs WHERE namespace = %s AND graph_id = %s FOR UPDATE",
                        (graph.namespace, graph.graph_id))
            row = cur.fetchone()
            if row is None:
                cur.execute("INSERT INTO graphs (namespace, graph_id, home_slot, digest, node_count, complete,"
                            " created_at) VALUES (%s, %s, %s, %s, %s, 0, %s)",
                            (graph.namespace, graph.graph_id, graph.home_slot, graph.digest, len(graph.nodes),
                             graph.created_at))
                return None
            if row[0] != graph.digest:
                raise GraphExists(graph.namespace, graph.graph_id)
            return bool(row[1])
        complete = home.run(open_graph)
        if complete:
            return False
        for index, nodes in sorted(self._by_shard(graph.nodes, lambda n: n.task.slot).items()):
            self._shards.all[index].run(lambda cur, nodes=nodes: _insert_nodes(cur, graph.graph_id, nodes, node))

        def close_graph(cur) -> None:
            cur.execute("UPDATE graphs SET complete = 1 WHERE namespace = %s AND graph_id = %s AND complete = 0",
                        (graph.namespace, graph.graph_id))
            if cur.rowcount:
                cur.execute("INSERT INTO graph_outbox (slot, kind, ref, created_at) VALUES (%s, %s, %s, %s)",
                            (graph.home_slot, GRAPH_NOTE, f"{graph.namespace}/{graph.graph_id}", now))
        home.run(close_graph)
        return True

    def add_tasks(self, namespace: str, graph_id: str, adder: tuple[str, int, int], nodes: Sequence[NewNode],
                  targets: Sequence[tuple[int, str, str, int]], node: str) -> AddedTasks:
        return graph_adds.add_tasks(self._shards, self._by_shard, _insert_nodes, namespace, graph_id, adder,
                                    nodes, targets, node)

    # ---- release ----

    def release_roots(self, namespace: str, graph_id: str, node: str, now: dt.datetime) -> Settled:
        def is_complete(cur) -> bool:
            cur.execute("SELECT complete FROM graphs WHERE namespace = %s AND graph_id = %s", (namespace, graph_id))
            row = cur.fetchone()
            return bool(row and row[0])
        # The graph's row lives on its home shard, which the caller's slot names; any shard
        # is asked here since a note's reader knows the home slot and an API caller may not.
        if not any(shard.run(is_complete) for shard in self._shards.all):
            return Settled()
        out: list[Settled] = []
        for shard in self._shards.all:
            def body(cur) -> Settled:
                cur.execute("SELECT task_id FROM graph_nodes WHERE namespace = %s AND graph_id = %s"
                            " AND n_parents = 0 AND released_at IS NULL", (namespace, graph_id))
                roots = [row[0] for row in cur.fetchall()]
                return self._settle(cur, roots, {}, node, now) if roots else Settled()
            out.append(shard.run(body))
        return _merge(out)

    def apply_ends(self, parent_ids: list[str], node: str, now: dt.datetime) -> Settled:
        if not parent_ids:
            return Settled()
        ended: dict[str, str] = {}
        for shard in self._shards.all:   # a task's shard is its slot's, which the id alone does not say
            ended.update({tid: status for tid, status in shard.run(
                lambda cur: _effective_statuses(cur, parent_ids)).items()
                if status in r.TERMINAL or status == FAILED_ATTEMPT})
        if not ended:
            return Settled()
        out: list[Settled] = []
        for shard in self._shards.all:
            def body(cur) -> Settled:
                cur.execute(f"SELECT DISTINCT child_id FROM graph_edges WHERE parent_id IN ({names(ended)})"
                            " AND outcome IS NULL")
                children = [row[0] for row in cur.fetchall()]
                return self._settle(cur, children, ended, node, now) if children else Settled()
            out.append(shard.run(body))
        return _merge(out)

    def apply_reopened(self, parent_ids: list[str], why: str, node: str, now: dt.datetime) -> Settled:
        if not parent_ids:
            return Settled()
        parents: dict[str, str | None] = {tid: None for tid in parent_ids}
        for shard in self._shards.all:
            parents.update({tid: (status if status in r.TERMINAL or status == FAILED_ATTEMPT else None)
                            for tid, status in shard.run(
                lambda cur: _effective_statuses(cur, parent_ids)).items()})
        out: list[Settled] = []
        for shard in self._shards.all:
            def body(cur) -> Settled:
                cur.execute(f"SELECT DISTINCT child_id FROM graph_edges WHERE parent_id IN ({names(parents)})")
                found = [row[0] for row in cur.fetchall()]
                if not found:
                    return Settled()
                children = settle.lock(cur, found)
                settle.recount(cur, children, parents, now)
                again = settle.reopen(cur, children, why, node, now)
                return dataclasses.replace(settle.decide(cur, children, self._route_threshold_ms, node, now),
                                           reopened=again)
            out.append(shard.run(body))
        return _merge(out)

    def _settle(self, cur, child_ids: list[str], ended: dict[str, str], node: str, now: dt.datetime) -> Settled:
        """Count the ended parents on these children's unresolved edges and decide each child
        still waiting, in the caller's transaction on the children's shard."""
        children = settle.lock(cur, child_ids)
        settle.count_ends(cur, children, ended, now)
        return settle.decide(cur, children, self._route_threshold_ms, node, now)

    # ---- cancel ----

    def cancel_graph(self, namespace: str, graph_id: str, mode: str, heartbeat_types: Container[tuple[str, str]],
                     reason: str, node: str, now: dt.datetime) -> tuple[int, list[str]]:
        """Cancel every task of the graph that has not ended; returns (how many were cancelled,
        the keys of the running ones left to finish). Every shard's tasks are marked first, so
        that none is released by a parent ending meanwhile (`_settle` reads the mark under the
        task's lock) and a running one's failure is not retried (graph_notes.graph_cancels);
        then each shard's are cancelled. Running ones are cancelled too under `immediate`
        when their type heartbeats (the handler hears it at its next heartbeat)."""
        marked = 0
        for shard in self._shards.all:
            marked += shard.run(lambda cur: cur.execute(
                "UPDATE graph_nodes SET cancel_mode = %s WHERE namespace = %s AND graph_id = %s"
                " AND cancel_mode IS NULL", (mode, namespace, graph_id)))
        cancelled, running = 0, []
        for shard in self._shards.all:
            def body(cur) -> tuple[int, list[str]]:
                cur.execute("SELECT n.task_id, n.node_key, t.namespace, t.task_type FROM graph_nodes n JOIN tasks t"
                            " ON t.task_id = n.task_id WHERE n.namespace = %s AND n.graph_id = %s"
                            f" AND t.status IN ({marks(len(_OPEN))}) ORDER BY n.task_id",
                            (namespace, graph_id, *_OPEN))
                found = {tid: (key, (ns, task_type)) for tid, key, ns, task_type in cur.fetchall()}
                if not found:
                    return 0, []
                rows = fenced.lock_states(cur, sorted(found))
                stop, left = [], []
                for tid, row in rows.items():
                    if row.status in r.CANCELLABLE:
                        stop.append(tid)
                    elif row.status == r.DISPATCHED:
                        if mode == "immediate" and found[tid][1] in heartbeat_types:
                            stop.append(tid)
                        else:
                            left.append(found[tid][0])
                running_now = [tid for tid in stop if rows[tid].status == r.DISPATCHED]
                fenced.move_dispatch_to_events(cur, running_now, rows)
                if stop:
                    cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE task_id IN ({names(stop)})",
                                (r.CANCELLED, now))
                    cur.execute(f"UPDATE graph_nodes SET released_at = COALESCE(released_at, %s), reason = %s"
                                f" WHERE task_id IN ({names(stop)})", (now, f"graph cancelled: {reason}"[:512]))
                    fenced.append_events(cur, [r.Event(tid, TaskState.CANCELLED, now, node, rows[tid].attempts,
                                                       f"graph cancelled ({mode}): {reason}") for tid in stop])
                return len(stop), left
            n, left = shard.run(body)
            cancelled += n
            running += left
        if not marked and not cancelled and not running:
            self.graph(namespace, graph_id)   # GraphNotFound for a graph that does not exist
        return cancelled, sorted(running)

    # ---- an operator's skip ----

    def skip_task(self, task_id: str, reason: str, record: Callable[[str], AuditRecord], node: str,
                  now: dt.datetime) -> tuple[int, str]:
        """Mark a dead-lettered (or waiting) task of a graph skipped by an operator: it counts
        as succeeded for what depends on it, which a "reopen" note lets go on. With its event
        and the audit record `record(status before)`, in one transaction; returns (its slot,
        its status before). NotSkippable for a task in another state, TaskNotFound for none."""
        for shard in self._shards.all:
            def body(cur) -> tuple[int, str] | None:
                cur.execute("SELECT n.slot, n.has_dependents, t.namespace, t.task_type FROM graph_nodes n JOIN tasks t"
                            " ON t.task_id = n.task_id WHERE n.task_id = %s FOR UPDATE", (task_id,))
                found = cur.fetchone()
                if found is None:
                    return None
                slot, has_dependents, namespace, task_type = found
                rows = fenced.lock_states(cur, [task_id])
                before = rows[task_id].status
                if before not in (r.DEAD_LETTERED, r.WAITING):
                    raise NotSkippable(task_id, before)
                if before == r.DEAD_LETTERED:
                    cur.execute("SELECT error_group FROM dead_letters WHERE task_id = %s FOR UPDATE", (task_id,))
                    listed = cur.fetchone()
                    if listed is not None:
                        cur.execute("DELETE FROM dead_letters WHERE task_id = %s", (task_id,))
                        dead_lettering.leave(cur, namespace, task_type, listed[0])
                cur.execute("UPDATE tasks SET status = %s, updated_at = %s WHERE task_id = %s",
                            (r.SKIPPED, now, task_id))
                cur.execute("UPDATE graph_nodes SET operator_skipped = 1, released_at = COALESCE(released_at, %s),"
                            " reason = %s WHERE task_id = %s",
                            (now, f"skipped by an operator: {reason}"[:512], task_id))
                fenced.append_events(cur, [r.Event(task_id, TaskState.SKIPPED, now, node, rows[task_id].attempts,
                                                   f"skipped by an operator: {reason}")])
                if has_dependents:
                    note_reopened(cur, [(slot, task_id)], now)
                audit.append(cur, record(str(before)))
                return slot, str(before)
            done = shard.run(body)
            if done is not None:
                return done
        raise TaskNotFound(task_id)

    # ---- the outbox ----

    def notes(self, slots: list[int], older_than: dt.datetime, limit: int) -> list[Note]:
        out: list[Note] = []
        for index, group in self._by_shard(slots, lambda s: s).items():
            def body(cur, group=group) -> list[Note]:
                cur.execute(f"SELECT id, slot, kind, ref FROM graph_outbox WHERE slot IN ({marks(len(group))})"
                            " AND created_at < %s ORDER BY id LIMIT %s", [*group, older_than, limit])
                return [Note(*row) for row in cur.fetchall()]
            out += self._shards.all[index].run(body)
        return out

    def delete_notes(self, notes: list[Note]) -> None:
        for index, group in self._by_shard(notes, lambda n: n.slot).items():
            ids = [n.id for n in group]
            self._shards.all[index].run(
                lambda cur, ids=ids: cur.execute(f"DELETE FROM graph_outbox WHERE id IN ({marks(len(ids))})", ids))

    def forget_ends(self, ended: list[tuple[int, str]], written_before: dt.datetime, kind: str = TASK_NOTE) -> None:
        """Delete the notes of these ends ((slot, task_id)) once applied: those written up to
        `written_before` (a later end of the same task, after a replay, keeps its own)."""
        for index, group in self._by_shard(ended, lambda e: e[0]).items():
            ids = [tid for _, tid in group]
            self._shards.all[index].run(lambda cur, ids=ids: cur.execute(
                f"DELETE FROM graph_outbox WHERE kind = %s AND ref IN ({names(ids)}) AND created_at <= %s",
                (kind, written_before)))

    def forget_graph(self, home_slot: int, namespace: str, graph_id: str) -> None:
        """Delete a graph's "graph" note once its roots were released."""
        self._shards.of_slot(home_slot).run(lambda cur: cur.execute(
            "DELETE FROM graph_outbox WHERE slot = %s AND kind = %s AND ref = %s",
            (home_slot, GRAPH_NOTE, f"{namespace}/{graph_id}")))

    # ---- reads ----

    def parent_ends(self, child_ids: list[str]) -> dict[str, list[ParentEnd]]:
        if not child_ids:
            return {}
        edges: list[tuple[str, str, str, str | None]] = []
        for shard in self._shards.all:   # a task's edges are on its own shard
            def body(cur) -> list:
                cur.execute("SELECT child_id, parent_key, parent_id, outcome FROM graph_edges"
                            f" WHERE child_id IN ({names(child_ids)})")
                return list(cur.fetchall())
            edges += shard.run(body)
        parents = sorted({parent for _, _, parent, _ in edges})
        found: dict[str, tuple[str | None, str | None]] = {}
        for shard in self._shards.all:
            def ends(cur) -> list:
                cur.execute("SELECT n.task_id, n.result_json, t.last_error FROM graph_nodes n JOIN tasks t"
                            f" ON t.task_id = n.task_id WHERE n.task_id IN ({names(parents)})")
                return list(cur.fetchall())
            found.update((tid, (result, error)) for tid, result, error in shard.run(ends))
        out: dict[str, list[ParentEnd]] = {}
        for child, key, parent, outcome in sorted(edges, key=lambda e: (e[0], e[1])):
            result, error = found.get(parent, (None, None))
            out.setdefault(child, []).append(ParentEnd(key, parent, outcome or "", result, error))
        return out

    def waiting_for(self, task_id: str) -> str:
        """What a waiting task of a graph waits for, in words ("" for none)."""
        ends = self.parent_ends([task_id]).get(task_id, [])
        open_ = [e for e in ends if not e.outcome]
        if not open_:
            return ""
        now_of: dict[str, str] = {}
        for shard in self._shards.all:
            now_of.update(shard.run(lambda cur: _effective_statuses(cur, [e.task_id for e in open_])))
        def state(status: str | None) -> str:   # as callers see it (GetGraph says the same)
            return r.api_state(status, 0, None, dt.datetime.min).value if status else "unknown"
        return (f"for {len(open_)} of {len(ends)} parent(s): "
                + ", ".join(f"{e.key} ({state(now_of.get(e.task_id))})" for e in open_))

    def results(self, task_ids: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        if not task_ids:
            return out
        for shard in self._shards.all:
            def body(cur) -> list:
                cur.execute(f"SELECT task_id, result_json FROM graph_nodes WHERE task_id IN ({names(task_ids)})"
                            " AND result_json IS NOT NULL")
                return list(cur.fetchall())
            out.update(shard.run(body))
        return out

    def graph(self, namespace: str, graph_id: str) -> GraphView:
        head = None
        nodes: list[NodeView] = []
        for shard in self._shards.all:
            def body(cur):
                cur.execute("SELECT complete, created_at FROM graphs WHERE namespace = %s AND graph_id = %s",
                            (namespace, graph_id))
                row = cur.fetchone()
                cur.execute("SELECT e.child_id, e.parent_key, e.parent_id, e.on_failure, e.outcome"
                            " FROM graph_edges e JOIN graph_nodes n ON n.task_id = e.child_id"
                            " WHERE n.namespace = %s AND n.graph_id = %s", (namespace, graph_id))
                edges: dict[str, list[EdgeView]] = {}
                for child, key, parent, on_failure, outcome in cur.fetchall():
                    edges.setdefault(child, []).append(EdgeView(key, parent, OnFailure(on_failure), outcome))
                cur.execute("SELECT n.task_id, n.node_key, n.seq, n.slot, t.status, t.attempts, t.trigger_at,"
                            " n.join_rule, n.join_k, n.reason, t.last_error"
                            " FROM graph_nodes n JOIN tasks t ON t.task_id = n.task_id"
                            " WHERE n.namespace = %s AND n.graph_id = %s", (namespace, graph_id))
                found = [NodeView(key=row_[1], task_id=row_[0], seq=row_[2], slot=row_[3], status=r.Status(row_[4]),
                                  attempts=row_[5], trigger_at=row_[6], join_rule=JoinRule(row_[7]),
                                  join_k=row_[8], edges=tuple(sorted(edges.get(row_[0], []),
                                                                     key=lambda e: e.parent_key)),
                                  reason=row_[9], last_error=row_[10]) for row_ in cur.fetchall()]
                return row, found
            row, found = shard.run(body)
            if row is not None:
                head = row
            nodes += found
        if head is None:
            raise GraphNotFound(namespace, graph_id)
        return GraphView(namespace, graph_id, bool(head[0]), head[1], tuple(sorted(nodes, key=lambda n: n.seq)))


def _insert_nodes(cur, graph_id: str, nodes: Sequence[NewNode], node: str) -> None:
    """One shard's part of a graph, idempotent: what an earlier call wrote stays as it is."""
    ids = [n.task.task_id for n in nodes]
    cur.execute(f"SELECT task_id, namespace FROM tasks WHERE task_id IN ({names(ids)})")
    existing = dict(cur.fetchall())
    for n in nodes:
        if n.task.task_id in existing and existing[n.task.task_id] != n.task.namespace:
            raise TaskIdTaken(n.task.task_id)
    fresh = [n for n in nodes if n.task.task_id not in existing]
    if not fresh:
        return
    TaskStore.insert_in(cur, [n.task for n in fresh], node)   # accepted and waiting: the row's columns
    # Multi-row INSERTs of literals, as insert_in writes the tasks (sql_literals): ids, keys,
    # namespaces and the graph id are validated names, checked again here in one pass; a
    # value escaped by PyMySQL row by row cost more than the rest of the insert.
    names(x for n in fresh for x in (n.task.task_id, n.task.namespace, n.key, *(e.parent_id for e in n.parents),
                                     *(e.parent_key for e in n.parents)))
    names([graph_id])
    cur.execute("INSERT IGNORE INTO graph_nodes (task_id, namespace, graph_id, node_key, seq, slot, join_rule, join_k,"
                " delay_ms, n_parents, has_dependents) VALUES " + ",".join(
                    f"('{n.task.task_id}','{n.task.namespace}','{graph_id}','{n.key}',{int(n.seq)},{int(n.task.slot)},"
                    f"'{n.join_rule.value}',{int(n.join_k)},{int(n.delay_ms)},{len(n.parents)},{int(n.has_dependents)})"
                    for n in fresh))
    edges = [f"('{n.task.task_id}','{e.parent_id}','{e.parent_key}','{e.on_failure.value}')"
             for n in fresh for e in n.parents]
    for i in range(0, len(edges), 5000):
        cur.execute("INSERT IGNORE INTO graph_edges (child_id, parent_id, parent_key, on_failure) VALUES "
                    + ",".join(edges[i:i + 5000]))


def _effective_statuses(cur, task_ids: list[str]) -> dict[str, str]:
    """Each task's status as its dependents count it: skipped by an operator counts as
    succeeded (the operator says the step is done); one that has not ended but has failed an
    attempt (waiting for its retry, or running a later attempt) is FAILED_ATTEMPT, which only a
    `continue` edge counts (graph_rules.effective)."""
    cur.execute("SELECT t.task_id, t.status, COALESCE(n.operator_skipped, 0), t.attempts FROM tasks t"
                f" LEFT JOIN graph_nodes n ON n.task_id = t.task_id WHERE t.task_id IN ({names(task_ids)})")
    return {tid: _counted_status(status, bool(skipped), int(attempts))
            for tid, status, skipped, attempts in cur.fetchall()}


def _counted_status(status: str, operator_skipped: bool, attempts: int) -> str:
    if status == r.SKIPPED and operator_skipped:
        return str(r.SUCCEEDED)
    if status not in r.TERMINAL and (attempts >= 2 or (attempts == 1 and status != r.DISPATCHED)):
        return FAILED_ATTEMPT
    return status


def _merge(parts: list[Settled]) -> Settled:
    return Settled(tuple(x for p in parts for x in p.released), sum(p.skipped for p in parts),
                   sum(p.cancelled for p in parts), tuple(e for p in parts for e in p.ended),
                   tuple(e for p in parts for e in p.reopened))

