"""Task search: bounded, indexed reads only, each one an index range with keyset paging.

    by trace id                     idx_trace (trace_id)
    by unique key                   unique_keys' primary key (namespace, unique_key) -> the holder's id,
                                    then the tasks' primary key, each on every shard (the key's row
                                    and the holder's may be on different shards)
    namespace + type [+ status]     idx_ns_type_created (namespace, task_type, created_at)
      over a time of acceptance     (a status is filtered within that range: the index is on
                                    columns written once, so a status change never moves it)

Pages are newest first, strictly before a cursor (created_at, task_id). `plans` answers
MySQL's EXPLAIN of each statement as it is run, for the test that holds every one to an
index (tests/integration/test_operations.py).
"""
from __future__ import annotations

import datetime as dt
import heapq

from dispatcher.store.interface_search import MAX_PAGE, Query, TaskSummary, is_w3c_trace_id
from dispatcher.store.shards import Shards

_SUMMARY = "task_id, slot, namespace, task_type, status, attempts, trigger_at, created_at, updated_at, last_error"

__all__ = ["MAX_PAGE", "Query", "SearchStore", "TaskSummary", "statements"]


_HOLDER = "SELECT task_id FROM unique_keys WHERE namespace = %s AND unique_key = %s"
_BY_ID = f"SELECT {_SUMMARY} FROM tasks WHERE task_id = %s"


def _page_clause(before: tuple[dt.datetime, str] | None, args: list[object]) -> str:
    if before is None:
        return ""
    args += [before[0], before[0], before[1]]
    return " AND (created_at < %s OR (created_at = %s AND task_id < %s))"


def statements(q: Query, before: tuple[dt.datetime, str] | None, limit: int) -> list[tuple[str, list[object]]]:
    """The SQL a query runs on each shard."""
    if q.trace_id:
        args: list[object] = [q.trace_id]
        where = "trace_id = %s"
        if is_w3c_trace_id(q.trace_id):
            # And the traceparents of that trace: a range on idx_trace (the column compares bytes;
            # "." follows "-").
            where = "(trace_id = %s OR (trace_id > %s AND trace_id < %s))"
            args += [f"00-{q.trace_id}-", f"00-{q.trace_id}."]
        page = _page_clause(before, args)
        return [(f"SELECT {_SUMMARY} FROM tasks WHERE {where}{page}"
                 " ORDER BY created_at DESC, task_id DESC LIMIT %s", [*args, limit])]
    if q.unique_key:   # two steps, each on every shard: SearchStore._holder_of
        return [(_HOLDER, [q.namespace, q.unique_key]), (_BY_ID, [""])]
    args = [q.namespace, q.task_type]
    where = ""
    if q.status:
        where += " AND status = %s"
        args.append(q.status)
    if q.since is not None:
        where += " AND created_at >= %s"
        args.append(q.since)
    if q.until is not None:
        where += " AND created_at < %s"
        args.append(q.until)
    page = _page_clause(before, args)
    return [(f"SELECT {_SUMMARY} FROM tasks FORCE INDEX (idx_ns_type_created) WHERE namespace = %s"
             f" AND task_type = %s{where}{page} ORDER BY created_at DESC, task_id DESC LIMIT %s", [*args, limit])]


class SearchStore:
    """SearchProtocol (interface_search.py) over the task store's shards."""

    def __init__(self, shards: Shards):
        self._shards = shards

    def search(self, q: Query, *, before: tuple[dt.datetime, str] | None = None, limit: int = 50) -> list[TaskSummary]:
        limit = max(1, min(limit, MAX_PAGE))
        if q.unique_key:
            return self._holder_of(q.namespace, q.unique_key)
        runs = []
        for shard in self._shards.all:
            for sql, args in statements(q, before, limit):
                def body(cur, sql=sql, args=args):
                    cur.execute(sql, args)
                    return [TaskSummary(*row) for row in cur.fetchall()]
                runs.append(shard.run(body))
        return list(heapq.merge(*runs, key=lambda t: t.cursor, reverse=True))[:limit]

    def _holder_of(self, namespace: str, unique_key: str) -> list[TaskSummary]:
        """The task holding a key. The key's row lives on its key's shard and the task's row on its
        slot's, which may be another: so the holder is looked up on every shard, then read from
        every shard (two primary-key lookups each; at most one answers each)."""
        def holders(cur) -> list[str]:
            cur.execute(_HOLDER, [namespace, unique_key])
            return [task_id for (task_id,) in cur.fetchall()]
        found = [summary for shard in self._shards.all for task_id in shard.run(holders)
                 for other in self._shards.all for summary in other.run(self._read_by_id(task_id))]
        return sorted(found, key=lambda t: t.cursor, reverse=True)

    @staticmethod
    def _read_by_id(task_id: str):
        def body(cur) -> list[TaskSummary]:
            cur.execute(_BY_ID, [task_id])
            return [TaskSummary(*row) for row in cur.fetchall()]
        return body

    def plans(self, q: Query, *, before: tuple[dt.datetime, str] | None = None, limit: int = 50) -> list[dict]:
        """EXPLAIN of every statement `search` runs for `q`, on shard 0, as dicts. For a unique key,
        the second step is explained with the holder's id (a lookup of an id that matches nothing
        is planned as no table at all)."""
        out = []
        runs = statements(q, before, limit)
        if q.unique_key:
            holder = next((s.task_id for s in self._holder_of(q.namespace, q.unique_key)), "")
            runs = [runs[0], (_BY_ID, [holder])]
        for sql, args in runs:
            def body(cur, sql=sql, args=args):
                cur.execute("EXPLAIN " + sql, args)
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row)) for row in cur.fetchall()]
            out.append({"sql": sql, "plan": self._shards.first.run(body)})
        return out
