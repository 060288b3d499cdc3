"""The console's per-minute counts: recorded per batch, written cumulative, percentiles by bucket."""
from __future__ import annotations

import datetime as dt
from typing import cast

import pytest

from dispatcher.base.clock import Clock
from dispatcher.engine.task_stats import DURATION_BOUNDS_MS, TaskStats, percentile_ms
from dispatcher.store.mysql import TaskStore
from dispatcher.store.shards import Shards


class FakeClock:
    def __init__(self, ms: int):
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms

    def now(self) -> dt.datetime:
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=self.ms)


class FakeStore:
    """Records what flush writes; fails on demand."""

    def __init__(self):
        self.rows: dict[tuple, tuple] = {}
        self.fail = False

    def run(self, body):
        store = self

        class Cursor:
            def executemany(self, sql, rows):
                if store.fail:
                    raise RuntimeError("store down")
                for row in rows:
                    store.rows[row[:4]] = row[4:]
        return body(Cursor())


@pytest.fixture
def stats():
    store = FakeStore()
    clock = FakeClock(60_000 * 1000 + 5)
    shards = Shards(cast(list[TaskStore], [store]), lambda slot: cast(TaskStore, store))
    return TaskStats(shards=shards, node="n1", clock=cast(Clock, clock)), store, clock


def test_a_flush_writes_cumulative_counts_and_forgets_finished_minutes(stats):
    s, store, clock = stats
    s.submitted([(("shop", "charge"), 5)])
    s.executed("shop", "charge", succeeded=3, failed=1, dead_lettered=1, duration_ms=30, runs=4)
    assert s.flush() == 1
    minute = dt.datetime(1970, 1, 1) + dt.timedelta(minutes=1000)
    row = store.rows[(minute, "shop", "charge", "n1")]
    assert row[:4] == (5, 3, 1, 1)
    buckets = [int(b) for b in row[4].split(",")]
    assert sum(buckets) == 4 and buckets[DURATION_BOUNDS_MS.index(50)] == 4
    s.submitted([(("shop", "charge"), 2)])
    store.fail = True
    with pytest.raises(RuntimeError):
        s.flush()
    store.fail = False
    assert s.flush() == 1   # written again after the failure, cumulative: never counted twice
    assert store.rows[(minute, "shop", "charge", "n1")][0] == 7
    clock.ms += 60_000
    assert s.flush() == 0 and not s._counts   # the finished minute was written: forgotten


def test_percentiles_are_bucket_bounds():
    buckets = [0] * (len(DURATION_BOUNDS_MS) + 1)
    assert percentile_ms(buckets, 0.5) is None
    buckets[DURATION_BOUNDS_MS.index(10)] = 98
    buckets[DURATION_BOUNDS_MS.index(1000)] = 2
    assert percentile_ms(buckets, 0.5) == 10 and percentile_ms(buckets, 0.99) == 1000
    buckets[-1] = 100
    assert percentile_ms(buckets, 0.99) == DURATION_BOUNDS_MS[-1]
