"""The figures of a step load: pickups, each step's window, the per-second timeline, each step's figures.
"""
from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from harness.stats import percentile, summarize_ms
from loadtest.steps.plan import Plan
from loadtest.steps.records import Records, StoredTask
from loadtest.steps.sampling import Sample

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
