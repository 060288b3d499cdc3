"""Cluster handoff, measured: re-own time, slots moved, the throughput dip.

A private taskring cluster (its own MariaDB database, ZooKeeper chroot and
Kafka topics, dropped afterwards) of real `taskring node` processes, with an
executor process and a load-generator process, under a steady offered load
(default 500 tasks/s through SubmitBatch, spread over 64 task types, 4 per
slot, so every one of the 16 slots has traffic; 80% Kafka path, 20% MySQL path
as in tests/integration/cluster_harness.py; the world, the node processes and the
ring check are harness/'s). One run, in this order:

  ring model      cluster.ring.desired_owners for 16 and 64 slots over many
                  node-name sets: the fraction of slots a join/leave moves,
                  against the ideal 1/N (pure computation, no cluster).
  membership      joins 3->4 (n4), 4->5 (n5), leaves 5->4, 4->3 (SIGTERM):
                  slots whose owner changed, and whether each moved only to
                  or from the joining/leaving node (and never elsewhere, even
                  transiently).
  kill -9         x repeats, session timeout 3000 ms: time until every slot of
                  the victim has a new actual owner; the victim is restarted
                  and the ring settles before the next repeat.
  SIGTERM         x repeats: the same for a clean shutdown.
  kill -9         x repeats, session timeout 6000 ms (the default).

"Re-owned" = every slot the victim owned has an /owners/<slot> znode of a
survivor with its epoch written (the claim is complete). Measured three ways:
  zk stat   mtime of those znodes (ZooKeeper's own clock, the same machine's):
            exact, independent of polling;
  zk poll   the first 50 ms poll of the chroot that saw it;
  /ring     the first 50 ms poll of a survivor's /ring that saw it (the node
            caches /ring for ~1 s and refreshes its claims view on reconcile).
Also: when the victim's znodes vanished (session expiry, seen by the poll), and
each survivor's own `ownership_moves` "assigned" times.

Every event (join, leave, kill, SIGTERM) also gets: completed tasks per 250 ms
window (executor records), baseline rate (the seconds before the event),
minimum window, time below 80% of baseline, and lateness (start - due) of the
tasks due around the handoff. Every task carries its scenario in its payload,
so executions twice and lost tasks (acked but not succeeded at the end) are
counted per scenario.

    .venv/bin/python loadtest/bench_cluster.py                  # ~2.5-3 minutes
    .venv/bin/python loadtest/bench_cluster.py --repeats 1 --rate 300
    .venv/bin/python loadtest/bench_cluster.py --only ring-model

Node logs are kept in a temporary directory printed at the end (and named in
the report). Writes loadtest/reports/bench_cluster.md and .json.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import multiprocessing as mp
import os
import pathlib
import queue
import random
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from multiprocessing.process import BaseProcess
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cluster.ring import desired_owners  # noqa: E402
from cluster.slots import slot_of  # noqa: E402
from harness.processes import NodeProcess  # noqa: E402
from harness.ringcheck import ring_problems, zk_ring_view  # noqa: E402
from harness.stack import StackEndpoints  # noqa: E402
from harness.wait import wait_until  # noqa: E402
from harness.world import create_world, drop_world  # noqa: E402

REPORTS_DIR = REPO / "loadtest" / "reports"
SLOTS = 16
NS = "bench"
WINDOW_MS = 250
ROUTE_THRESHOLD_MS = 1500
TERMINAL = ("succeeded", "dead_lettered", "cancelled")


# ================================================================ the task types

def spread_task_types(per_slot: int = 4, slots: int = SLOTS) -> list[str]:
    """Task type names, exactly `per_slot` of them in every slot."""
    by_slot: dict[int, list[str]] = defaultdict(list)
    i = 0
    while any(len(by_slot[s]) < per_slot for s in range(slots)):
        name = f"t{i}"
        s = slot_of(NS, name, slots)
        if len(by_slot[s]) < per_slot:
            by_slot[s].append(name)
        i += 1
    return [n for s in range(slots) for n in by_slot[s]]


# ================================================================ child: load generator

@dataclasses.dataclass
class _LoadState:
    """What the load generator's command thread changes (under its lock) and its senders read."""
    targets: list[str]
    phase: str


def load_main(targets: list[str], rate: float, types: list[str], long_delay_share: float, threads: int,
              batch: int, cmds, counter, out_path: str, seed: int) -> None:
    """A process: submits `rate` tasks/s in batches, paced on an absolute schedule,
    round-robin over the current targets. Commands: ("targets", [...]),
    ("phase", name), ("stop",). Writes what was acknowledged to out_path."""
    from taskring import Client, TaskSpec

    state = _LoadState(targets=list(targets), phase="warmup")
    lock = threading.Lock()
    stop = threading.Event()
    acked: list[tuple[str, str, int, int]] = []          # task_id, phase, submit_ms, due_ms
    unknown: list[tuple[str, str]] = []
    errors: Counter = Counter()
    error_detail: list[tuple[int, str, str, int]] = []     # (time_ms, target, error, tasks)
    rpc_ms: list[float] = []
    behind: Counter[int] = Counter()                     # sender -> tasks skipped (fell behind)

    def commands():
        while not stop.is_set():
            try:
                cmd = cmds.get(timeout=0.1)
            except queue.Empty:
                continue
            with lock:
                if cmd[0] == "targets":
                    state.targets = list(cmd[1])
                elif cmd[0] == "phase":
                    state.phase = cmd[1]
                elif cmd[0] == "stop":
                    stop.set()

    def sender(k: int) -> None:
        rng = random.Random(seed * 100 + k)
        clients: dict[str, Client] = {}
        period = batch * threads / rate
        nxt = time.monotonic() + k * period / threads
        i = k
        try:
            while not stop.is_set():
                now = time.monotonic()
                if nxt > now:
                    stop.wait(nxt - now)
                    continue
                if now - nxt > 1.0:                      # fell behind by over a second: skip, and count it
                    skipped = int((now - nxt) / period)
                    behind[k] += skipped * batch
                    nxt += skipped * period
                nxt += period
                with lock:
                    tg, phase = state.targets, state.phase
                if not tg:
                    continue
                target = tg[i % len(tg)]
                i += 1
                client = clients.get(target)
                if client is None:
                    client = clients[target] = Client(target, rpc_timeout_s=5)
                now_ms = int(time.time() * 1000)
                specs, meta = [], []
                for _ in range(batch):
                    if rng.random() < long_delay_share:
                        delay = rng.uniform(2.0, 3.0)                       # MySQL path
                    else:
                        delay = rng.choice([0.0, 0.0, rng.uniform(0.1, 1.0)])  # Kafka path
                    due = now_ms + int(delay * 1000)
                    tid = str(uuid.uuid4())
                    specs.append(TaskSpec(NS, rng.choice(types), {"due_ms": due, "phase": phase},
                                          task_id=tid, delay=delay))
                    meta.append((tid, phase, now_ms, due))
                t0 = time.perf_counter()
                try:
                    results = client.submit_batch(specs)
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                    error_detail.append((now_ms, target, f"{type(exc).__name__}: {str(exc)[:160]}", len(meta)))
                    unknown.extend((m[0], m[1]) for m in meta)
                    continue
                rpc_ms.append((time.perf_counter() - t0) * 1000)
                ok = {r.task_id for r in results}
                acked.extend(m for m in meta if m[0] in ok)
                counter.value += len(ok)
        finally:
            for c in clients.values():
                try:
                    c.close()
                except Exception:
                    pass

    cmd_thread = threading.Thread(target=commands, daemon=True)
    cmd_thread.start()
    workers = [threading.Thread(target=sender, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    pathlib.Path(out_path).write_text(json.dumps({
        "acked": acked, "unknown": unknown, "errors": dict(errors), "error_detail": error_detail, "rpc_ms": rpc_ms,
        "skipped_behind": sum(behind.values())}))


# ================================================================ child: executor

def executor_main(zk_hosts: str, types: list[str], max_in_flight: int, ready, stop, counter, out_path: str) -> None:
    """A process: one SDK executor for every task type; every run is recorded as
    (task_id, attempt, epoch, started_ms, due_ms, phase, task_type)."""
    from taskring import Executor

    records: list[tuple] = []

    def handle(ctx) -> None:
        records.append((ctx.task_id, ctx.attempt, ctx.epoch, int(time.time() * 1000),
                        ctx.payload.get("due_ms"), ctx.payload.get("phase"), ctx.task_type))
        counter.value += 1

    ex = Executor(NS, zk_hosts=zk_hosts, max_in_flight=max_in_flight)
    for t in types:
        ex.add_handler(t, handle)
    ex.start()
    ready.set()
    stop.wait()
    ex.stop(grace_s=2)
    pathlib.Path(out_path).write_text(json.dumps(records))


# ================================================================ observers (main process)

@dataclasses.dataclass
class ZkSample:
    t: float                                   # wall time when the poll finished
    members: dict[str, int]                    # node_id -> ctime_ms of /nodes/<id>
    owners: dict[int, tuple]                   # slot -> (node, epoch, ctime_ms, mtime_ms)


class ZkObserver(threading.Thread):
    """Polls /nodes and /owners/<slot> of the chroot every `interval_s` and keeps a
    sample whenever something changed."""

    def __init__(self, hosts: str, interval_s: float = 0.05):
        super().__init__(name="zk-observer", daemon=True)
        from kazoo.client import KazooClient
        self.zk = KazooClient(hosts=hosts, timeout=10)
        # the observer's own connection: LOST/SUSPENDED = stack trouble
        self.states: list[tuple[float, str]] = []
        self.zk.add_listener(lambda state: self.states.append((time.time(), str(state))))
        self.zk.start(timeout=15)
        self.zk.ensure_path("/owners")
        self.zk.ensure_path("/nodes")
        self.interval_s = interval_s
        self.samples: list[ZkSample] = []
        self.poll_ms: list[float] = []
        self.errors = 0
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def _poll(self) -> ZkSample:
        from kazoo.exceptions import NoNodeError
        zk = self.zk
        kids = zk.get_children("/owners")
        nodes = zk.get_children("/nodes")
        a_own = [(c, zk.get_async(f"/owners/{c}")) for c in kids]
        a_nodes = [(n, zk.exists_async(f"/nodes/{n}")) for n in nodes]
        owners = {}
        for c, a in a_own:
            try:
                data, st = a.get(timeout=5)
            except NoNodeError:
                continue
            try:
                d = json.loads(data or b"{}")
            except ValueError:
                d = {}
            owners[int(c)] = (d.get("node"), d.get("epoch"), st.ctime, st.mtime)
        members = {}
        for n, a in a_nodes:
            st = a.get(timeout=5)
            if st is not None:
                members[n] = st.ctime
        return ZkSample(time.time(), members, owners)

    def run(self) -> None:
        last = None
        while not self._halt.is_set():
            t0 = time.perf_counter()
            try:
                s = self._poll()
            except Exception:
                self.errors += 1
                self._halt.wait(self.interval_s)
                continue
            self.poll_ms.append((time.perf_counter() - t0) * 1000)
            key = (s.members, s.owners)
            with self._lock:
                if key != last:                     # unchanged: keep the first-seen time
                    self.samples.append(s)
                    last = key
            self._halt.wait(max(0.0, self.interval_s - (time.perf_counter() - t0)))

    def stop(self) -> None:
        self._halt.set()
        self.join(5)
        self.zk.stop()
        self.zk.close()

    def latest(self) -> ZkSample | None:
        with self._lock:
            return self.samples[-1] if self.samples else None

    def since(self, t: float) -> list[ZkSample]:
        """Samples from the state current at `t` on (that one stamped with its own time)."""
        with self._lock:
            out = [s for s in self.samples if s.t >= t]
            before = [s for s in self.samples if s.t < t]
        return ([before[-1]] if before else []) + out

    def wait(self, pred: Callable[[ZkSample], bool], since: float, timeout_s: float, what: str) -> ZkSample:
        """The first sample, from the state at `since` on, for which pred holds."""
        def first() -> ZkSample | None:
            return next((dataclasses.replace(s, t=max(s.t, since)) for s in self.since(since) if pred(s)), None)
        try:
            return wait_until(first, timeout_s, what, 0.02)
        except AssertionError as exc:
            raise TimeoutError(f"{exc}; latest: {self.latest()}") from None


def settled_pred(members: set[str]) -> Callable[[ZkSample], bool]:
    """harness/ringcheck.py's check, on what ZooKeeper holds."""
    def pred(s: ZkSample) -> bool:
        return not ring_problems(zk_ring_view(s.members, s.owners, SLOTS), members)
    return pred


class RingPoller(threading.Thread):
    """GET /ring of one node every 50 ms; keeps (t_received, generated_at, {slot: actual_owner})."""

    def __init__(self, admin_url: str, interval_s: float = 0.05):
        super().__init__(name="ring-poller", daemon=True)
        self.url = admin_url + "/ring"
        self.interval_s = interval_s
        self.polls: list[tuple[float, float | None, dict[int, str | None]]] = []
        self.errors = 0
        self.request_ms: list[float] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=3) as r:
                    ring = json.loads(r.read())
                self.polls.append((time.time(), ring.get("generated_at"),
                                   {s["slot"]: s["actual_owner"] for s in ring["slots"]}))
                self.request_ms.append((time.perf_counter() - t0) * 1000)
            except Exception:
                self.errors += 1
            self._halt.wait(max(0.0, self.interval_s - (time.perf_counter() - t0)))

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

    def first(self, pred: Callable[[dict], bool], since: float):
        for t, gen, owners in self.polls:
            if t >= since and pred(owners):
                return t, gen
        return None, None


class Neighbours(threading.Thread):
    """Once a second: the machine's CPU busy share and load average, and the CPU time of
    every process by group: the nodes, the executor and load processes and this one
    (the benchmark), the stack servers (mariadbd, Kafka, ZooKeeper), and anything else
    (a colleague's run, a build): on a shared 2-core machine, the first suspect for an
    odd figure."""

    STACK = re.compile(r"mariadbd|kafka\.Kafka|ZooKeeperServerMain")

    def __init__(self):
        super().__init__(name="neighbours", daemon=True)
        self.me = os.getpid()
        self.tick = os.sysconf("SC_CLK_TCK")
        self.roles: dict[int, tuple[str, str]] = {self.me: ("bench", "main")}   # pid -> (group, name)
        self.samples: list[tuple[float, float, float, dict[str, float]]] = []  # t, busy, loadavg, group -> cores
        self.cpu_s: defaultdict[tuple[str, str], float] = defaultdict(float)  # (group, name) -> CPU s
        self.seen: dict[str, list[float]] = {}                                 # other command -> [first, last]
        self._prev: dict[int, int] = {}
        self._halt = threading.Event()

    @staticmethod
    def _cpu() -> tuple[int, int]:
        f = [int(x) for x in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = f[3] + (f[4] if len(f) > 4 else 0)
        return sum(f), idle

    def _role(self, pid: int, ppid: int, d: pathlib.Path, t: float) -> tuple[str, str]:
        if pid in self.roles:
            return self.roles[pid]
        if ppid == self.me:
            return ("bench", "child")
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = ""
        m = self.STACK.search(cmd)
        if m:
            return ("stack", m.group(0))
        key = re.sub(r"--(grpc|admin)-port \d+", "", cmd or "[kernel threads]")
        key = re.sub(r"\S*go-build\S*", "<go-build>", key)[:100]
        self.seen.setdefault(key, [t, t])[1] = t
        return ("others", key)

    def _scan(self, t: float, dt_s: float) -> dict[str, float]:
        cur: dict[int, int] = {}
        groups: defaultdict[str, float] = defaultdict(float)                   # group -> CPU s
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            pid = int(d.name)
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
                ppid, ticks = int(f[1]), int(f[11]) + int(f[12])
            except (OSError, ValueError, IndexError):
                continue
            cur[pid] = ticks
            if pid not in self._prev:
                continue                                  # first sight: no delta yet
            delta = (ticks - self._prev[pid]) / self.tick
            if delta <= 0:
                continue
            group, name = self._role(pid, ppid, d, t)
            self.cpu_s[(group, name)] += delta
            groups[group] += delta
        self._prev = cur
        return {g: v / dt_s for g, v in groups.items()} if dt_s > 0 else {}

    def run(self) -> None:
        last = self._cpu()
        t_last = time.time()
        self._scan(t_last, 0)
        while not self._halt.wait(1.0):
            now = self._cpu()
            total, idle = now[0] - last[0], now[1] - last[1]
            last = now
            t = time.time()
            groups = self._scan(t, t - t_last)
            t_last = t
            self.samples.append((t, 1 - idle / total if total else 0.0, os.getloadavg()[0], groups))

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

    def window(self, lo: float, hi: float) -> dict[str, Any]:
        """Mean CPU busy share and cores per group over the samples in [lo, hi]."""
        near = [x for x in self.samples if lo <= x[0] <= hi]
        if not near:
            return {}
        out: dict[str, Any] = {"cpu_busy_mean": statistics.mean(b for _, b, _, _ in near)}
        for g in ("nodes", "bench", "stack", "others"):
            vals = [gr.get(g, 0.0) for _, _, _, gr in near]
            out[f"{g}_cores_mean"] = statistics.mean(vals)
            out[f"{g}_cores_max"] = max(vals)
        return out

    def summary(self, t0: float) -> dict[str, Any]:
        busy = [b for _, b, _, _ in self.samples]
        wall = (self.samples[-1][0] - self.samples[0][0]) if len(self.samples) > 1 else 0.0
        by_group: defaultdict[str, float] = defaultdict(float)
        for (g, _n), v in self.cpu_s.items():
            by_group[g] += v
        top = sorted(((n, v) for (g, n), v in self.cpu_s.items() if g == "others"), key=lambda kv: -kv[1])[:8]
        return {"cpu_busy_mean": statistics.mean(busy) if busy else None, "cpu_busy_max": max(busy, default=None),
                "loadavg_max": max((la for _, _, la, _ in self.samples), default=None), "wall_s": wall,
                "cpu_s_by_group": dict(by_group),
                "cpu_s_by_process": {f"{g}:{n}": round(v, 2) for (g, n), v in sorted(self.cpu_s.items())
                                     if g != "others"},
                "others_top": [{"cmd": k, "cpu_s": v, "first_s": round(self.seen[k][0] - t0, 1),
                                "last_s": round(self.seen[k][1] - t0, 1)} for k, v in top],
                "per_second": [(round(t - t0, 1), round(b, 3), la, {g: round(v, 2) for g, v in gr.items()})
                               for t, b, la, gr in self.samples]}


def get_json(url: str, timeout_s: float = 3.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return json.loads(r.read())


# ================================================================ analysis helpers

def pct(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def mmm(values: list[float | None]) -> dict[str, float | None]:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"min": None, "median": None, "max": None, "n": 0}
    return {"min": min(vals), "median": statistics.median(vals), "max": max(vals), "n": len(vals)}


def dip_figures(starts_ms: list[int], first_runs: list[tuple[int, int]], t_event: float, t_done: float,
                baseline_s: float, after_s: float) -> dict[str, Any]:
    """Throughput through one event from executor start times (all runs) and lateness
    from (due_ms, first start_ms) of every task."""
    w = WINDOW_MS
    e_ms, d_ms = int(t_event * 1000), int(t_done * 1000)
    lo = e_ms - int(baseline_s * 1000)
    hi = d_ms + int(after_s * 1000)
    n_win = (hi - lo) // w + 1
    counts = [0] * n_win
    for s in starts_ms:
        if lo <= s < lo + n_win * w:
            counts[(s - lo) // w] += 1
    rate = [c * 1000 / w for c in counts]
    n_base = int(baseline_s * 1000) // w
    base = rate[:n_base]
    # The median: one catch-up burst from the previous handoff must not raise the bar.
    baseline = statistics.median(base) if base else 0.0
    after = rate[n_base:]
    threshold = 0.8 * baseline
    below = [r < threshold for r in after]
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
        "lateness_baseline_ms": {"p50": pct(lat_base, 50), "p99": pct(lat_base, 99), "max": max(lat_base, default=None),
                                 "n": len(lat_base)},
        "lateness_handoff_ms": {"p50": pct(lat_hand, 50), "p99": pct(lat_hand, 99), "max": max(lat_hand, default=None),
                                "n": len(lat_hand)},
        "windows_per_s": rate, "windows_start_s": -n_base * w / 1000,
    }


# ================================================================ ring model (pure)

def ring_model(sets_per_family: int = 100, max_nodes: int = 8, seed: int = 7) -> dict[str, Any]:
    """Moved fraction for joins N -> N+1 over many name sets, 16 and 64 slots.

    desired_owners(m, 16) is the first 16 slots of desired_owners(m, 64) (slot s is
    looked up by the key "slot-s"), so one ring per member set serves both. A
    leave N+1 -> N with the same names moves exactly the slots the join moved."""
    rng = random.Random(seed)
    families: dict[str, list[list[str]]] = {
        "random": [[f"node-{rng.getrandbits(32):08x}" for _ in range(max_nodes)] for _ in range(sets_per_family)],
        "sequential": [[f"{p}-{i}" for i in range(max_nodes)]
                       for p in (f"taskring-{rng.getrandbits(24):06x}" for _ in range(sets_per_family))],
        "n1..n8": [[f"n{i}" for i in range(1, max_nodes + 1)]],
    }
    t0 = time.perf_counter()
    stats: dict[tuple[int, int], list[float]] = defaultdict(list)       # (slots, N before) -> moved fractions
    shares: dict[tuple[int, int], list[float]] = defaultdict(list)      # (slots, N) -> largest share
    smallest: dict[tuple[int, int], list[float]] = defaultdict(list)    # (slots, N) -> smallest share (0: idle node)
    foreign = 0
    transitions = 0
    n1_to_n8: dict[str, Any] = {}
    for fam, sets in families.items():
        for names in sets:
            maps = [desired_owners(names[:k], 64) for k in range(1, max_nodes + 1)]
            for k in range(1, max_nodes + 1):
                for slots in (16, 64):
                    c = Counter(maps[k - 1][s] for s in range(slots))
                    shares[(slots, k)].append(max(c.values()) / slots)
                    smallest[(slots, k)].append(min(c.get(n, 0) for n in names[:k]) / slots)
            for k in range(1, max_nodes):
                joiner = names[k]
                for slots in (16, 64):
                    moved = [s for s in range(slots) if maps[k - 1][s] != maps[k][s]]
                    transitions += 1
                    foreign += sum(1 for s in moved if maps[k][s] != joiner)
                    stats[(slots, k)].append(len(moved) / slots)
                    if fam == "n1..n8":
                        n1_to_n8[f"{slots}:{k}->{k + 1}"] = len(moved)
    rows = []
    for (slots, k), fr in sorted(stats.items()):
        rows.append({"slots": slots, "from": k, "to": k + 1, "ideal": 1 / (k + 1), "sets": len(fr),
                     "mean": statistics.mean(fr), "min": min(fr), "max": max(fr),
                     "stdev": statistics.pstdev(fr), "joins_moving_nothing": sum(1 for f in fr if f == 0),
                     "share_of_largest_owner_after_mean": statistics.mean(shares[(slots, k + 1)]),
                     "share_of_largest_owner_after_max": max(shares[(slots, k + 1)]),
                     "share_of_smallest_owner_after_mean": statistics.mean(smallest[(slots, k + 1)]),
                     "sets_with_an_idle_node_after": sum(1 for x in smallest[(slots, k + 1)] if x == 0)})
    return {"sets": {f: len(s) for f, s in families.items()}, "rows": rows,
            "moves_to_a_node_other_than_the_joiner": foreign, "transitions": transitions,
            "n1_to_n8_moved_slots": n1_to_n8, "seconds": time.perf_counter() - t0}


# ================================================================ the cluster benchmark

def _pid(proc: BaseProcess) -> int:
    """The pid of a start()ed multiprocessing process."""
    if proc.pid is None:
        raise RuntimeError(f"process {proc.name} has not been started")
    return proc.pid


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.stack = StackEndpoints.from_env()
        self.run_id = uuid.uuid4().hex[:10]
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"taskring-bench-cluster-{self.run_id}-"))
        self.logs = self.dir / "logs"
        self.nodes: dict[str, Any] = {}          # node_id -> NodeProcess (current incarnation)
        self.session_ms: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.timeline: list[tuple[float, str]] = []
        self.types = spread_task_types()
        self.target_names: dict[str, str] = {}
        self.t_start = time.time()

    def note(self, what: str) -> None:
        t = time.time()
        self.timeline.append((t, what))
        print(f"  [{t - self.t_start:7.2f}s] {what}", flush=True)

    # ---- setup / teardown ----

    def setup(self) -> None:
        self.env = create_world(self.stack, "bench", self.logs, SLOTS, run_id=self.run_id)
        self.zk = ZkObserver(self.env.zk_hosts)
        self.zk.start()
        self.neighbours = Neighbours()
        self.neighbours.start()

    def teardown(self) -> None:
        for node in list(self.nodes.values()):
            node.stop(timeout_s=30)
        try:
            self.zk.stop()
        except Exception:
            pass
        if self.args.keep:
            print(f"kept: database {self.env.database}, ZooKeeper {self.env.zk_hosts},"
                  f" topics {self.env.topic_prefix}.*")
            return
        for problem in drop_world(self.env):
            print(f"warning: could not drop {problem}")

    # ---- nodes ----

    def start_node(self, node_id: str, session_ms: int):
        node = NodeProcess(self.env, node_id, TASKRING_ZK_SESSION_TIMEOUT_MS=str(session_ms),
                           TASKRING_ROUTE_THRESHOLD_MS=str(ROUTE_THRESHOLD_MS)).start()
        self.nodes[node_id] = node
        self.session_ms[node_id] = session_ms
        self.target_names[node.target] = node_id
        self.neighbours.roles[node.proc.pid] = ("nodes", node_id)
        return node

    def live(self) -> list[str]:
        return sorted(n for n, p in self.nodes.items() if p.alive())

    def wait_settled(self, members: set[str], since: float, timeout_s: float = 40.0) -> ZkSample:
        return self.zk.wait(settled_pred(members), since, timeout_s, f"the ring to settle on {sorted(members)}")

    def set_targets(self, exclude: Collection[str] = frozenset()) -> None:
        tg = [self.nodes[n].target for n in self.live() if n not in exclude]
        self.load_cmds.put(("targets", tg))

    def set_phase(self, phase: str) -> None:
        self.load_cmds.put(("phase", phase))

    # ---- load and executor processes ----

    def start_workers(self) -> None:
        ctx = mp.get_context("spawn")
        self.exec_ready, self.exec_stop = ctx.Event(), ctx.Event()
        self.exec_count = ctx.Value("q", 0, lock=False)
        self.exec_out = self.dir / "executions.json"
        self.exec_proc = ctx.Process(target=executor_main, name="bench-executor",
                                     args=(self.env.zk_hosts, self.types, self.args.max_in_flight,
                                           self.exec_ready, self.exec_stop, self.exec_count, str(self.exec_out)))
        self.exec_proc.start()
        self.neighbours.roles[_pid(self.exec_proc)] = ("bench", "executor")
        if not self.exec_ready.wait(60):
            raise RuntimeError("the executor process did not start")
        self.load_cmds = ctx.Queue()
        self.load_count = ctx.Value("q", 0, lock=False)
        self.load_out = self.dir / "acked.json"
        self.load_proc = ctx.Process(target=load_main, name="bench-load",
                                     args=([self.nodes[n].target for n in self.live()], self.args.rate, self.types,
                                           self.args.long_delay_share, self.args.load_threads, self.args.batch,
                                           self.load_cmds, self.load_count, str(self.load_out), 11))
        self.load_proc.start()
        self.neighbours.roles[_pid(self.load_proc)] = ("bench", "load")

    def wait_flowing(self, n: int = 500, timeout_s: float = 30) -> None:
        a0, e0 = self.load_count.value, self.exec_count.value
        wait_until(lambda: self.load_count.value - a0 >= n and self.exec_count.value - e0 >= n, timeout_s,
                   f"load to flow ({n} more acked and executed)", 0.1)

    # ---- scenarios ----

    def owners_of(self, sample: ZkSample, node_id: str) -> set[int]:
        return {s for s, o in sample.owners.items() if o[0] == node_id}

    def membership_change(self, name: str, *, join: str | None = None, leave: str | None = None) -> dict[str, Any]:
        node = join or leave                                # the node that joins or leaves
        if node is None:
            raise ValueError(f"{name}: membership_change needs join= or leave=")
        before_members = set(self.live())
        after_members = before_members | {node} if join else before_members - {node}
        self.set_phase(name)
        before = self.wait_settled(before_members, time.time())
        time.sleep(self.args.quiet_s + self.args.baseline_s)
        t_event = time.time()
        rec: dict[str, Any] = {"name": name, "kind": "join" if join else "leave", "node": node,
                               "members_before": sorted(before_members), "members_after": sorted(after_members),
                               "t_event": t_event}
        if join:
            self.note(f"{name}: start {join}")
            self.start_node(join, self.args.session_ms)
            reg = self.zk.wait(lambda s: join in s.members, t_event, 30, f"{join} to register")
            rec["t_registered"] = reg.members[join] / 1000
            rec["registered_after_start_s"] = rec["t_registered"] - t_event
            t_from = rec["t_registered"]
        else:
            self.note(f"{name}: SIGTERM {node}")
            self.set_targets(exclude={node})
            proc = self.nodes[node]
            t_event = rec["t_event"] = time.time()
            proc.proc.send_signal(signal.SIGTERM)
            exited = threading.Thread(target=proc.proc.wait, daemon=True)
            exited.start()
            t_from = t_event
        after = self.wait_settled(after_members, t_event)
        if not join:
            exited.join(30)
            rec["exit_code"] = self.nodes[node].proc.returncode
        self.note(f"{name}: settled")
        self.set_targets()
        b, a = ({s: o[0] for s, o in before.owners.items()}, {s: o[0] for s, o in after.owners.items()})
        moved = sorted(s for s in range(SLOTS) if b.get(s) != a.get(s))
        only_that_node = all((a[s] == node) if join else (b[s] == node) for s in moved)
        # Every owner any slot had in between (None = unclaimed for a moment).
        seen: dict[int, list] = defaultdict(list)
        for s in self.zk.since(t_event):
            if s.t > after.t:
                break
            for slot in range(SLOTS):
                o = s.owners.get(slot, (None,))[0]
                if not seen[slot] or seen[slot][-1] != o:
                    seen[slot].append(o)
        transient = {slot: seq for slot, seq in seen.items()
                     if any(o is not None and o not in (b.get(slot), a.get(slot)) for o in seq)}
        predicted = sorted(s for s in range(SLOTS)
                           if desired_owners(before_members, SLOTS)[s] != desired_owners(after_members, SLOTS)[s])
        mtimes = [after.owners[s][3] / 1000 for s in moved]
        rec.update({
            "moved_slots": moved, "moved": len(moved), "ideal": SLOTS / max(len(before_members), len(after_members)),
            "moved_fraction": len(moved) / SLOTS, "ideal_fraction": 1 / max(len(before_members), len(after_members)),
            "only_to_from_that_node": only_that_node, "predicted_by_ring": predicted,
            "matches_ring": predicted == moved, "transient_other_owners": {str(k): v for k, v in transient.items()},
            "handoff_s_zk_stat": (max(mtimes) - t_from) if mtimes else 0.0,
            "settled_s_zk_poll": after.t - t_from, "t_done": after.t,
        })
        time.sleep(self.args.after_s)
        self.events.append(rec)
        return rec

    def reown(self, name: str, victim: str, how: str, restart_session_ms: int) -> dict[str, Any]:
        members = set(self.live())
        survivors = members - {victim}
        self.set_phase(name)
        self.wait_settled(members, time.time())
        time.sleep(self.args.quiet_s + self.args.baseline_s)
        snap = self.zk.latest()
        assert snap is not None, "the ZooKeeper observer has samples once the ring has settled"
        victim_slots = sorted(self.owners_of(snap, victim))
        old_epochs = {s: snap.owners[s][1] for s in victim_slots}
        via = sorted(survivors)[0]
        ring = RingPoller(self.nodes[via].admin)
        ring.start()
        time.sleep(0.3)                                     # a few /ring polls before the event
        self.set_targets(exclude={victim})
        proc = self.nodes[victim]
        self.note(f"{name}: {how} {victim} (session {self.session_ms[victim]} ms, slots {victim_slots})")
        t_event = time.time()
        if how == "kill -9":
            proc.proc.kill()
        else:
            proc.proc.send_signal(signal.SIGTERM)
        t_exit: list[float] = []

        def wait_exit() -> None:
            proc.proc.wait()
            t_exit.append(time.time())
        waiter = threading.Thread(target=wait_exit, daemon=True)
        waiter.start()

        def reowned(s: ZkSample) -> bool:
            return all(s.owners.get(x, (None, None))[0] in survivors and s.owners[x][1] is not None
                       for x in victim_slots)

        timeout = self.session_ms[victim] / 1000 + 20
        got = self.zk.wait(reowned, t_event, timeout, f"{victim}'s slots to be re-owned")
        gone = self.zk.wait(lambda s: victim not in s.members and not self.owners_of(s, victim), t_event, timeout,
                            f"{victim}'s znodes to vanish")
        done = self.wait_settled(survivors, t_event)
        self.note(f"{name}: re-owned after {got.t - t_event:.2f} s (zk poll)")
        # /ring: wait until it shows the new owners (it lags by its cache), then stop polling.
        deadline = time.monotonic() + 5
        while ring.first(lambda o: all(o.get(x) in survivors for x in victim_slots), t_event)[0] is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        ring.stop()
        ring_t, ring_gen = ring.first(lambda o: all(o.get(x) in survivors for x in victim_slots), t_event)
        # The survivors' own record of when they took each slot.
        assigned: dict[int, tuple[str, float]] = {}
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(assigned) < len(victim_slots):
            for n in sorted(survivors):
                try:
                    st = get_json(self.nodes[n].admin + "/ring")["node_status"]
                except Exception:
                    continue
                for t, slot, kind in st.get("ownership_moves", []):
                    if kind == "assigned" and slot in victim_slots and t >= t_event:
                        assigned[slot] = (n, t)
            if len(assigned) < len(victim_slots):
                time.sleep(0.3)
        waiter.join(30)
        new = {x: got.owners[x] for x in victim_slots}
        rec = {
            "name": name, "kind": how, "victim": victim, "victim_session_ms": self.session_ms[victim],
            "survivor_session_ms": {n: self.session_ms[n] for n in sorted(survivors)},
            "victim_slots": victim_slots, "t_event": t_event, "t_done": got.t,
            "reown_s_zk_stat": max(o[3] for o in new.values()) / 1000 - t_event if new else 0.0,
            "first_claim_s_zk_stat": min(o[2] for o in new.values()) / 1000 - t_event if new else 0.0,
            "last_claim_created_s_zk_stat": max(o[2] for o in new.values()) / 1000 - t_event if new else 0.0,
            "reown_s_zk_poll": got.t - t_event,
            "victim_znodes_gone_s_zk_poll": gone.t - t_event,
            "reown_s_ring_poll": None if ring_t is None else ring_t - t_event,
            "ring_generated_at_s": None if ring_gen is None else ring_gen - t_event,
            "ring_polls": len(ring.polls), "ring_poll_errors": ring.errors,
            "ring_request_ms_p50": pct(ring.request_ms, 50), "ring_request_ms_max": max(ring.request_ms, default=None),
            "reown_s_node_moves": (max(t for _, t in assigned.values()) - t_event) if len(assigned) == len(victim_slots)
            else None,
            "node_moves_found": len(assigned),
            "settled_s_zk_poll": done.t - t_event,
            "process_exit_s": (t_exit[0] - t_event) if t_exit else None,
            "exit_code": proc.proc.returncode,
            "new_owners": {str(x): new[x][0] for x in victim_slots},
            "epochs": {str(x): [old_epochs[x], new[x][1]] for x in victim_slots},
            "epochs_bumped": all(new[x][1] > old_epochs[x] for x in victim_slots),
        }
        time.sleep(self.args.after_s)
        self.events.append(rec)
        # Bring the victim back (the next repeat needs three nodes).
        if restart_session_ms:
            t_back = time.time()
            self.start_node(victim, restart_session_ms)
            self.wait_settled(members, t_back)
            self.set_targets()
            rec["restart_to_settled_s"] = time.time() - t_back
            self.note(f"{name}: {victim} back (session {restart_session_ms} ms), settled")
        return rec

    # ---- the run ----

    def run(self) -> dict[str, Any]:
        a = self.args
        result: dict[str, Any] = {"params": {k: v for k, v in vars(a).items() if k != "report_dir"},
                                  "run_id": self.run_id, "logs": str(self.logs)}
        self.setup()
        try:
            self.note("starting n1, n2, n3")
            t0 = time.time()
            for n in ("n1", "n2", "n3"):
                self.start_node(n, a.session_ms)
            for n in ("n1", "n2", "n3"):
                self.nodes[n].wait_ready(60)
            s = self.wait_settled({"n1", "n2", "n3"}, t0, 60)
            result["startup_to_settled_s"] = s.t - t0
            self.note("settled; starting the executor and the load")
            self.start_workers()
            self.wait_flowing()
            self.note(f"load flowing ({a.rate:.0f} tasks/s offered)")
            self.load_cmds.put(("phase", "warmup"))
            time.sleep(2)

            self.membership_change("join-3to4", join="n4")
            self.membership_change("join-4to5", join="n5")
            self.membership_change("leave-5to4", leave="n5")
            self.membership_change("leave-4to3", leave="n4")
            victims = ["n3", "n1", "n2"]
            for i in range(a.repeats):
                v = victims[i % 3]
                self.reown(f"kill9-{a.session_ms}-{i + 1}", v, "kill -9", a.session_ms)
            for i in range(a.repeats):
                v = victims[i % 3]
                # Restarted with the default timeout, ready for the kill -9 series with it.
                self.reown(f"sigterm-{i + 1}", v, "SIGTERM", a.default_session_ms)
            for i in range(a.repeats):
                v = victims[i % 3]
                if self.session_ms[v] != a.default_session_ms:   # only when repeats > 3
                    t_b = time.time()
                    self.nodes[v].terminate(30)
                    self.start_node(v, a.default_session_ms)
                    self.wait_settled(set(self.nodes) & set(self.live()) | {v}, t_b)
                last = i == a.repeats - 1
                self.reown(f"kill9-{a.default_session_ms}-{i + 1}", v, "kill -9",
                           0 if last else a.default_session_ms)
            self.set_phase("cooldown")
            self.note("stopping the load; draining")
            self.load_cmds.put(("stop",))
            self.load_proc.join(60)
            result["drain"] = self.drain()
            self.note("drained")
            self.exec_stop.set()
            self.exec_proc.join(60)
            result["machine_during"] = {"loadavg": os.getloadavg()}
            result["counts"] = self.count()
            result["events"] = self.events
            result["zk_observer_states"] = [(t, st) for t, st in self.zk.states if st != "CONNECTED"]
            self.neighbours.stop()
            result["neighbours"] = self.neighbours.summary(self.t_start)
            result["zk_poll_ms"] = {"p50": pct(self.zk.poll_ms, 50), "p99": pct(self.zk.poll_ms, 99),
                                    "max": max(self.zk.poll_ms, default=None), "n": len(self.zk.poll_ms),
                                    "errors": self.zk.errors}
            result["log_findings"] = scan_logs(self.logs)
        finally:
            for p in ("load_proc", "exec_proc"):
                proc = getattr(self, p, None)
                if proc is not None and proc.is_alive():
                    if p == "load_proc":
                        self.load_cmds.put(("stop",))
                    else:
                        self.exec_stop.set()
                    proc.join(30)
                    if proc.is_alive():
                        proc.terminate()
            self.teardown()
        result["timeline"] = [(round(t - self.t_start, 3), w) for t, w in self.timeline]
        return result

    def drain(self) -> dict[str, Any]:
        t0 = time.time()
        deadline = time.monotonic() + self.args.drain_timeout_s
        counts = {}
        while time.monotonic() < deadline:
            counts = self.env.status_counts()
            if sum(v for k, v in counts.items() if k not in TERMINAL) == 0:
                break
            time.sleep(0.5)
        # the executor may still report a run or two
        time.sleep(0.5)
        return {"seconds": time.time() - t0, "status_counts": counts,
                "complete": sum(v for k, v in counts.items() if k not in TERMINAL) == 0}

    def count(self) -> dict[str, Any]:
        acked_doc = json.loads(self.load_out.read_text())
        runs = json.loads(self.exec_out.read_text())
        stored = dict(self.env.sql("SELECT task_id, status FROM tasks"))
        self.acked_doc, self.runs = acked_doc, runs
        by_phase_acked: dict[str, list[str]] = defaultdict(list)
        for tid, phase, _sub, _due in acked_doc["acked"]:
            by_phase_acked[phase].append(tid)
        runs_by_task: Counter = Counter(r[0] for r in runs)
        attempts_by_task: dict[str, Counter] = defaultdict(Counter)
        phase_of: dict[str, str] = {}
        for tid, attempt, _ep, _st, _due, phase, _tt in runs:
            attempts_by_task[tid][attempt] += 1
            phase_of[tid] = phase
        unknown_ids = {u[0] for u in acked_doc["unknown"]}
        unknown_by_phase: dict[str, list[str]] = defaultdict(list)
        for tid, phase in acked_doc["unknown"]:
            unknown_by_phase[phase].append(tid)
        first_run: dict[str, tuple] = {}
        for x in runs:
            if x[0] not in first_run or x[3] < first_run[x[0]][3]:
                first_run[x[0]] = x
        ev_t = {e["name"]: e["t_event"] for e in self.events}
        per_phase = {}
        phases = list(dict.fromkeys([p for _, p, _, _ in acked_doc["acked"]] + list(phase_of.values())))
        for phase in phases:
            acked = by_phase_acked.get(phase, [])
            ran_twice = [t for t, p in phase_of.items() if p == phase and runs_by_task[t] > 1]
            same_attempt = [t for t in ran_twice if any(c > 1 for c in attempts_by_task[t].values())]
            per_phase[phase] = {
                "acked": len(acked),
                "executed_tasks": sum(1 for t, p in phase_of.items() if p == phase),
                "executed_twice_or_more": len(ran_twice),
                "of_which_same_attempt": len(same_attempt),
                "extra_runs": sum(runs_by_task[t] - 1 for t in ran_twice),
                "lost_acked_not_succeeded": sum(1 for t in acked if stored.get(t) != "succeeded"),
                "acked_not_stored": sum(1 for t in acked if t not in stored),
                "acked_never_executed": sum(1 for t in acked if t not in runs_by_task),
                "unknown_submits": len(unknown_by_phase.get(phase, [])),
                "unknown_stored": sum(1 for t in unknown_by_phase.get(phase, []) if t in stored),
                "unknown_succeeded": sum(1 for t in unknown_by_phase.get(phase, []) if stored.get(t) == "succeeded"),
                "ran_over_10s_late": sum(1 for t, x in first_run.items() if x[5] == phase and x[4] is not None
                                         and x[3] - x[4] > 10_000),
            }
        duplicates = []
        for tid, n in runs_by_task.items():
            if n > 1:
                xs = sorted((x for x in runs if x[0] == tid), key=lambda x: x[3])
                t_ev = ev_t.get(xs[0][5])
                duplicates.append({
                    "phase": xs[0][5], "task_type": xs[0][6], "slot": slot_of(NS, xs[0][6], SLOTS),
                    "path": "mysql" if xs[0][4] is not None and any(
                        a[0] == tid and a[3] - a[2] > ROUTE_THRESHOLD_MS for a in acked_doc["acked"]) else "kafka",
                    "runs": [{"attempt": x[1], "epoch": x[2],
                              "start_ms_from_event": None if t_ev is None else x[3] - int(t_ev * 1000)} for x in xs]})
        late = []
        for tid, x in first_run.items():
            if x[4] is not None and x[3] - x[4] > 10_000:
                late.append({"phase": x[5], "task_type": x[6], "slot": slot_of(NS, x[6], SLOTS),
                             "late_ms": x[3] - x[4], "unknown_submit": tid in unknown_ids,
                             "due_ms_from_event": None if ev_t.get(x[5]) is None else x[4] - int(ev_t[x[5]] * 1000)})
        not_ok = Counter(stored.get(t, "missing") for t, _, _, _ in acked_doc["acked"]
                         if stored.get(t) != "succeeded")
        unknown_outcomes = Counter(stored.get(t, "not stored") for t in unknown_ids)
        return {
            "acked": len(acked_doc["acked"]), "unknown_submits": len(unknown_ids),
            "unknown_submit_outcomes": dict(unknown_outcomes),
            "submit_errors": acked_doc["errors"], "skipped_behind": acked_doc["skipped_behind"],
            "submit_error_detail": [(round(t / 1000 - self.t_start, 2), self.target_names.get(tg, tg), err, n)
                                    for t, tg, err, n in acked_doc.get("error_detail", [])],
            "submit_rpc_ms": {"p50": pct(acked_doc["rpc_ms"], 50), "p99": pct(acked_doc["rpc_ms"], 99),
                              "max": max(acked_doc["rpc_ms"], default=None)},
            "runs": len(runs), "tasks_run": len(runs_by_task), "stored": len(stored),
            "stored_status": dict(Counter(stored.values())),
            "lost_total": sum(not_ok.values()), "lost_by_status": dict(not_ok),
            "executed_twice_total": sum(1 for c in runs_by_task.values() if c > 1),
            "duplicates": duplicates, "over_10s_late": late,
            "per_phase": per_phase,
        }

    def dips(self) -> None:
        """Throughput and lateness figures for every event (from the executor records)."""
        slot_of_type = {t: slot_of(NS, t, SLOTS) for t in self.types}
        runs = [(st, slot_of_type.get(tt)) for _tid, _a, _e, st, _due, _p, tt in self.runs]
        first: dict[str, tuple[int, int, int | None]] = {}    # task_id -> (due_ms, started_ms, slot)
        for tid, _a, _e, st, due, _p, tt in self.runs:
            if due is not None and (tid not in first or st < first[tid][1]):
                first[tid] = (due, st, slot_of_type.get(tt))
        first_runs = list(first.values())
        submits = [sub for _tid, _ph, sub, _due in self.acked_doc["acked"]]
        for ev in self.events:
            a, b = self.args.baseline_s, self.args.after_s
            ev["dip"] = dip_figures([st for st, _ in runs], [(d, st) for d, st, _ in first_runs],
                                    ev["t_event"], ev["t_done"], a, b)
            moving = set(ev.get("victim_slots") or ev.get("moved_slots") or [])
            if moving:
                ev["dip_moving_slots"] = dip_figures([st for st, sl in runs if sl in moving],
                                                     [(d, st) for d, st, sl in first_runs if sl in moving],
                                                     ev["t_event"], ev["t_done"], a, b)
                ev["dip_other_slots"] = dip_figures([st for st, sl in runs if sl not in moving],
                                                    [(d, st) for d, st, sl in first_runs if sl not in moving],
                                                    ev["t_event"], ev["t_done"], a, b)
            ev["submits"] = dip_figures(submits, [], ev["t_event"], ev["t_done"], a, b)
            ev["machine"] = self.neighbours.window(ev["t_event"] - a, ev["t_done"] + b + 1)


# ================================================================ node logs

_INTERESTING = re.compile(r" (WARNING|ERROR|CRITICAL) |Traceback|Exception")


def scan_logs(logs: pathlib.Path, per_node: int = 6) -> dict[str, Any]:
    """WARNING/ERROR lines per node log: counts by logger+message shape, and a few first lines."""
    out = {}
    for path in sorted(logs.glob("*.log")):
        lines = path.read_text(errors="replace").splitlines()
        hits = [ln for ln in lines if _INTERESTING.search(ln)]
        shapes = Counter(re.sub(r"\d+(\.\d+)?", "#", ln[24:])[:140] for ln in hits)
        first, seen = [], set()
        for ln in hits:
            key = re.sub(r"\d+(\.\d+)?", "#", ln[24:])[:140]
            if key not in seen:
                seen.add(key)
                first.append(ln[:300])
            if len(first) >= per_node:
                break
        out[path.stem] = {"lines": len(lines), "warnings_errors": len(hits),
                          "by_shape": dict(shapes.most_common(10)), "first": first}
    return out


# ================================================================ machine facts and report

def zk_conf(stack: StackEndpoints) -> dict[str, str]:
    import socket
    try:
        with socket.create_connection((stack.host, stack.zk_port), timeout=3) as s:
            s.sendall(b"conf")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        conf = dict(ln.split("=", 1) for ln in data.decode().splitlines() if "=" in ln)
        return {k: conf[k] for k in ("tickTime", "minSessionTimeout", "maxSessionTimeout") if k in conf}
    except Exception as exc:
        return {"error": str(exc)}


def facts(stack: StackEndpoints) -> dict[str, Any]:
    try:
        from loadtest.raw_parts import machine_facts
        f = machine_facts(stack.host, stack.mysql_port, stack.mysql_user)
    except Exception as exc:
        f = {"nproc": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2), "facts_error": str(exc)}
    f["zookeeper"] = zk_conf(stack)
    try:
        import importlib.metadata as md
        f["kazoo"] = md.version("kazoo")
        f["uhashring"] = md.version("uhashring")
    except Exception:
        pass
    return f


def _f(v, fmt="{:.2f}", none="-") -> str:
    return none if v is None else fmt.format(v)


def _mmm(d: dict, fmt="{:.2f}") -> str:
    return f"{_f(d['min'], fmt)} / {_f(d['median'], fmt)} / {_f(d['max'], fmt)}"


def format_tables(result: dict[str, Any]) -> str:
    L: list[str] = []
    rm = result.get("ring_model")
    if rm:
        L += ["### Ring model: slots moved by one join (cluster.ring.desired_owners, 160 vnodes)", "",
              f"Name sets: {rm['sets']} (each set grown one node at a time, 1 to 8 nodes). A leave N+1 -> N"
              " moves exactly the slots of the join N -> N+1 with the same names.", "",
              "| slots | join | ideal 1/N | mean | min | max | stdev | joins moving nothing |"
              " largest owner's share after (mean / max) | smallest share after (mean) |"
              " sets with an idle node after |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in rm["rows"]:
            if r["from"] < 2:
                continue
            L.append(f"| {r['slots']} | {r['from']} -> {r['to']} | {r['ideal']:.3f} | {r['mean']:.3f} |"
                     f" {r['min']:.3f} | {r['max']:.3f} | {r['stdev']:.3f} |"
                     f" {r['joins_moving_nothing']} of {r['sets']} |"
                     f" {r['share_of_largest_owner_after_mean']:.3f} / {r['share_of_largest_owner_after_max']:.3f} |"
                     f" {r['share_of_smallest_owner_after_mean']:.3f} | {r['sets_with_an_idle_node_after']} |")
        L += ["", f"Slots that moved to a node other than the joiner: {rm['moves_to_a_node_other_than_the_joiner']}"
              f" in {rm['transitions']} transitions. For the names n1..n8: "
              + ", ".join(f"{k} {v}" for k, v in rm["n1_to_n8_moved_slots"].items() if k.startswith("16:"))
              + " (16 slots)."]
    evs = result.get("events", [])
    mem = [e for e in evs if e["kind"] in ("join", "leave")]
    if mem:
        L += ["", "### Membership changes in the live cluster (16 slots)", "",
              "| change | node | slots moved | ideal (16/N) | only to/from that node | as the ring predicts |"
              " other owners in between | handoff s (zk stat) | settled s (zk poll) | twice | lost |",
              "| --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: |"]
        pp = result.get("counts", {}).get("per_phase", {})
        for e in mem:
            c = pp.get(e["name"], {})
            L.append(f"| {e['name']} | {e['node']} | {e['moved']} {e['moved_slots']} | {e['ideal']:.1f} |"
                     f" {'yes' if e['only_to_from_that_node'] else 'NO'} | {'yes' if e['matches_ring'] else 'NO'} |"
                     f" {len(e['transient_other_owners']) or 'none'} | {e['handoff_s_zk_stat']:.2f} |"
                     f" {e['settled_s_zk_poll']:.2f} | {c.get('executed_twice_or_more', '-')} |"
                     f" {c.get('lost_acked_not_succeeded', '-')} |")
        L += ["", "Handoff and settle times are from the joiner's registration (/nodes znode ctime) for a join, from"
              " the SIGTERM for a leave; *handoff (zk stat)* is the last moved slot's epoch write (znode mtime)."
              " Joiner's process start to registration: "
              + ", ".join(f"{e['node']} {e['registered_after_start_s']:.2f} s" for e in mem if e["kind"] == "join")
              + "."]
    ro = [e for e in evs if e["kind"] in ("kill -9", "SIGTERM")]
    if ro:
        L += ["", "### Time to re-own the slots of a stopped node (seconds from the signal)", "",
              "| series | victim session | n | zk stat: all epochs written | zk poll (50 ms) | /ring poll (50 ms) |"
              " node moves | victim znodes gone (poll) | first claim (zk stat) |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for series, rows in result.get("reown_summary", {}).items():
            L.append(f"| {series} | {rows['victim_session_ms']} ms | {rows['n']} | {_mmm(rows['reown_s_zk_stat'])} |"
                     f" {_mmm(rows['reown_s_zk_poll'])} | {_mmm(rows['reown_s_ring_poll'])} |"
                     f" {_mmm(rows['reown_s_node_moves'])} | {_mmm(rows['victim_znodes_gone_s_zk_poll'])} |"
                     f" {_mmm(rows['first_claim_s_zk_stat'])} |")
        L += ["", "Cells are min / median / max.", "",
              "| event | victim | slots | zk stat | zk poll | /ring | node moves | gone | process exit"
              " | twice | lost |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        pp = result.get("counts", {}).get("per_phase", {})
        for e in ro:
            c = pp.get(e["name"], {})
            L.append(f"| {e['name']} | {e['victim']} | {len(e['victim_slots'])} {e['victim_slots']} |"
                     f" {e['reown_s_zk_stat']:.2f} | {e['reown_s_zk_poll']:.2f} | {_f(e['reown_s_ring_poll'])} |"
                     f" {_f(e['reown_s_node_moves'])} | {e['victim_znodes_gone_s_zk_poll']:.2f} |"
                     f" {_f(e['process_exit_s'])} | {c.get('executed_twice_or_more', '-')} |"
                     f" {c.get('lost_acked_not_succeeded', '-')} |")
    if evs and "dip" in evs[0]:
        L += ["", f"### Throughput through each event ({WINDOW_MS} ms windows of executor runs, tasks/s)", "",
              "| event | all: baseline | lowest window (at s) | below 80% s (longest) | back >= 80% for 1 s at s |"
              " moving slots: baseline | lowest | below 80% s | other slots: baseline | lowest | below 80% s |"
              " acked submits: baseline | lowest |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            d, m, o, sb = e["dip"], e.get("dip_moving_slots"), e.get("dip_other_slots"), e.get("submits")

            def part(x):
                if not x:
                    return "- | - | -"
                return (f"{x['baseline_per_s']:.0f} | {_f(x['min_window_per_s'], '{:.0f}')} |"
                        f" {x['below_80pct_s']:.2f}")
            L.append(f"| {e['name']} | {d['baseline_per_s']:.0f} | {_f(d['min_window_per_s'], '{:.0f}')}"
                     f" ({_f(d['min_window_at_s'])}) | {d['below_80pct_s']:.2f} ({d['longest_below_80pct_s']:.2f}) |"
                     f" {_f(d['recovered_at_s'])} | {part(m)} | {part(o)} |"
                     f" {part(sb).rsplit(' |', 1)[0]} |")
        L += ["", "Seconds after the event (a join: the joiner's process start). Baseline: median of the windows in the"
              f" {result['params']['baseline_s']:g} s before the event. *Moving slots*: the victim's slots (re-own)"
              " or the slots that changed owner (join/leave); *other slots*: the rest. *Acked submits*: tasks acked per"
              " window by submit time (is the offered load itself disturbed?). Noise floor: in the baseline"
              " windows themselves, "
              + f"{sum(e['dip']['baseline_windows_below_80pct'] for e in evs)} of"
              f" {sum(e['dip']['baseline_windows'] for e in evs)} (all events) were below 80% of their median.", "",
              "### CPU through each event (cores, mean over the event's windows; 2 cores in all)", "",
              "| event | CPU busy | nodes | executor + load + this process | stack servers"
              " | not this benchmark (mean / max) |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            mc = e.get("machine") or {}
            L.append(f"| {e['name']} | {_f(mc.get('cpu_busy_mean'), '{:.0%}')} | {_f(mc.get('nodes_cores_mean'))} |"
                     f" {_f(mc.get('bench_cores_mean'))} | {_f(mc.get('stack_cores_mean'))} |"
                     f" {_f(mc.get('others_cores_mean'))} / {_f(mc.get('others_cores_max'))} |")
        L += ["", "### Lateness through each event (first start - due, ms)", "",
              "| event | baseline p50 | baseline p99 | around: p50 | p99 | max | moving slots: p99 | max |"
              " other slots: p99 | max |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            d, m, o = e["dip"], e.get("dip_moving_slots"), e.get("dip_other_slots")
            lb, lh = d["lateness_baseline_ms"], d["lateness_handoff_ms"]
            mh = m["lateness_handoff_ms"] if m else {}
            oh = o["lateness_handoff_ms"] if o else {}
            i0 = "{:.0f}"
            L.append(f"| {e['name']} | {_f(lb['p50'], i0)} | {_f(lb['p99'], i0)} | {_f(lh['p50'], i0)} |"
                     f" {_f(lh['p99'], i0)} | {_f(lh['max'], i0)} | {_f(mh.get('p99'), i0)} | {_f(mh.get('max'), i0)} |"
                     f" {_f(oh.get('p99'), i0)} | {_f(oh.get('max'), i0)} |")
        L += ["", "Tasks due in [event - 1 s, re-owned/settled + 1 s] (*around*) or in the baseline seconds; every"
              " task counted once, at its first run."]
    c = result.get("counts")
    if c:
        L += ["", "### Tasks", "",
              f"Acked {c['acked']:,}; stored {c['stored']:,}; runs {c['runs']:,} of {c['tasks_run']:,} tasks;"
              f" executed twice or more: {c['executed_twice_total']}; lost (acked, not succeeded at the end):"
              f" {c['lost_total']} {c['lost_by_status'] or ''}; submits with unknown outcome (RPC error):"
              f" {c['unknown_submits']} {c['submit_errors'] or ''} -> {c['unknown_submit_outcomes'] or ''};"
              f" offered-but-skipped (generator behind): {c['skipped_behind']}; SubmitBatch ms p50"
              f" {_f(c['submit_rpc_ms']['p50'], '{:.1f}')}, p99 {_f(c['submit_rpc_ms']['p99'], '{:.1f}')}.", "",
              "| scenario | acked | executed | twice+ | same attempt | lost | unknown submits (stored / succeeded) |"
              " first run > 10 s late |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for ph, v in c["per_phase"].items():
            L.append(f"| {ph} | {v['acked']} | {v['executed_tasks']} | {v['executed_twice_or_more']} |"
                     f" {v['of_which_same_attempt']} | {v['lost_acked_not_succeeded']} |"
                     f" {v['unknown_submits']} ({v['unknown_stored']} / {v['unknown_succeeded']}) |"
                     f" {v['ran_over_10s_late']} |")
        L += ["", "*Executed* counts the scenario's tasks (acked or not) that ran at least once; *twice+* those that"
              " ran more than once (*same attempt*: a repeat of one attempt number; otherwise the rerun came as"
              " the next attempt); *lost*: acked but not succeeded at the end; *unknown submits*: in a SubmitBatch"
              " that failed (no answer), with how many were stored and succeeded anyway."]
        if c.get("duplicates"):
            L += ["", "Tasks that ran twice (start of each run, ms from the event):", ""]
            for d in c["duplicates"]:
                L.append(f"- {d['phase']}: type {d['task_type']} (slot {d['slot']}, {d['path']} path): "
                         + ", ".join(f"attempt {r['attempt']} epoch {r['epoch']} at {r['start_ms_from_event']:+d}"
                                     for r in d["runs"]))
        if c.get("submit_error_detail"):
            L += ["", "Failed SubmitBatch calls (s into the run, target, error, tasks): "
                  + "; ".join(f"{t} s {tg} `{err}` x{n}" for t, tg, err, n in c["submit_error_detail"]) + "."]
    return "\n".join(L)


def summarize(result: dict[str, Any]) -> None:
    series: dict[str, list[dict]] = defaultdict(list)
    for e in result.get("events", []):
        if e["kind"] in ("kill -9", "SIGTERM"):
            key = "SIGTERM" if e["kind"] == "SIGTERM" else f"kill -9, session {e['victim_session_ms']} ms"
            series[key].append(e)
    out = {}
    for key, evs in series.items():
        out[key] = {"n": len(evs), "victim_session_ms": ", ".join(sorted({str(e['victim_session_ms']) for e in evs}))}
        for f in ("reown_s_zk_stat", "reown_s_zk_poll", "reown_s_ring_poll", "reown_s_node_moves",
                  "victim_znodes_gone_s_zk_poll", "first_claim_s_zk_stat", "settled_s_zk_poll", "process_exit_s"):
            out[key][f] = mmm([e.get(f) for e in evs])
    result["reown_summary"] = out


def write_report(result: dict[str, Any], command: str, directory: pathlib.Path, name: str) -> list[pathlib.Path]:
    directory.mkdir(parents=True, exist_ok=True)
    js, md = directory / f"{name}.json", directory / f"{name}.md"
    # first: it survives a bug below
    js.write_text(json.dumps({**result, "command": command}, indent=1, default=str) + "\n")
    f = result["machine"]
    lines = [
        "# Cluster handoff: re-own time, slots moved, throughput dip",
        "",
        f"Run {result['started_at']} with `{command}` ({result['seconds']:.0f} s).",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in f.items()) + ".",
    ]
    if result.get("machine_during"):
        lines.append(f"Load average at the end: {', '.join(f'{x:.2f}' for x in result['machine_during']['loadavg'])}.")
    lines.append("")
    p = result["params"]
    if result.get("events"):
        lines += [f"Cluster: 16 slots, nodes as processes against a private database/chroot/topics; session timeout"
                  f" {p['session_ms']} ms unless stated; offered load {p['rate']:.0f} tasks/s in SubmitBatch of"
                  f" {p['batch']} ({p['load_threads']} sender threads, round-robin over the live nodes minus the"
                  f" victim), {len(spread_task_types())} task types (4 per slot), {p['long_delay_share']:.0%}"
                  f" delayed 2-3 s (MySQL path), the rest 0 or 0.1-1 s (Kafka path); one executor process"
                  f" (max_in_flight {p['max_in_flight']})."
                  f" Startup to settled: {result.get('startup_to_settled_s', 0):.2f} s."
                  f" ZooKeeper poll: p50 {_f(result['zk_poll_ms']['p50'], '{:.1f}')} ms,"
                  f" p99 {_f(result['zk_poll_ms']['p99'], '{:.1f}')} ms per poll of all znodes.", ""]
    lines += [format_tables(result), ""]
    nb = result.get("neighbours")
    if nb:
        lines += [f"Machine during the run: CPU busy (both cores) mean {_f(nb['cpu_busy_mean'], '{:.0%}')},"
                  f" max {_f(nb['cpu_busy_max'], '{:.0%}')} (1 s samples); load average max {_f(nb['loadavg_max'])}."
                  f" CPU seconds over {nb['wall_s']:.0f} s (of {2 * nb['wall_s']:.0f} available): nodes"
                  f" {nb['cpu_s_by_group'].get('nodes', 0):.0f}, executor + load + this process"
                  f" {nb['cpu_s_by_group'].get('bench', 0):.0f},"
                  f" stack servers {nb['cpu_s_by_group'].get('stack', 0):.0f},"
                  f" everything else {nb['cpu_s_by_group'].get('others', 0):.0f}"
                  + (" (" + "; ".join(f"`{v['cmd'][:70]}` {v['cpu_s']:.1f}" for v in nb["others_top"][:4]
                                      if v["cpu_s"] >= 0.5) + ")"
                     if any(v["cpu_s"] >= 0.5 for v in nb["others_top"]) else "") + ".", ""]
    if result.get("observations"):
        lines += ["## Observations", ""] + [f"- {o}" for o in result["observations"]] + [""]
    lf = result.get("log_findings")
    if lf:
        lines += ["## Node logs: WARNING/ERROR lines", "", f"Logs: `{result['logs']}` (kept after the run).", ""]
        for node, v in lf.items():
            lines.append(f"- **{node}** ({v['lines']} lines): {v['warnings_errors']} warning/error lines")
            for shape, n in list(v["by_shape"].items())[:6]:
                lines.append(f"    - {n} x `{shape.strip()}`")
        lines.append("")
    tl = result.get("timeline")
    if tl:
        lines += ["## Timeline", "", "```"] + [f"{t:8.2f}s  {w}" for t, w in tl] + ["```", ""]
    lines += ["How this is measured and how to read it: loadtest/README.md. Every figure, including the 250 ms"
              f" windows of every event: {name}.json.", ""]
    md.write_text("\n".join(lines))
    return [md, js]


# ================================================================ main

def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="repeats of each re-own series (default 3)")
    p.add_argument("--rate", type=float, default=500.0, help="offered tasks/s (default 500)")
    p.add_argument("--batch", type=int, default=25, help="tasks per SubmitBatch (default 25)")
    p.add_argument("--load-threads", type=int, default=4)
    p.add_argument("--long-delay-share", type=float, default=0.2, help="share of tasks delayed 2-3 s (MySQL path)")
    p.add_argument("--max-in-flight", type=int, default=256, help="executor max_in_flight")
    p.add_argument("--session-ms", type=int, default=3000, help="ZooKeeper session timeout of the nodes (3000)")
    p.add_argument("--default-session-ms", type=int, default=6000,
                   help="the second kill -9 series' victim timeout (6000, taskring's default)")
    p.add_argument("--baseline-s", type=float, default=3.0, help="steady seconds before each event")
    p.add_argument("--after-s", type=float, default=3.0, help="seconds kept after each event settled")
    p.add_argument("--quiet-s", type=float, default=1.0,
                   help="seconds after the ring settled before the baseline starts (the last handoff's catch-up)")
    p.add_argument("--drain-timeout-s", type=float, default=60.0)
    p.add_argument("--ring-sets", type=int, default=200, help="name sets per family for the ring model")
    p.add_argument("--only", choices=["ring-model"], help="the ring model only (no cluster)")
    p.add_argument("--keep", action="store_true", help="keep the database, chroot and topics")
    p.add_argument("--report-dir", type=pathlib.Path, default=REPORTS_DIR)
    p.add_argument("--report-name", default="bench_cluster")
    p.add_argument("--no-report", action="store_true", help="print only")
    args = p.parse_args(argv)

    stack = StackEndpoints.from_env()
    t0 = time.time()
    result: dict[str, Any] = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                              "machine": facts(stack)}
    print("ring model ...", flush=True)
    result["ring_model"] = ring_model(args.ring_sets)
    if args.only != "ring-model":
        bench = Bench(args)
        bench.t_start = time.time()
        result.update(bench.run())
        bench.dips()
        result["events"] = bench.events
        summarize(result)
        result["observations"] = observations(result)
    else:
        result["params"] = {k: v for k, v in vars(args).items() if k != "report_dir"}
    result["seconds"] = time.time() - t0
    written = []
    if not args.no_report:
        command = " ".join(["python", "loadtest/bench_cluster.py", *(argv if argv is not None else sys.argv[1:])])
        written = write_report(result, command.strip(), args.report_dir, args.report_name)
    print()
    print(format_tables(result))
    if result.get("observations"):
        print("\nObservations:\n" + "\n".join(f"- {o}" for o in result["observations"]))
    if result.get("logs"):
        print(f"\nnode logs: {result['logs']}")
    for path in written:
        print(f"wrote {path}")


def observations(result: dict[str, Any]) -> list[str]:
    """Facts worth a sentence, computed (not opinions): anomalies get flagged here."""
    obs = []
    for t, state in result.get("zk_observer_states", []):
        obs.append(f"STACK TROUBLE: the benchmark's own ZooKeeper connection went {state} at"
                   f" {dt.datetime.fromtimestamp(t).isoformat(timespec='milliseconds')} (a ZooKeeper restart or stall):"
                   " figures around that time are not the cluster's own.")
    nb = result.get("neighbours", {})
    for v in nb.get("others_top", []):
        if v["cpu_s"] >= 2.0:
            obs.append(f"SHARED MACHINE: `{v['cmd']}` (not this benchmark) used {v['cpu_s']:.1f} CPU s"
                       f" between {v['first_s']} s and {v['last_s']} s of this run.")
    c = result.get("counts", {})
    if c.get("lost_total"):
        obs.append(f"LOST TASKS: {c['lost_total']} acked tasks did not succeed ({c['lost_by_status']}).")
    if not result.get("drain", {}).get("complete", True):
        obs.append(f"The drain did not complete: {result['drain']['status_counts']}.")
    late = c.get("over_10s_late", [])
    if late:
        by: dict[str, list[dict]] = defaultdict(list)
        for x in late:
            by[x["phase"]].append(x)
        for ph, xs in by.items():
            unk = sum(1 for x in xs if x["unknown_submit"])
            obs.append(f"LATE TASKS: {len(xs)} tasks of {ph} first ran {min(x['late_ms'] for x in xs) / 1000:.1f}-"
                       f"{max(x['late_ms'] for x in xs) / 1000:.1f} s after they were due ({unk} of them from a"
                       f" SubmitBatch that failed with no answer; slots {sorted({x['slot'] for x in xs})}).")
    for e in result.get("events", []):
        if e["kind"] in ("join", "leave"):
            if not e["only_to_from_that_node"]:
                obs.append(f"{e['name']}: a slot moved between nodes other than {e['node']}.")
            if not e["matches_ring"]:
                obs.append(f"{e['name']}: moved {e['moved_slots']}, the ring predicts {e['predicted_by_ring']}.")
            if e["transient_other_owners"]:
                obs.append(f"{e['name']}: slots owned in between by a third node: {e['transient_other_owners']}.")
        else:
            if not e["epochs_bumped"]:
                obs.append(f"{e['name']}: an epoch was not bumped: {e['epochs']}.")
            if e.get("exit_code") not in (0, -9):
                obs.append(f"{e['name']}: {e['victim']} exited with {e['exit_code']}.")
            if e["kind"] == "kill -9":
                budget = e["victim_session_ms"] / 1000 + 1.5
                if e["reown_s_zk_stat"] > budget:
                    obs.append(f"{e['name']}: re-owned after {e['reown_s_zk_stat']:.2f} s,"
                               " over session timeout + 1.5 s.")
    return obs


if __name__ == "__main__":
    main()
