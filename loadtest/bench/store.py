"""What the run's private task store says: waits on it and reads of it.

The store is the record of truth for "done": a task has completed when its row is
`succeeded`, and its `updated_at` (DATETIME(3), naive UTC) is when the node recorded
that, not when we noticed.
"""
from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Sequence
from typing import Any, Protocol

from harness.world import World

TERMINAL = ("succeeded", "dead_lettered", "cancelled")


class Counts(Protocol):
    def executed(self) -> int: ...


def now_naive_utc(ts: float) -> dt.datetime:
    """A unix time as the naive UTC datetime MySQL DATETIME(3) columns hold."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(ts * 1000))


def naive_utc_to_ts(value: dt.datetime) -> float:
    return (value - dt.datetime(1970, 1, 1)).total_seconds()


def _summed(rows: Sequence[tuple]) -> dict[str, int]:
    """{key: count} of (key, count) rows from every shard, added up."""
    out: dict[str, int] = {}
    for key, n in rows:
        out[key] = out.get(key, 0) + n
    return out


def _count_and_latest(rows: Sequence[tuple]) -> tuple[int, dt.datetime | None]:
    """(COUNT(*), MAX(t)) rows from every shard -> (the total, the latest t)."""
    times = [t for _, t in rows if t is not None]
    return sum(n for n, _ in rows), max(times) if times else None


def wait_done(world: World, executors: Counts, expected_executions: int, since: float, expected: int,
              deadline_s: float, label: str) -> dict[str, Any]:
    """Wait until `expected` tasks created since `since` are `succeeded`.

    The executors' counter tells when to start asking MySQL (cheap); the time of the
    last completion is the newest `updated_at` of those rows."""
    t0 = time.time()
    since_dt = now_naive_utc(since - 0.001)
    last_print = 0.0
    done = 0
    while True:
        executed = executors.executed()
        if executed >= expected_executions:
            done, last = _count_and_latest(world.sql_all("SELECT COUNT(*), MAX(updated_at) FROM tasks"
                                                         " WHERE status = 'succeeded' AND created_at >= %s",
                                                         (since_dt,)))
            if done >= expected:
                return {"complete": True, "succeeded": done,
                        "last_completion_ts": naive_utc_to_ts(last) if last else None, "waited_s": time.time() - t0}
        if time.time() - last_print > 3:
            print(f"  [{label}] executed {executed:,} of {expected_executions:,} (all phases); "
                  f"succeeded in MySQL {done:,} of {expected:,}", file=sys.stderr, flush=True)
            last_print = time.time()
        if time.time() - t0 > deadline_s:
            by_status = _summed(world.sql_all("SELECT status, COUNT(*) FROM tasks WHERE created_at >= %s"
                                              " GROUP BY status", (since_dt,)))
            _, last = _count_and_latest(world.sql_all("SELECT COUNT(*), MAX(updated_at) FROM tasks"
                                                      " WHERE status = 'succeeded' AND created_at >= %s", (since_dt,)))
            return {"complete": False, "succeeded": by_status.get("succeeded", 0), "by_status": by_status,
                    "last_completion_ts": naive_utc_to_ts(last) if last else None, "waited_s": time.time() - t0}
        time.sleep(0.25 if executed >= expected_executions else 0.1)


def wait_terminal(world: World, timeout_s: float) -> dict[str, Any]:
    """Wait until no task is in a non-terminal state: the drain at the end of a run."""
    t0 = time.time()
    deadline = time.monotonic() + timeout_s
    counts: dict[str, int] = {}
    while time.monotonic() < deadline:
        counts = world.status_counts()
        if sum(v for k, v in counts.items() if k not in TERMINAL) == 0:
            break
        time.sleep(0.5)
    time.sleep(0.5)       # the executor may still report a run or two
    return {"seconds": time.time() - t0, "status_counts": counts,
            "complete": sum(v for k, v in counts.items() if k not in TERMINAL) == 0}


def _by_ids(world: World, query: str, ids: Sequence[str], chunk: int = 1000) -> list[tuple]:
    """`query` (with `{ids}` where the IN list goes) over the ids, `chunk` at a time."""
    rows: list[tuple] = []
    for i in range(0, len(ids), chunk):
        part = list(ids[i:i + chunk])
        rows += world.sql_all(query.format(ids=",".join(["%s"] * len(part))), part)
    return rows


def dispatched_at(world: World, task_ids: Sequence[str]) -> dict[str, float]:
    """{task_id: tasks.dispatched_at in unix ms} of the tasks that have one."""
    return {tid: float(ms) for tid, ms in _by_ids(
        world, "SELECT task_id, UNIX_TIMESTAMP(dispatched_at) * 1000 FROM tasks"
               " WHERE dispatched_at IS NOT NULL AND task_id IN ({ids})", task_ids)}


def recorded_paths(world: World, task_ids: Sequence[str]) -> dict[str, str]:
    """{task_id: 'kafka'|'mysql'} from the node's `queued` event of attempt 0."""
    return dict(_by_ids(world, "SELECT task_id, detail FROM task_history WHERE state = 'queued' AND attempt = 0"
                               " AND task_id IN ({ids})", task_ids))


def task_statuses(world: World) -> dict[str, str]:
    """{task_id: status} of every task."""
    return dict(world.sql_all("SELECT task_id, status FROM tasks"))


def store_facts(world: World, task_type_like: str = "noop-%") -> dict[str, Any]:
    """Tasks by status, events, retried tasks, and the envelope (bytes) of the first task of the types."""
    by_status = _summed(world.sql_all("SELECT status, COUNT(*) FROM tasks GROUP BY status"))
    tasks = sum(n for (n,) in world.sql_all("SELECT COUNT(*) FROM tasks"))
    events = sum(n for (n,) in world.sql_all("SELECT COUNT(*) FROM task_events"))
    events_by_state = _summed(world.sql_all("SELECT state, COUNT(*) FROM task_events GROUP BY state"))
    retried = sum(n for (n,) in world.sql_all("SELECT COUNT(*) FROM tasks WHERE attempts > 1"))
    (env_len, env), = world.sql("SELECT LENGTH(envelope), envelope FROM tasks WHERE task_type LIKE %s"
                                " ORDER BY created_at LIMIT 1", (task_type_like,))
    return {"tasks": tasks, "by_status": by_status, "task_events": events, "events_by_state": events_by_state,
            "events_per_task": events / tasks if tasks else None, "tasks_with_more_than_one_attempt": retried,
            "task_envelope_bytes": env_len, "sample_envelope": bytes(env)}
