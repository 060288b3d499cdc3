"""The statistics of a run: one percentile definition, summaries, rates and windows.

Every percentile in loadtest/ (and in the tests that report one) is **nearest-rank**: the
p-th percentile of n values is the value of rank ceil(p/100 x n) in ascending order (rank 1 is the smallest; p = 0
gives the smallest, p = 100 the largest). It is always a value that was measured,
never one between two, and it needs no assumption about the shape between samples:
the p99 of 100 latencies is the 99th smallest, of 50 it is the largest (with fewer
than 100 values a p99 is the maximum). A median is the 50th percentile by the same
rule: for an even count, the lower of the two middle values.

It lives in harness/, beside what the tests use, so that a test and a benchmark mean
the same by a p99; it needs nothing but the standard library.

Before this module bench_node.py rounded the rank half to even (one rank high for an
odd p/100 x n that is a whole number) and bench_cluster.py interpolated linearly
between ranks; both now use the rule above.
"""
from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol


def percentile(values: Iterable[float], p: float) -> float | None:
    """The nearest-rank p-th percentile (0 <= p <= 100) of `values`; None when empty."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile: p must be within 0..100, got {p!r}")
    v = sorted(values)
    if not v:
        return None
    # round(): p x n / 100 in floating point can land a hair above a whole number
    # (99.9 x 1000 / 100), and ceil would then skip a rank.
    rank = math.ceil(round(p * len(v) / 100, 9))
    return v[min(len(v), max(1, rank)) - 1]


def median(values: Iterable[float]) -> float | None:
    """The 50th percentile (nearest-rank: the lower middle value of an even count)."""
    return percentile(values, 50)


def summarize_ms(values: Iterable[float]) -> dict[str, Any]:
    """count, min, p50/p90/p95/p99/p99.9, max and mean of a list of milliseconds ({"count": 0} when empty)."""
    v = sorted(values)
    if not v:
        return {"count": 0}
    return {"count": len(v), "min": v[0], "p50": percentile(v, 50), "p90": percentile(v, 90),
            "p95": percentile(v, 95), "p99": percentile(v, 99), "p999": percentile(v, 99.9), "max": v[-1],
            "mean": sum(v) / len(v)}


def tail(values: Iterable[float]) -> dict[str, Any]:
    """p50, p99, max and n: the short form of a latency in the cluster report."""
    v = sorted(values)
    return {"p50": percentile(v, 50), "p99": percentile(v, 99), "max": v[-1] if v else None, "n": len(v)}


def min_median_max(values: Iterable[float | None]) -> dict[str, Any]:
    """min / median / max of the values that are not None, and how many there were."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"min": None, "median": None, "max": None, "n": 0}
    return {"min": v[0], "median": median(v), "max": v[-1], "n": len(v)}


def rate(count: float | None, seconds: float | None) -> float | None:
    """count per second; None without a count or a positive time."""
    if count is None or not seconds or seconds <= 0:
        return None
    return count / seconds


def ratio(x: float | None, y: float | None) -> float | None:
    """x / y; None when either is missing or zero."""
    return x / y if x and y else None


def per_second(times: Iterable[float], t0: float) -> list[int]:
    """How many of `times` fall in each whole second after t0 (second 0 first)."""
    counts = collections.Counter(int(t - t0) for t in times)
    last = max(counts, default=-1)
    return [counts.get(i, 0) for i in range(last + 1)]


# ---------------------------------------------------------------- what the executors ran, per accepted task

class Acked(Protocol):
    """An accepted task as the load generator saw it."""

    @property
    def task_id(self) -> str: ...
    @property
    def due_ts(self) -> float: ...   # when it was due (SubmitResult.due_at), unix time
    @property
    def ack_ts(self) -> float: ...   # when the load generator got the batch's answer


def latency_figures(accepted: Sequence[Acked], starts: Mapping[str, list[float]]) -> dict[str, Any]:
    """Pickup or lateness (first start - due) and first start - ack, in ms; early starts,
    tasks never executed and tasks executed more than once."""
    from_due, from_ack = [], []
    early, missing, dup = [], 0, 0
    for a in accepted:
        s = starts.get(a.task_id)
        if not s:
            missing += 1
            continue
        if len(s) > 1:
            dup += 1
        first = min(s)
        d = (first - a.due_ts) * 1000
        from_due.append(d)
        from_ack.append((first - a.ack_ts) * 1000)
        if first < a.due_ts:
            early.append(round(d, 3))
    return {"from_due_ms": summarize_ms(from_due), "from_ack_ms": summarize_ms(from_ack),
            "early_starts": len(early), "earliest_ms": min(early) if early else None,
            "not_executed": missing, "executed_more_than_once": dup}


def execution_rate_windows(accepted: Sequence[Acked], starts: Mapping[str, list[float]], t_first: float,
                           t_last_ack: float) -> dict[str, Any]:
    """Executions per second while submitting and after the last ack, and per whole second."""
    firsts = sorted(min(starts[a.task_id]) for a in accepted if starts.get(a.task_id))
    if not firsts:
        return {}
    during = sum(1 for t in firsts if t <= t_last_ack)
    after = len(firsts) - during
    return {"executed_while_submitting": during,
            "executed_per_s_while_submitting": during / max(1e-6, t_last_ack - t_first),
            "executed_after_last_ack": after,
            "executed_per_s_after_last_ack": after / max(1e-6, firsts[-1] - t_last_ack) if after else None,
            "first_start_after_first_send_s": firsts[0] - t_first,
            "last_start_after_first_send_s": firsts[-1] - t_first,
            "executions_per_second_timeline": per_second(firsts, t_first)}


# ---------------------------------------------------------------- throughput through an event

def dip_figures(starts_ms: Sequence[int], first_runs: Sequence[tuple[int, int]], t_event: float, t_done: float,
                baseline_s: float, after_s: float, window_ms: int = 250) -> dict[str, Any]:
    """Throughput through one event, in `window_ms` windows of `starts_ms` (every run's
    start), from `baseline_s` before the event to `after_s` after it was done; and the
    lateness (first start - due) of the tasks of `first_runs` (due_ms, first start_ms)
    due in the baseline and around the event ([event - 1 s, done + 1 s])."""
    w = window_ms
    e_ms, d_ms = int(t_event * 1000), int(t_done * 1000)
    lo = e_ms - int(baseline_s * 1000)
    hi = d_ms + int(after_s * 1000)
    n_win = (hi - lo) // w + 1
    counts = [0] * n_win
    for s in starts_ms:
        if lo <= s < lo + n_win * w:
            counts[(s - lo) // w] += 1
    rates = [c * 1000 / w for c in counts]
    n_base = int(baseline_s * 1000) // w
    base = rates[:n_base]
    # The median: one catch-up burst from the previous handoff must not raise the bar.
    baseline = median(base) or 0.0
    after = rates[n_base:]
    below = [r < 0.8 * baseline for r in after]
    longest = run = 0
    for b in below:
        run = run + 1 if b else 0
        longest = max(longest, run)
    # The dip ends at the first window, after the first one below 80%, from which the rate
    # stays at or above 80% for a whole second (one noisy window later is not a relapse).
    first_below = next((i for i, b in enumerate(below) if b), None)
    recovered = None
    if first_below is not None:
        hold = 1000 // w
        recovered = next((i for i in range(first_below + 1, len(below))
                          if not any(below[i:i + hold]) and len(below[i:i + hold]) == hold), None)
    lat_base = [s - d for d, s in first_runs if lo <= d < e_ms]
    lat_hand = [s - d for d, s in first_runs if e_ms - 1000 <= d < d_ms + 1000]
    return {
        "window_ms": w, "baseline_per_s": baseline, "baseline_mean_per_s": statistics.mean(base) if base else 0.0,
        "baseline_window_min_per_s": min(base) if base else None,
        "baseline_windows_below_80pct": sum(1 for r in base if r < 0.8 * baseline), "baseline_windows": len(base),
        "min_window_per_s": min(after) if after else None,
        "min_window_at_s": (after.index(min(after)) * w / 1000) if after else None,
        "below_80pct_s": sum(below) * w / 1000, "longest_below_80pct_s": longest * w / 1000,
        "first_below_80pct_at_s": None if first_below is None else first_below * w / 1000,
        "recovered_at_s": None if recovered is None else recovered * w / 1000,
        "lateness_baseline_ms": tail(lat_base), "lateness_handoff_ms": tail(lat_hand),
        "windows_per_s": rates, "windows_start_s": -n_base * w / 1000,
    }
