"""The per-minute task counts on MariaDB (interface_stats.py): the task_stats table on shard 0
(migrations/009_task_stats.sql), buckets as a comma-separated list so that they merge across
nodes and minutes."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dispatcher.store.interface_stats import BUCKETS, StatsRow
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import equalities

_COLUMNS = "minute, namespace, task_type, node, submitted, succeeded, failed, dead_lettered, duration_buckets"


class TaskStatsStore:
    def __init__(self, shards: Shards):
        self._db = shards.first

    def write(self, rows: Sequence[StatsRow]) -> None:
        values = [(row.minute, row.namespace, row.task_type, row.node, row.submitted, row.succeeded, row.failed,
                   row.dead_lettered, ",".join(map(str, row.buckets))) for row in rows]
        if values:
            self._db.run(lambda cur: cur.executemany(
                f"REPLACE INTO task_stats ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", values))

    def read(self, *, since: dt.datetime, namespace: str = "", task_type: str = "") -> list[StatsRow]:
        where, args = equalities((("namespace", namespace), ("task_type", task_type)))
        where.append("minute >= %s")
        args.append(since)

        def body(cur):
            cur.execute(f"SELECT {_COLUMNS} FROM task_stats WHERE {' AND '.join(where)}", args)
            return cur.fetchall()
        return [StatsRow(minute, ns, tt, node, sub, ok, failed, dead,
                         tuple(int(b) for b in buckets.split(",")) if buckets else (0,) * BUCKETS)
                for minute, ns, tt, node, sub, ok, failed, dead, buckets in self._db.run(body)]
