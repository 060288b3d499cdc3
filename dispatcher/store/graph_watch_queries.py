"""The graph store's queries for the home owner's watch (engine/graph_watch.py): which graphs
are open, what one of them looks like now (finished, stuck, ends never counted), and the
figures of a node's gauges. A part of GraphStore (store/graphs.py), kept apart for its size."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import TypeVar

from dispatcher.store import records as r
from dispatcher.store.errors import GraphNotFound
from dispatcher.store.interface_graphs import GraphCheck, OpenGraphs
from dispatcher.store.mysql import TaskStore
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import marks, names

T = TypeVar("T")
_LOST_AFTER_MS = 10_000
"""An end not counted this long after it is lost (its note is applied within a few ms, or
by the slot's next owner within its sweep): younger ones are left to their notes."""


class WatchQueries:
    _shards: Shards

    def _by_shard(self, items: Iterable[T], slot: Callable[[T], int]) -> dict[int, list[T]]:
        raise NotImplementedError

    # ---- the home owner's watch ----

    def open_graphs(self, slots: list[int], limit: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for index, group in self._by_shard(slots, lambda s: s).items():
            def body(cur, group=group) -> list[tuple[str, str]]:
                cur.execute(f"SELECT namespace, graph_id FROM graphs WHERE home_slot IN ({marks(len(group))})"
                            " AND finished_at IS NULL AND complete = 1 ORDER BY checked_at LIMIT %s", [*group, limit])
                return [(ns, gid) for ns, gid in cur.fetchall()]
            out += self._shards.all[index].run(body)
        return out[:limit]

    def check_graph(self, namespace: str, graph_id: str, stuck_after_ms: int, now: dt.datetime) -> GraphCheck:
        by_status: dict[str, int] = {}
        due = 0
        newest: dt.datetime | None = None
        lost: list[str] = []
        for shard in self._shards.all:
            def body(cur) -> tuple[list, list]:
                cur.execute("SELECT t.status, COUNT(*), MAX(t.updated_at),"
                            " SUM(t.status IN ('pending', 'enqueued', 'claimed') AND t.trigger_at <= %s)"
                            " FROM graph_nodes n JOIN tasks t ON t.task_id = n.task_id"
                            " WHERE n.namespace = %s AND n.graph_id = %s GROUP BY t.status", (now, namespace, graph_id))
                counts = list(cur.fetchall())
                cur.execute("SELECT DISTINCT e.parent_id FROM graph_nodes n JOIN tasks t ON t.task_id = n.task_id"
                            " JOIN graph_edges e ON e.child_id = n.task_id WHERE n.namespace = %s AND n.graph_id = %s"
                            " AND t.status = %s AND e.outcome IS NULL", (namespace, graph_id, r.WAITING))
                return counts, [row[0] for row in cur.fetchall()]
            counts, unresolved = shard.run(body)
            for status, n, last, due_here in counts:
                by_status[status] = by_status.get(status, 0) + int(n)
                due += int(due_here or 0)
                newest = last if newest is None or (last is not None and last > newest) else newest
            lost += unresolved
        if lost:   # of the parents waited for, those that ended a while ago: a release not applied
            ended: set[str] = set()
            settled_before = now - dt.timedelta(milliseconds=_LOST_AFTER_MS)
            for shard in self._shards.all:
                def old_ends(cur) -> set[str]:
                    cur.execute(f"SELECT task_id FROM tasks WHERE task_id IN ({names(lost)})"
                                f" AND status IN ({marks(len(r.TERMINAL))}) AND updated_at < %s",
                                [*sorted(str(s) for s in r.TERMINAL), settled_before])
                    return {row[0] for row in cur.fetchall()}
                ended |= shard.run(old_ends)
            lost = sorted(ended)
        finished = bool(by_status) and all(r.Status(s) in r.TERMINAL for s in by_status)
        quiet_since = now - dt.timedelta(milliseconds=stuck_after_ms)
        stuck = (not finished and by_status.get(r.WAITING, 0) > 0 and not by_status.get(r.DISPATCHED, 0)
                 and due == 0 and newest is not None and newest < quiet_since)
        home = self._home(namespace, graph_id)
        home.run(lambda cur: cur.execute(
            "UPDATE graphs SET checked_at = %s, finished_at = IF(%s, %s, NULL),"
            " stuck_since = IF(%s, COALESCE(stuck_since, %s), NULL) WHERE namespace = %s AND graph_id = %s",
            (now, finished, now, stuck, now, namespace, graph_id)))
        return GraphCheck(namespace, graph_id, finished, stuck, tuple(lost))

    def open_counts(self, slots: list[int], now: dt.datetime) -> OpenGraphs:
        open_: dict[str, int] = {}
        stuck: dict[str, int] = {}
        oldest: dt.datetime | None = None
        for index, group in self._by_shard(slots, lambda s: s).items():
            def body(cur, group=group) -> tuple[list, dt.datetime | None]:
                cur.execute(f"SELECT namespace, COUNT(*), SUM(stuck_since IS NOT NULL) FROM graphs WHERE home_slot IN"
                            f" ({marks(len(group))}) AND finished_at IS NULL AND complete = 1 GROUP BY namespace",
                            group)
                rows = list(cur.fetchall())
                cur.execute(f"SELECT MIN(created_at) FROM graph_outbox WHERE slot IN ({marks(len(group))})", group)
                return rows, cur.fetchone()[0]
            rows, first = self._shards.all[index].run(body)
            for ns, n, s in rows:
                open_[ns] = open_.get(ns, 0) + int(n)
                stuck[ns] = stuck.get(ns, 0) + int(s or 0)
            if first is not None and (oldest is None or first < oldest):
                oldest = first
        return OpenGraphs(open_, stuck, max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)

    def _home(self, namespace: str, graph_id: str) -> TaskStore:
        """The shard with the graph's row (its home slot's; asked since the caller may not know it)."""
        for shard in self._shards.all:
            found = shard.run(lambda cur: cur.execute("SELECT 1 FROM graphs WHERE namespace = %s AND graph_id = %s",
                                                      (namespace, graph_id)))
            if found:
                return shard
        raise GraphNotFound(namespace, graph_id)
