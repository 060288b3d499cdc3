"""Once a second during a step load: the nodes' metrics and the CPU of the machine and of each
process group (bench/observe.py's readers).
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time

from harness.processes import NodeProcess
from loadtest.bench.observe import machine_jiffies, process_cpu
from loadtest.steps.locust_processes import LocustProcesses


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
