"""What a step load left behind: every call the Locust workers recorded, and the tasks in the store.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib

from harness.world import World
from loadtest.bench.store import naive_utc_to_ts, now_naive_utc

# ---------------------------------------------------------------- what the processes recorded

@dataclasses.dataclass(frozen=True)
class Call:
    t: float                 # unix time of the response (the ack)
    accepted: int
    ms: float
    error: str | None


@dataclasses.dataclass
class Records:
    shape_start: float | None = None
    step_starts: dict[int, float] = dataclasses.field(default_factory=dict)
    shape_end: float | None = None
    calls: list[Call] = dataclasses.field(default_factory=list)
    user_errors: list[tuple[float, str]] = dataclasses.field(default_factory=list)


def read_records(directory: pathlib.Path) -> Records:
    """Every record file of the master and the workers (locust_rate.py)."""
    rec = Records()
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if "shape_start" in r:
                rec.shape_start = r["shape_start"]       # the master's last reset is the test's start
            elif "step_start" in r:
                rec.step_starts[int(r["step_start"])] = r["t"]
            elif "shape_end" in r:
                rec.shape_end = r["shape_end"]
            elif "user_error" in r:
                rec.user_errors.append((r["t"], r["user_error"]))
            else:
                rec.calls.append(Call(r["t"], int(r["n"]), float(r["ms"]), r.get("err")))
    return rec


# ---------------------------------------------------------------- the store

def store_completions(world: World, t0: float) -> dict[int, int]:
    """{second since t0: tasks of the run that reached `succeeded` in it}, by updated_at,
    grouped by MariaDB (one scan at the end, not a query per second)."""
    since = now_naive_utc(t0)
    rows = world.sql("SELECT FLOOR(TIMESTAMPDIFF(MICROSECOND, %s, updated_at) / 1000000) AS s, COUNT(*)"
                     " FROM tasks WHERE status = 'succeeded' AND created_at >= %s GROUP BY s", (since, since))
    return {int(s): int(n) for s, n in rows}


@dataclasses.dataclass(frozen=True)
class StoredTask:
    due_ts: float            # trigger_at of the first attempt = SubmitResult.due_at
    attempts: int
    status: str


def store_tasks(world: World, t0: float) -> dict[str, StoredTask]:
    """The run's tasks (created since t0; the warm-up's are older)."""
    rows = world.sql("SELECT task_id, trigger_at, attempts, status FROM tasks WHERE created_at >= %s",
                     (now_naive_utc(t0),))
    return {tid: StoredTask(naive_utc_to_ts(trigger), int(attempts), status) for tid, trigger, attempts, status in rows}
