"""Step load with real Locust: fixed target rates of 25, 50, 75 and 100% of a peak.

A benchmark, not a test. In a private world (a scratch MariaDB database, a ZooKeeper
chroot and topics of its own, made by harness/world.py and dropped at the end) it
starts one `taskring node --single` (or `--nodes N` cluster nodes, the ring settled
first), SDK executor processes with no-op handlers that record when each task starts
(loadtest/bench/executors.py), and a Locust master with `--locust-workers` worker
processes (loadtest/locust_rate.py: locustfile.py's SubmitBatch user, paced). Locust
then offers each step's rate for `--step-s` seconds and stops by itself.

How the rate is fixed: each user calls SubmitBatch at a constant pace (Locust's
`constant_throughput`, anchored at each user's own random start so that users do not
call in step), so U users x batch x calls/s per user = tasks/s, and the step shape
changes only the number of users. The users of the peak step are the fewest, rounded
up so that every step has a whole number of them, that keep each user at most
`--max-user-rate` calls/s (default 0.5: a call has 2 s, against the tens to hundreds
of ms it takes). A step whose calls take longer than their period falls short of its
target; the table shows the target and what was accepted side by side.

Per second of the run (the timeline), and per step:
  accepted   tasks acknowledged to Locust (each SubmitBatch response, recorded by the
             worker that got it: locust_rate.py's record files)
  completed  tasks that reached `succeeded` in the store, by the second of their
             `updated_at` (set when the outcome is recorded), from one GROUP BY at the
             end; the node's Prometheus counters, sampled every second, are kept
             beside it (node_submitted / node_succeeded) as a live cross-check
  pickup     executor start - due time (bench_node.py's pickup: the executors record
             the start, the store's trigger_at is SubmitResult.due_at), p50/p99 of the
             tasks due in that second (in the step, for the step)
  errors     Locust failures (SubmitBatch calls that raised) and user errors
and the machine's busy CPU and each process group's, sampled every second.

    .venv/bin/python loadtest/locust_steps.py                        # 4 x 60 s up to 5,000 tasks/s
    .venv/bin/python loadtest/locust_steps.py --step-s 10 --peak 2000
    .venv/bin/python loadtest/locust_steps.py --nodes 3 --peak 3000
    .venv/bin/python loadtest/locust_steps.py --rerender              # redraw .md and .png from the .json

Writes loadtest/reports/locust_steps.{json,md,png} (`--report-name` to change).
Every process it starts is stopped by its PID and the world is dropped, also on an
error or Ctrl-C; logs stay in the temporary directory it prints. One benchmark at a
time on the 2 shared cores.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import dataclasses
import datetime as dt
import functools
import json
import math
import os
import pathlib
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.demo import stop_nodes, wait_ready, wait_settled
from harness.processes import ChildProcess, NodeProcess, free_port
from harness.stack import StackEndpoints
from harness.stats import percentile, summarize_ms
from harness.world import World, create_world, drop_world
from loadtest.bench import report
from loadtest.bench.env import NAMESPACE, SLOTS, spread_task_types
from loadtest.bench.executors import Executors, starts_by_task
from loadtest.bench.load import LOCUST_MISSING, locust_argv, warm_up
from loadtest.bench.observe import machine_jiffies, process_cpu, stack_pids
from loadtest.bench.report import fmt
from loadtest.bench.store import naive_utc_to_ts, now_naive_utc, wait_done
from loadtest.raw_parts import machine_facts

REPO = pathlib.Path(__file__).resolve().parents[1]

LOCUSTFILE = REPO / "loadtest" / "locust_rate.py"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the plan

@dataclasses.dataclass(frozen=True)
class Step:
    index: int
    percent: int
    users: int
    target_per_s: float

    @property
    def label(self) -> str:
        return f"{self.percent}%"


@dataclasses.dataclass(frozen=True)
class Plan:
    peak_per_s: float
    batch: int
    user_rate: float          # SubmitBatch calls per second of each user
    step_s: float
    steps: tuple[Step, ...]

    @property
    def load_s(self) -> float:
        return self.step_s * len(self.steps)


def plan_steps(peak: float, percents: Sequence[int], batch: int, step_s: float, max_user_rate: float,
               peak_users: int | None = None) -> Plan:
    """Users per step and the pace of each user, so that step k offers percents[k]% of `peak`.

    The peak step gets the fewest users that keep each at most `max_user_rate` calls/s,
    rounded up until every step's share of them is a whole number (25/50/75/100%: a
    multiple of 4); the pace is then whatever makes the peak exact."""
    if peak_users is None:
        peak_users = max(1, math.ceil(peak / (batch * max_user_rate)))
        while any(peak_users * p % 100 for p in percents):
            peak_users += 1
    user_rate = peak / (batch * peak_users)
    steps = []
    for i, p in enumerate(percents):
        users = max(1, round(peak_users * p / 100))
        steps.append(Step(i, p, users, users * batch * user_rate))
    return Plan(peak, batch, user_rate, step_s, tuple(steps))


# ---------------------------------------------------------------- nodes, executors, warm-up

def start_nodes(world: World, count: int, run_dir: pathlib.Path, route_threshold_ms: int,
                log_level: str) -> list[NodeProcess]:
    """One `--single` node, or `count` cluster nodes, each in a session of its own: a
    Ctrl-C in the terminal reaches only this process, which stops them in order."""
    single = count == 1
    nodes = [NodeProcess(world, f"steps-{'single' if single else f'n{i + 1}'}", single=single,
                         log_path=run_dir / f"node-{i + 1}.log", new_session=True,
                         TASKRING_ROUTE_THRESHOLD_MS=str(route_threshold_ms), TASKRING_LOG_LEVEL=log_level)
             for i in range(count)]
    for node in nodes:
        node.start()
    problem = wait_ready(nodes, 60.0)
    if problem:
        raise RuntimeError(f"a node did not get ready: {problem}")
    if not single:
        settled, views = wait_settled(nodes, 60.0)
        if not settled:
            raise RuntimeError(f"the ring did not settle: {views}")
    return nodes


# ---------------------------------------------------------------- Locust

@dataclasses.dataclass
class LocustProcesses:
    master: ChildProcess
    workers: list[ChildProcess]
    csv_prefix: pathlib.Path
    record_dir: pathlib.Path

    @property
    def all(self) -> list[ChildProcess]:
        return [self.master, *self.workers]


def locust_env(plan: Plan, targets: list[str], task_types: list[str], delay_ms: int,
               record_dir: pathlib.Path) -> dict[str, str]:
    """What locust_rate.py (and the locustfile.py it builds on) reads."""
    return {"TASKRING_TARGETS": ",".join(targets), "TASKRING_TARGET": targets[0], "TASKRING_NAMESPACE": NAMESPACE,
            "TASKRING_TASK_TYPES": ",".join(task_types), "TASKRING_BATCH": str(plan.batch),
            "TASKRING_DELAY_MS": str(delay_ms), "TASKRING_USER_RATE": repr(plan.user_rate),
            "TASKRING_STEP_USERS": ",".join(str(s.users) for s in plan.steps), "TASKRING_STEP_S": repr(plan.step_s),
            "TASKRING_RECORD_DIR": str(record_dir), "PYTHONUNBUFFERED": "1"}


def start_locust(plan: Plan, targets: list[str], task_types: list[str], workers: int, delay_ms: int,
                 run_dir: pathlib.Path) -> LocustProcesses:
    """A headless master (127.0.0.1 only, its shape runs the steps) and `workers` workers,
    each a process of our own, known by its PID."""
    record_dir = run_dir / "records"
    record_dir.mkdir(exist_ok=True)
    env = dict(os.environ, **locust_env(plan, targets, task_types, delay_ms, record_dir))
    exe, port, csv_prefix = locust_argv(), free_port(), run_dir / "locust"
    if not exe:
        raise SystemExit(LOCUST_MISSING)
    # --stop-timeout: at the end a user finishes its call in flight, so that every task
    # the node accepted is also an ack we recorded.
    master = ChildProcess("locust-master", [
        *exe, "-f", str(LOCUSTFILE), "--master", "--headless", "--master-bind-host", "127.0.0.1",
        "--master-bind-port", str(port), "--expect-workers", str(workers), "--expect-workers-max-wait", "60",
        "--stop-timeout", "10s", "--csv", str(csv_prefix), "--only-summary"], run_dir / "locust-master.log",
        env=env, new_session=True).start()
    procs = [ChildProcess(f"locust-worker-{i}", [*exe, "-f", str(LOCUSTFILE), "--worker", "--master-host",
                                                  "127.0.0.1", "--master-port", str(port)],
                          run_dir / f"locust-worker-{i}.log", env=env, new_session=True).start()
             for i in range(workers)]
    return LocustProcesses(master, procs, csv_prefix, record_dir)


def locust_command(plan: Plan, workers: int) -> str:
    """The Locust command lines, for the report (variables abridged)."""
    steps = ",".join(str(s.users) for s in plan.steps)
    return (f"TASKRING_STEP_USERS={steps} TASKRING_STEP_S={plan.step_s:g} TASKRING_USER_RATE={plan.user_rate:.4g} "
            f"TASKRING_BATCH={plan.batch} TASKRING_TARGETS=<nodes> ... locust -f loadtest/locust_rate.py --master "
            f"--headless --expect-workers {workers} --stop-timeout 10s --csv <run dir>/locust --only-summary"
            f" + {workers} x locust -f loadtest/locust_rate.py --worker")


def stop_locust(lp: LocustProcesses, timeout_s: float = 15.0) -> None:
    """The master first (it tells its workers to quit), then any worker still up."""
    lp.master.stop(timeout_s)
    for w in lp.workers:
        with contextlib.suppress(Exception):
            w.started.wait(timeout=5.0)
        w.stop(timeout_s)


def locust_summary(lp: LocustProcesses) -> dict[str, Any]:
    """Locust's own totals (the master's CSV) and the summary table it printed at exit."""
    out: dict[str, Any] = {"master_returncode": lp.master.started.returncode,
                           "worker_returncodes": [w.started.returncode for w in lp.workers]}
    stats = lp.csv_prefix.with_name(lp.csv_prefix.name + "_stats.csv")
    with contextlib.suppress(OSError, ValueError, KeyError):
        for row in csv.DictReader(stats.read_text().splitlines()):
            if row.get("Name") == "Aggregated":
                out.update({"requests": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                            "median_ms": float(row["Median Response Time"]),
                            "p99_ms": float(row["99%"]) if row.get("99%") not in (None, "N/A") else None,
                            "requests_per_s": float(row["Requests/s"])})
    # Each worker prints its own total at the end (locustfile.py): a cross-check of the records.
    reported = [re.search(r"taskring: accepted ([\d,]+) tasks", w.log_path.read_text(errors="replace"))
                for w in lp.workers]
    out["workers_reported_accepted"] = [int(m.group(1).replace(",", "")) if m else None for m in reported]
    lines = lp.master.log_path.read_text(errors="replace").splitlines()
    # Locust's tables, printed after its last log line ("[date] host/LEVEL/...").
    start = max((i + 1 for i, ln in enumerate(lines) if ln.startswith("[")), default=0)
    out["summary"] = [ln for ln in lines[start:] if ln.strip()][:40]
    return out


# ---------------------------------------------------------------- sampling every second

@dataclasses.dataclass(frozen=True)
class Sample:
    t: float                     # unix time
    busy_jiffies: float          # the machine's, cumulative (/proc/stat)
    total_jiffies: float
    cpu_s: dict[str, float]      # CPU seconds of each process group, cumulative
    node: dict[str, float]       # the nodes' metrics, summed: submitted, succeeded (counters), heap, in_flight


def node_figures(node: NodeProcess) -> dict[str, float] | None:
    """taskring_tasks_submitted, taskring_task_outcomes{kind=succeeded}, heap and in-flight of a node
    (None: it did not answer in time)."""
    try:
        text = node.get_bytes("/metrics", 2.0).decode()
    except Exception:
        return None
    out = {"submitted": 0.0, "succeeded": 0.0, "heap": 0.0, "in_flight": 0.0}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name = series.split("{", 1)[0]
        key = {"taskring_tasks_submitted_total": "submitted", "taskring_heap_size": "heap",
               "taskring_in_flight": "in_flight"}.get(name)
        if name == "taskring_task_outcomes_total" and 'kind="succeeded"' in series:
            key = "succeeded"
        if key:
            with contextlib.suppress(ValueError):
                out[key] += float(value)
    return out


class Sampler(threading.Thread):
    """Every second: the nodes' metrics and the CPU of the machine and of each process group."""

    def __init__(self, nodes: list[NodeProcess], groups: dict[str, list[int]], interval_s: float = 1.0):
        super().__init__(name="sampler", daemon=True)
        self.nodes, self.groups, self.interval_s = nodes, groups, interval_s
        self.samples: list[Sample] = []
        # A node that misses a scrape keeps its last figures: its counters must not dip.
        self._last: dict[str, dict[str, float]] = {}
        self._cpu_last: dict[int, float] = {}      # pid -> CPU seconds
        self._halt = threading.Event()

    def take(self) -> Sample:
        busy, total = machine_jiffies()
        for pid in {pid for pids in self.groups.values() for pid in pids}:
            split = process_cpu(pid)
            if split is not None:   # an exited process keeps what it used
                self._cpu_last[pid] = split[0] + split[1]
        cpu = {group: sum(self._cpu_last.get(pid, 0.0) for pid in pids) for group, pids in self.groups.items()}
        for node in self.nodes:
            self._last[node.node_id] = node_figures(node) or self._last.get(node.node_id, {})
        summed = {k: sum(f.get(k, 0.0) for f in self._last.values()) for k in ("submitted", "succeeded", "heap",
                                                                                "in_flight")}
        return Sample(time.time(), busy, total, cpu, summed)

    def run(self) -> None:
        next_t = time.monotonic()
        while not self._halt.is_set():
            self.samples.append(self.take())
            next_t += self.interval_s
            self._halt.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(5.0)

    def progress(self, window_s: float = 5.0) -> str:
        """A line about the last `window_s` seconds."""
        s = list(self.samples)
        if len(s) < 2:
            return "(no samples yet)"
        last = s[-1]
        first = next((x for x in reversed(s) if last.t - x.t >= window_s), s[0])
        span = max(1e-6, last.t - first.t)
        busy = 100 * (last.busy_jiffies - first.busy_jiffies) / max(1.0, last.total_jiffies - first.total_jiffies)
        return (f"node accepted {(last.node['submitted'] - first.node['submitted']) / span:,.0f}/s, succeeded "
                f"{(last.node['succeeded'] - first.node['succeeded']) / span:,.0f}/s, heap {last.node['heap']:,.0f},"
                f" in flight {last.node['in_flight']:,.0f}; machine {busy:.0f}% busy")


def follow_locust(lp: LocustProcesses, sampler: Sampler, timeout_s: float) -> None:
    """Until the master exits (its shape stops the test), with a progress line every 5 s."""
    t0 = time.monotonic()
    last = t0
    while lp.master.alive():
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"Locust did not finish within {timeout_s:.0f} s; log {lp.master.log_path}")
        time.sleep(0.25)
        if time.monotonic() - last >= 5.0:
            last = time.monotonic()
            say(f"  [{last - t0:5.0f} s] {sampler.progress()}")


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


# ---------------------------------------------------------------- analysis

@dataclasses.dataclass(frozen=True)
class Pickup:
    due_ts: float
    start_ts: float          # the first start of the task

    @property
    def ms(self) -> float:
        return (self.start_ts - self.due_ts) * 1000


def pickups(tasks: dict[str, StoredTask], starts: dict[str, list[float]]) -> tuple[list[Pickup], dict[str, int]]:
    """bench_node.py's pickup (first start - due) of every task with one attempt (a retried
    task's trigger_at is its retry's), and the checks: not executed, twice, early."""
    out, checks = [], {"not_executed": 0, "executed_more_than_once": 0, "early_starts": 0, "retried": 0}
    for tid, task in tasks.items():
        s = starts.get(tid)
        if not s:
            checks["not_executed"] += 1
            continue
        if len(s) > 1:
            checks["executed_more_than_once"] += 1
        if task.attempts > 1:
            checks["retried"] += 1
            continue
        p = Pickup(task.due_ts, min(s))
        checks["early_starts"] += p.start_ts < p.due_ts
        out.append(p)
    return out, checks


@dataclasses.dataclass(frozen=True)
class Window:
    label: str
    start_s: float           # since t0
    end_s: float
    users: int | None
    target_per_s: float | None
    ramp_s: float = 0.0      # its first seconds, left out of its figures

    @property
    def measured_from_s(self) -> float:
        return min(self.end_s, self.start_s + self.ramp_s)


def step_windows(plan: Plan, rec: Records, t0: float, end_s: float) -> list[Window]:
    """Each step from when the shape moved to it (its record) to the next; then the drain."""
    starts = [rec.step_starts.get(s.index, t0 + s.index * plan.step_s) - t0 for s in plan.steps]
    starts[0] = 0.0   # the shape enters step 0 a few ms before the master's clock reset (t0)
    load_end = (rec.shape_end - t0) if rec.shape_end else plan.load_s
    # The users a step adds make their first calls at random points of their first period:
    # until then the step offers less than its target, so its figures start one period in.
    ramp_s = 1 / plan.user_rate
    out = [Window(s.label, starts[i], starts[i + 1] if i + 1 < len(starts) else load_end, s.users, s.target_per_s,
                  ramp_s) for i, s in enumerate(plan.steps)]
    out.append(Window("drain", load_end, max(load_end, end_s), None, None))
    return out


def window_of(windows: list[Window], t_s: float) -> Window | None:
    return next((w for w in windows if w.start_s <= t_s < w.end_s), None)


def samples_between(samples: list[Sample], lo: float, hi: float) -> tuple[Sample, Sample] | None:
    """The samples nearest to unix times lo and hi (None without two distinct ones)."""
    if len(samples) < 2:
        return None
    a = min(samples, key=lambda s: abs(s.t - lo))
    b = min(samples, key=lambda s: abs(s.t - hi))
    return (a, b) if b.t > a.t else None


def cpu_between(samples: list[Sample], lo: float, hi: float) -> dict[str, Any]:
    """Machine busy % of all cores, and cores used by each process group, between lo and hi."""
    pair = samples_between(samples, lo, hi)
    if pair is None:
        return {}
    a, b = pair
    span = b.t - a.t
    busy = 100 * (b.busy_jiffies - a.busy_jiffies) / max(1.0, b.total_jiffies - a.total_jiffies)
    return {"machine_busy_pct": round(busy, 1),
            "cores": {g: round((b.cpu_s[g] - a.cpu_s.get(g, 0.0)) / span, 2) for g in b.cpu_s}}


def by_second(values: Iterable[tuple[float, Any]], t0: float) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = collections.defaultdict(list)
    for t, v in values:
        out[math.floor(t - t0)].append(v)
    return out


def timeline(t0: float, length_s: int, windows: list[Window], rec: Records, completions: dict[int, int],
             picks: list[Pickup], samples: list[Sample]) -> list[dict[str, Any]]:
    """One row per second since t0."""
    calls = by_second(((c.t, c) for c in rec.calls), t0)
    uerr = by_second(((t, e) for t, e in rec.user_errors), t0)
    due = by_second(((p.due_ts, p.ms) for p in picks), t0)
    execd = by_second(((p.start_ts, 1) for p in picks), t0)
    rows = []
    for i in range(length_s):
        w = window_of(windows, i + 0.5)
        lat = sorted(due.get(i, []))
        pair = samples_between(samples, t0 + i, t0 + i + 1)
        node: dict[str, float | None] = {"node_submitted": None, "node_succeeded": None, "heap": None,
                                         "in_flight": None, "machine_busy_pct": None}
        if pair:
            a, b = pair
            span = b.t - a.t
            node = {"node_submitted": round((b.node["submitted"] - a.node["submitted"]) / span),
                    "node_succeeded": round((b.node["succeeded"] - a.node["succeeded"]) / span),
                    "heap": b.node["heap"], "in_flight": b.node["in_flight"],
                    "machine_busy_pct": round(100 * (b.busy_jiffies - a.busy_jiffies)
                                              / max(1.0, b.total_jiffies - a.total_jiffies), 1)}
        cs = calls.get(i, [])
        rows.append({"t_s": i, "step": w.label if w else None, "target_per_s": w.target_per_s if w else None,
                     "accepted": sum(c.accepted for c in cs), "calls": len(cs),
                     "errors": sum(1 for c in cs if c.error) + len(uerr.get(i, [])),
                     "completed": completions.get(i, 0), "executed": len(execd.get(i, [])),
                     "pickup_n": len(lat), "pickup_p50_ms": percentile(lat, 50),
                     "pickup_p99_ms": percentile(lat, 99), **node})
    return rows


def window_figures(w: Window, t0: float, rec: Records, completions: dict[int, int], picks: list[Pickup],
                   samples: list[Sample]) -> dict[str, Any]:
    """A step's (or the drain's) figures: rates over its length, pickup of the tasks due in it."""
    lo, hi = t0 + w.measured_from_s, t0 + w.end_s
    span = max(1e-6, w.end_s - w.measured_from_s)
    cs = [c for c in rec.calls if lo <= c.t < hi]
    accepted = sum(c.accepted for c in cs)
    # Whole seconds of completions, weighted by how much of each second lies in the window.
    completed = sum(n * max(0.0, min(s + 1, w.end_s) - max(s, w.measured_from_s)) for s, n in completions.items())
    return {"step": w.label, "start_s": round(w.start_s, 2), "end_s": round(w.end_s, 2),
            "measured_from_s": round(w.measured_from_s, 2), "users": w.users,
            "target_per_s": w.target_per_s, "accepted": accepted, "accepted_per_s": accepted / span,
            "completed": round(completed), "completed_per_s": completed / span,
            "executed_per_s": sum(1 for p in picks if lo <= p.start_ts < hi) / span,
            "pickup_ms": summarize_ms([p.ms for p in picks if lo <= p.due_ts < hi]),
            "submit_batch_ms": summarize_ms([c.ms for c in cs if not c.error]),
            "calls": len(cs), "failures": sum(1 for c in cs if c.error),
            "user_errors": sum(1 for t, _e in rec.user_errors if lo <= t < hi),
            "error_samples": sorted({c.error for c in cs if c.error})[:3],
            "cpu": cpu_between(samples, lo, hi)}


# ---------------------------------------------------------------- the run

@dataclasses.dataclass
class Running:
    """What is up, so that the cleanup stops exactly that."""
    world: World | None = None
    nodes: list[NodeProcess] = dataclasses.field(default_factory=list)
    executors: Executors | None = None
    locust: LocustProcesses | None = None
    sampler: Sampler | None = None

    def cleanup(self) -> list[str]:
        """Stop everything (Locust, sampler, executors, nodes) by PID, then drop the world.
        Never raises: each part is stopped even when another one fails."""
        problems: list[str] = []

        def attempt(what: str, stop: Callable[[], object]) -> None:
            try:
                stop()
            except Exception as exc:
                problems.append(f"stopping {what}: {type(exc).__name__}: {exc}")
        if self.locust is not None:
            attempt("locust", functools.partial(stop_locust, self.locust))
        if self.sampler is not None:
            attempt("sampler", self.sampler.stop)
        if self.executors is not None:
            attempt("executors", functools.partial(self.executors.stop, timeout_s=5))
        if self.nodes:
            attempt("nodes", lambda: problems.extend(stop_nodes(self.nodes, 30.0)))
        self.locust, self.sampler, self.executors, self.nodes = None, None, None, []
        if self.world is not None:
            problems += drop_world(self.world)
            self.world = None
        return problems


def process_groups(running: Running) -> dict[str, list[int]]:
    groups = {"taskring nodes": [n.pid for n in running.nodes],
              "executors": [p for p in (running.executors.pids if running.executors else []) if p is not None],
              "locust": [p.pid for p in running.locust.all] if running.locust else [],
              "this process": [os.getpid()]}
    groups.update({name: [pid] for name, pid in stack_pids().items()})
    return groups


def run(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="locust_steps_"))
    task_types = spread_task_types()
    stack = StackEndpoints.from_env()
    result: dict[str, Any] = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                              "run_dir": str(run_dir), "params": params_of(args, plan, len(task_types)),
                              "machine": machine_facts(stack.host, stack.mysql_port, stack.mysql_user)}
    running = Running()
    try:
        running.world = world = create_world(stack, "locust-steps", run_dir, SLOTS, run_id=uuid.uuid4().hex[:8])
        say(f"world: database {world.database}, ZooKeeper {world.zk_hosts}, topics {world.topic_prefix}.*;"
            f" logs in {run_dir}")
        running.nodes = start_nodes(world, args.nodes, run_dir, args.route_threshold_ms, args.node_log_level)
        result["nodes"] = [{"node_id": n.node_id, "pid": n.pid, "target": n.target} for n in running.nodes]
        running.executors = Executors(world, task_types, args.executors, args.max_in_flight)
        running.executors.start()
        say(f"nodes {[n.target for n in running.nodes]} ready; executors {running.executors.pids}; warm-up ...")
        warm_up(world, running.nodes[0].target, running.executors, task_types)
        warm_executed = running.executors.executed()

        say(f"locust: {args.locust_workers} workers, steps {[s.users for s in plan.steps]} users x "
            f"{plan.user_rate:.3g} calls/s x {plan.batch} tasks = {[round(s.target_per_s) for s in plan.steps]}"
            f" tasks/s, {plan.step_s:g} s each ...")
        running.locust = lp = start_locust(plan, [n.target for n in running.nodes], task_types, args.locust_workers,
                                           args.delay_ms, run_dir)
        running.sampler = sampler = Sampler(running.nodes, process_groups(running))
        sampler.start()
        follow_locust(lp, sampler, plan.load_s + 90)
        stop_locust(lp)
        result["locust"] = locust_summary(lp)
        rec = read_records(lp.record_dir)
        if rec.shape_start is None:
            raise RuntimeError(f"Locust never started its shape; log:\n{lp.master.log_tail()}")
        t0 = rec.shape_start
        acked = sum(c.accepted for c in rec.calls)
        say(f"load done: {acked:,} tasks acked in {len(rec.calls):,} calls; draining (at most {args.drain_s:g} s) ...")
        drain = wait_done(world, running.executors, warm_executed + acked, t0, acked, args.drain_s, "drain")
        sampler.stop()
        starts = starts_by_task(running.executors.stop())
        running.executors = None
        completions, tasks = store_completions(world, t0), store_tasks(world, t0)
    finally:
        problems = running.cleanup()
        result["cleanup_problems"] = problems
        if problems:
            say("cleanup problems: " + "; ".join(problems))
    result.update(analyse(plan, t0, rec, completions, tasks, starts, sampler.samples, drain))
    result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return result


def analyse(plan: Plan, t0: float, rec: Records, completions: dict[int, int], tasks: dict[str, StoredTask],
            starts: dict[str, list[float]], samples: list[Sample], drain: dict[str, Any]) -> dict[str, Any]:
    picks, checks = pickups(tasks, starts)
    last = max([t0 + plan.load_s] + [p.start_ts for p in picks] + [t0 + s + 1 for s in completions])
    length_s = math.ceil(last - t0)
    windows = step_windows(plan, rec, t0, length_s)
    by_status = collections.Counter(t.status for t in tasks.values())
    return {
        "t0": t0,
        "steps": [window_figures(w, t0, rec, completions, picks, samples) for w in windows],
        "totals": {"acked": sum(c.accepted for c in rec.calls), "calls": len(rec.calls),
                   "failures": sum(1 for c in rec.calls if c.error), "user_errors": len(rec.user_errors),
                   "stored": len(tasks), "by_status": dict(by_status), "drain_complete": drain["complete"],
                   "drain_waited_s": round(drain["waited_s"], 2),
                   "pickup_ms": summarize_ms([p.ms for p in picks]), **checks},
        "timeline": timeline(t0, length_s, windows, rec, completions, picks, samples),
    }


def params_of(args: argparse.Namespace, plan: Plan, task_types: int) -> dict[str, Any]:
    return {"peak_per_s": plan.peak_per_s, "step_s": plan.step_s, "steps": [dataclasses.asdict(s) for s in plan.steps],
            "batch": plan.batch, "user_rate_calls_per_s": plan.user_rate, "max_user_rate": args.max_user_rate,
            "nodes": args.nodes, "mode": "single" if args.nodes == 1 else "cluster", "executors": args.executors,
            "executor_max_in_flight": args.max_in_flight, "locust_workers": args.locust_workers,
            "delay_ms": args.delay_ms, "route_threshold_ms": args.route_threshold_ms, "drain_s": args.drain_s,
            "task_types": task_types, "slots": SLOTS, "namespace": NAMESPACE,
            "locust_command": locust_command(plan, args.locust_workers)}


# ---------------------------------------------------------------- output

def format_report(result: dict[str, Any]) -> str:
    p = result["params"]
    t = result["totals"]
    L = ["# Step load with Locust: locust_steps.py", "",
         f"Run {result['started_at']} with `{result['command']}`.", "",
         "Machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()) + ".", "",
         f"System under load: {p['nodes']} taskring node(s) ({p['mode']}), {p['executors']} executor process(es)"
         f" (SDK Executor, no-op handler, max_in_flight {p['executor_max_in_flight']}), {p['task_types']} task"
         f" types over {p['slots']} slots, delay {p['delay_ms']} ms (route threshold {p['route_threshold_ms']} ms)."
         f" Load: Locust master + {p['locust_workers']} worker processes, `{p['locust_command']}`.", "",
         f"Fixed rate: each user calls SubmitBatch x {p['batch']} at a constant pace of"
         f" {p['user_rate_calls_per_s']:.4g} calls/s (locust_rate.py: Locust's `constant_throughput`, anchored at"
         " each user's random start), so a step of U users offers"
         f" U x {p['batch']} x {p['user_rate_calls_per_s']:.4g} tasks/s; the step shape only changes U. A call"
         " slower than its period is not made up for: then *accepted* falls below *target*.", "",
         "| step | users | target tasks/s | accepted tasks/s | completed tasks/s | pickup p50 ms | pickup p99 ms |"
         " pickup max ms | SubmitBatch p50 / p99 ms | Locust failures | machine busy % |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in result["steps"]:
        pk, sb = s["pickup_ms"], s["submit_batch_ms"]
        accepted, completed = fmt(s["accepted_per_s"]), fmt(s["completed_per_s"])
        if s["users"] is None:  # the drain: acks of calls still in flight when the load stopped, as a count
            accepted, completed = f"{s['accepted']:,} late acks", f"{completed} ({s['completed']:,} tasks)"
        L.append(f"| {s['step']} ({s['end_s'] - s['measured_from_s']:.0f} s) | {fmt(s['users'])} |"
                 f" {fmt(s['target_per_s'])} |"
                 f" {accepted} | {completed} | {fmt(pk.get('p50'))} |"
                 f" {fmt(pk.get('p99'))} | {fmt(pk.get('max'))} | {fmt(sb.get('p50'))} / {fmt(sb.get('p99'))} |"
                 f" {s['failures'] + s['user_errors']} | {fmt(s['cpu'].get('machine_busy_pct'))} |")
    ramp = next((s["measured_from_s"] - s["start_s"] for s in result["steps"] if s["users"]), 0.0)
    L += ["", f"Each step is measured from {ramp:.1f} s after it began (one user period: the users it adds make"
          " their first calls at random points of it) to its end; (N s) is that length. accepted: tasks acked to"
          " Locust in it, per second; completed: tasks that reached `succeeded` in the store in it (by"
          " updated_at); pickup: executor start - due time of the tasks due in it; drain: from the end of the"
          " load until the last task of the run succeeded (or the deadline). Every second of the run, ramps"
          " included: the timeline below and the chart.", "",
          f"Totals: {t['acked']:,} tasks acked in {t['calls']:,} calls, {t['failures']} failed calls,"
          f" {t['user_errors']} user errors; store {t['stored']:,} tasks {t['by_status']}; not executed"
          f" {t['not_executed']}, executed more than once {t['executed_more_than_once']}, early starts"
          f" {t['early_starts']}, retried {t['retried']}; drain complete {t['drain_complete']}"
          f" ({t['drain_waited_s']} s). Pickup over the run: p50 {fmt(t['pickup_ms'].get('p50'))} / p99"
          f" {fmt(t['pickup_ms'].get('p99'))} / max {fmt(t['pickup_ms'].get('max'))} ms.", "",
          "CPU by process group, cores used on average in each step (2 cores = 2.0):", ""]
    groups = sorted({g for s in result["steps"] for g in s["cpu"].get("cores", {})})
    L += ["| step | " + " | ".join(groups) + " |", "| --- |" + " ---: |" * len(groups)]
    for s in result["steps"]:
        cores = s["cpu"].get("cores", {})
        L.append(f"| {s['step']} | " + " | ".join(fmt(cores.get(g), 2) for g in groups) + " |")
    errors = sorted({e for s in result["steps"] for e in s["error_samples"]})
    if errors:
        L += ["", "Errors seen: " + "; ".join(f"`{e}`" for e in errors)]
    lo = result.get("locust", {})
    L += ["", f"Locust's own totals (master CSV): {lo.get('requests', '?')} requests, {lo.get('failures', '?')}"
          f" failures, exit codes master {lo.get('master_returncode')} / workers {lo.get('worker_returncodes')};"
          f" tasks accepted as each worker counted them (locustfile.py): {lo.get('workers_reported_accepted')}."
          " (The master's totals can miss the calls of the workers' last report, which they send as they quit;"
          " the records of every call, and the workers' own counts, do not.)"
          " Its summary:", "", "```", *lo.get("summary", []), "```", ""]
    L += ["<details><summary>Timeline, one row per second (also in the .json)</summary>", "",
          "| s | step | target/s | accepted | completed | executed | pickup p50 ms | pickup p99 ms | errors |"
          " node heap | in flight | busy % |",
          "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["timeline"]:
        L.append(f"| {r['t_s']} | {r['step'] or '-'} | {fmt(r['target_per_s'])} | {r['accepted']:,} |"
                 f" {r['completed']:,} | {r['executed']:,} | {fmt(r['pickup_p50_ms'])} | {fmt(r['pickup_p99_ms'])} |"
                 f" {r['errors']} | {fmt(r['heap'])} | {fmt(r['in_flight'])} | {fmt(r['machine_busy_pct'])} |")
    L += ["", "</details>", "", "Chart: locust_steps.png beside this file (or the --report-name's). Every figure: the"
          " .json.", ""]
    return "\n".join(L)


def draw_chart(result: dict[str, Any], path: pathlib.Path) -> None:
    """Throughput (target, accepted, completed) and pickup p50/p99 over time, steps marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["timeline"]
    x = [r["t_s"] + 0.5 for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 7), height_ratios=(3, 2))
    top.step(x, [r["target_per_s"] or 0 for r in rows], where="mid", color="grey", linestyle="--", label="target")
    top.plot(x, [r["accepted"] for r in rows], color="tab:blue", label="accepted (acks)")
    top.plot(x, [r["completed"] for r in rows], color="tab:green", label="completed (store: succeeded)")
    errors = [(xi, r["errors"]) for xi, r in zip(x, rows) if r["errors"]]
    if errors:
        top.scatter([e[0] for e in errors], [0] * len(errors), color="red", marker="x", zorder=3,
                    label=f"seconds with Locust failures ({sum(e[1] for e in errors)} in all)")
    top.set_ylabel("tasks/s")
    top.legend(loc="upper left", fontsize="small")
    for key, color, label in (("pickup_p50_ms", "tab:purple", "pickup p50"), ("pickup_p99_ms", "tab:red",
                                                                             "pickup p99")):
        pts = [(xi, r[key]) for xi, r in zip(x, rows) if r[key] is not None and r[key] > 0]
        bottom.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=label)
    bottom.set_yscale("log")
    bottom.set_ylabel("pickup ms (start - due), by due second")
    bottom.set_xlabel("seconds since the load started")
    bottom.legend(loc="upper left", fontsize="small")
    for s in result["steps"]:
        for ax in (top, bottom):
            ax.axvline(s["start_s"], color="black", linewidth=0.6, alpha=0.5)
            # The ramp, left out of the step's figures in the table.
            ax.axvspan(s["start_s"], s.get("measured_from_s", s["start_s"]), color="grey", alpha=0.12, linewidth=0)
        label = s["step"] if s["target_per_s"] is None else f"{s['step']}: {s['target_per_s']:,.0f}/s"
        top.annotate(label, (s["start_s"], 0), xycoords=("data", "axes fraction"), xytext=(3, 4),
                     textcoords="offset points", fontsize="small")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    p = result["params"]
    fig.suptitle(f"locust_steps: {p['nodes']} node(s) ({p['mode']}), peak {p['peak_per_s']:,.0f} tasks/s,"
                 f" {p['step_s']:g} s steps, SubmitBatch x {p['batch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_report(result: dict[str, Any], command: str) -> str:
    """format_report for report.write (the command is the result's own)."""
    return format_report(result)


def print_steps(result: dict[str, Any]) -> None:
    print(f"{'step':<8} {'users':>5} {'target/s':>9} {'accepted/s':>10} {'completed/s':>11} {'pickup p50':>10}"
          f" {'p99 ms':>8} {'errors':>6} {'busy %':>6}")
    for s in result["steps"]:
        print(f"{s['step']:<8} {fmt(s['users']):>5} {fmt(s['target_per_s']):>9} {fmt(s['accepted_per_s']):>10}"
              f" {fmt(s['completed_per_s']):>11} {fmt(s['pickup_ms'].get('p50')):>10}"
              f" {fmt(s['pickup_ms'].get('p99')):>8} {s['failures'] + s['user_errors']:>6}"
              f" {fmt(s['cpu'].get('machine_busy_pct')):>6}")
    t = result["totals"]
    print(f"acked {t['acked']:,}; store {t['by_status']}; not executed {t['not_executed']}, twice"
          f" {t['executed_more_than_once']}, early {t['early_starts']}; drain complete {t['drain_complete']}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--peak", type=float, default=5000, help="tasks/s of the 100%% step (default 5,000)")
    p.add_argument("--step-s", type=float, default=60, help="seconds of each step (default 60)")
    p.add_argument("--steps", default="25,50,75,100", help="percent of --peak of each step (default 25,50,75,100)")
    p.add_argument("--nodes", type=int, default=1, help="1: one `--single` node (default); N: N cluster nodes")
    p.add_argument("--executors", type=int, default=1, help="executor processes (default 1)")
    p.add_argument("--max-in-flight", type=int, default=2_000, help="each executor's max_in_flight (default 2,000)")
    p.add_argument("--batch", type=int, default=100, help="tasks per SubmitBatch (default 100, locustfile.py's)")
    p.add_argument("--max-user-rate", type=float, default=0.5,
                   help="at most this many SubmitBatch calls/s per Locust user (default 0.5)")
    p.add_argument("--users", type=int, default=None, help="users of the 100%% step (default: from --max-user-rate)")
    p.add_argument("--locust-workers", type=int, default=2, help="Locust worker processes (default 2)")
    p.add_argument("--delay-ms", type=int, default=0, help="delay of every task (default 0: due at once)")
    p.add_argument("--route-threshold-ms", type=int, default=5_000, help="the node's TASKRING_ROUTE_THRESHOLD_MS")
    p.add_argument("--drain-s", type=float, default=60, help="wait at most this long after the load (default 60)")
    p.add_argument("--node-log-level", default="INFO")
    report.add_report_options(p, "locust_steps", rerender=True)
    args = p.parse_args(argv)
    try:
        args.percents = [int(x) for x in args.steps.split(",") if x.strip()]
    except ValueError:
        p.error("--steps: whole percentages, comma-separated")
    if not args.percents or min(args.percents) <= 0 or args.nodes < 1 or args.locust_workers < 1:
        p.error("--steps, --nodes and --locust-workers must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if report.rerender_if_asked(args, render_report, draw_chart):
        return 0
    plan = plan_steps(args.peak, args.percents, args.batch, args.step_s, args.max_user_rate, args.users)

    def on_term(signum: int, frame: Any) -> None:  # SIGTERM: clean up as on Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    command = report.command_line("loadtest.locust_steps", argv)
    try:
        result = run(args, plan)
    except KeyboardInterrupt:
        say("interrupted: every process stopped and the world dropped")
        return 130
    result["command"] = command
    print_steps(result)
    report.publish(args, result, command, render_report, draw_chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
