"""Celery + Redis and Dramatiq + Redis on a no-op workload, measured the way loadtest/bench_node.py measures taskring.

A benchmark, not a test: nothing here passes or fails. For each system, one after the other, it starts a private
`redis-server` (redis_server.RedisServer: a free 127.0.0.1 port, a temporary directory, no persistence), the
system's worker as a separate process, warms it up, and runs two phases with this process as the load generator:

  Phase A  throughput: N no-op tasks enqueued as fast as one producer can, in batches (Celery: one producer
           held per batch, `apply_async(producer=...)` per task, about 15% faster here than `group(sigs)
           .apply_async()`, which --celery-enqueue group selects; both publish one message per task, kombu's
           Redis transport has no bulk publish. Dramatiq: `group(messages).run()` per batch, which is
           `broker.enqueue` per message: Dramatiq has no bulk enqueue either). Celery's `chunks` is not used: it
           would make one message of many calls, and this measures a message per task.
           *accepted tasks/s* = N / (first enqueue call to the last one returned); *completed tasks/s* =
           N / (first enqueue call to the start of the last task executed). The pickup
           latency of this phase (start - the enqueue time of the task's batch) is queueing under saturation.
  Phase B  pickup latency at a moderate fixed rate (--rate tasks/s for --seconds), one task per call (Celery
           `apply_async`, Dramatiq `broker.enqueue`, the calls behind `delay()` and `send()`), each carrying the
           time.time() taken just before its call: pickup = the task's start - that time; p50/p99/max.

How a task's execution is known: the no-op task's whole body is StartRecorder.record(phase, seq, enqueued_at),
which takes time.time() and appends a tuple to an in-process deque (about 1 us, measured in each run as
`record_cost_us`); a daemon thread in each worker process pushes the deque every 20 ms to the Redis list
`peers:starts:<phase>` with one pipelined RPUSH. The runner polls LLEN until all N records are in and then reads
them: missing or duplicated sequence numbers are counted, and the start times give the figures above. The start
of a no-op is its end, give or take that microsecond.

CPU: utime + stime from /proc/<pid>/stat at the start and the end of each phase, for the worker (its main process
and every descendant), redis-server, and this process (the load generator), and the machine's busy time from
/proc/stat; reported as CPU microseconds per task. "everything else" is the machine's busy time less those: on a
shared machine, other people's work. The phase's window runs to when the last record was seen (up to ~40 ms after
the last task ran).

Run from the repository root with the project venv (needs `redis-server` on PATH and
`pip install -r loadtest/peers/requirements.txt`), one benchmark at a time (2 shared cores):

    .venv/bin/python loadtest/peers/run_peers.py                          # N=50,000, 200/s x 10 s, both systems
    .venv/bin/python loadtest/peers/run_peers.py --n 2000 --rate 100 --seconds 3 --no-report   # a quick check
    .venv/bin/python loadtest/peers/run_peers.py --systems dramatiq --dramatiq-processes 2 --dramatiq-threads 4

It prints a markdown table and writes loadtest/reports/peers.md and peers.json (--report-name, --no-report).
From Python: `from loadtest.peers.run_peers import run_peers; run_peers(20_000, 200, 10)` returns the same dict
that peers.json holds.

Worker configurations (the defaults; --celery-pool/--celery-concurrency, --dramatiq-processes/--dramatiq-threads
change them). Celery: `--pool=solo`, one process. With prefork the parent process alone (kombu's Redis consumer
plus the pipe hand-off to the children and back) spent more CPU per task than the whole solo worker, and ran
2-3 times fewer tasks per second on 2 cores; the threads pool was slower still (the GIL, and the same hand-off).
Dramatiq: `--processes 2 --threads 8`, its own defaults on a 2-core machine; it kept up with the producer (no
drain), 1 process did as well within the noise, and 2 threads per process were slower (its prefetch is 2 per
thread).

Reading it: accepted tasks/s is what a producer sees (the enqueue calls return); completed tasks/s is what the
workers sustain while the producer shares the 2 cores with them; the drain after the last enqueue says how far
the workers fell behind. Phase B's pickup is the latency of a worker that is not saturated: for Dramatiq's Redis
broker it includes the consumer's idle polling (it sleeps with backoff up to 1 s when the queue is empty); for
Celery's it is kombu's BRPOP wake-up plus the hand-off to a pool child. CPU per task, summed over worker, Redis
and load generator, is the cost of a task on this machine; taskring's figures in bench_node.md are per task too.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import datetime as dt
import importlib.metadata
import os
import pathlib
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.stats import percentile
from loadtest.bench import report
from loadtest.peers.redis_server import (
    URL_ENV,
    RedisServer,
    Start,
    count_starts,
    read_starts,
    record_cost_us,
    redis_server_version,
)

REPO = pathlib.Path(__file__).resolve().parents[2]

SYSTEMS = ("celery", "dramatiq")
LABELS = {"celery": "Celery+Redis", "dramatiq": "Dramatiq+Redis"}
POLL_S = 0.02


# ---------------------------------------------------------------- configuration and results

@dataclasses.dataclass
class PeersConfig:
    n: int = 50_000
    rate: float = 200.0
    seconds: float = 10.0
    systems: tuple[str, ...] = SYSTEMS
    batch: int = 1_000
    warmup: int = 200
    celery_pool: str = "solo"
    celery_concurrency: int = 1
    celery_prefetch: int = 4
    celery_enqueue: str = "loop"
    dramatiq_processes: int = 2
    dramatiq_threads: int = 8
    start_timeout_s: float = 60.0
    drain_timeout_s: float = 120.0
    stall_timeout_s: float = 30.0
    redis_server: str = "redis-server"


@dataclasses.dataclass
class Latency:
    """Milliseconds; None when there was nothing to measure."""

    count: int
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    min: float | None = None
    mean: float | None = None


@dataclasses.dataclass
class CpuUse:
    wall_s: float
    tasks: int
    cores: int
    machine_busy_pct: float
    process_cpu_s: dict[str, float]       # worker / redis-server / load generator / everything else
    per_task_us: dict[str, float]         # the same keys, plus "machine total"
    worker_processes: int
    worker_processes_gone: int            # exited during the phase: their CPU is missing from "worker"
    worker_by_process: dict[str, float]   # "main <pid>" / "child <pid>": CPU s of each worker process


@dataclasses.dataclass
class Executions:
    expected: int
    executed: int
    missing: int
    duplicates: int
    by_process: dict[str, int]

    @property
    def complete(self) -> bool:
        return self.missing == 0


@dataclasses.dataclass
class PhaseA:
    n: int
    batch: int
    method: str
    enqueued: int
    enqueue_s: float
    accepted_per_s: float
    completed_s: float | None
    completed_per_s: float | None
    drain_after_last_enqueue_s: float | None
    executions: Executions
    pickup_ms: Latency
    cpu: CpuUse


@dataclasses.dataclass
class PhaseB:
    rate: float
    seconds: float
    sent: int
    send_s: float
    achieved_rate: float
    sender_behind_max_ms: float
    enqueue_call_ms: Latency
    executions: Executions
    pickup_ms: Latency
    cpu: CpuUse


@dataclasses.dataclass
class SystemResult:
    system: str
    label: str
    worker: str
    worker_command: list[str]
    worker_ready_s: float | None = None
    phase_a: PhaseA | None = None
    phase_b: PhaseB | None = None
    error: str | None = None


# ---------------------------------------------------------------- small helpers

def latency_ms(values_s: Iterable[float]) -> Latency:
    v = sorted(x * 1000 for x in values_s)
    if not v:
        return Latency(count=0)
    return Latency(count=len(v), p50=percentile(v, 50), p90=percentile(v, 90), p99=percentile(v, 99), max=v[-1],
                   min=v[0], mean=sum(v) / len(v))


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dist in ("celery", "kombu", "billiard", "dramatiq", "redis"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    out["redis-server"] = redis_server_version()
    out["python"] = platform.python_version()
    return out


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


# ---------------------------------------------------------------- CPU accounting from /proc

TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float | None:
    """utime + stime of one process (all its threads), in seconds; None when it is gone."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, ValueError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """root and every process below it, from the ppid field of /proc/*/stat."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(pathlib.Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children[ppid].append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores; idle and iowait left out)."""
    fields = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


class CpuMeter:
    """CPU seconds of named groups of processes, and of the machine, between start() and stop()."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]):
        self.groups = groups
        self._t0 = 0.0
        self._m0 = 0.0
        self._c0: dict[str, dict[int, float]] = {}

    def _snapshot(self) -> dict[str, dict[int, float]]:
        snap: dict[str, dict[int, float]] = {}
        for name, pids in self.groups.items():
            snap[name] = {}
            for pid in pids():
                cpu = process_cpu_s(pid)
                if cpu is not None:
                    snap[name][pid] = cpu
        return snap

    def start(self) -> None:
        self._t0, self._m0, self._c0 = time.perf_counter(), machine_busy_s(), self._snapshot()

    def stop(self, tasks: int) -> CpuUse:
        wall = time.perf_counter() - self._t0
        busy = machine_busy_s() - self._m0
        c1 = self._snapshot()
        used: dict[str, float] = {}
        for name in self.groups:
            before, after = self._c0.get(name, {}), c1.get(name, {})
            # A process that appeared during the phase counts whole; one that exited is lost (and counted).
            used[name] = round(sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()), 3)
        worker_before, worker_after = self._c0.get("worker", {}), c1.get("worker", {})
        main = next(iter(worker_after), None)  # descendants() lists the worker's main process first
        by_process = {f"{'main' if pid == main else 'child'} {pid}": round(cpu - worker_before.get(pid, 0.0), 3)
                      for pid, cpu in worker_after.items()}
        used["everything else"] = round(max(0.0, busy - sum(used.values())), 3)
        per_task = {k: round(v / tasks * 1e6, 1) for k, v in used.items()} if tasks else {}
        if tasks:
            per_task["machine total"] = round(busy / tasks * 1e6, 1)
        cores = os.cpu_count() or 1
        return CpuUse(wall_s=round(wall, 3), tasks=tasks, cores=cores,
                      machine_busy_pct=round(100 * busy / (wall * cores), 1) if wall > 0 else 0.0,
                      process_cpu_s=used, per_task_us=per_task, worker_processes=len(worker_after),
                      worker_processes_gone=len(set(worker_before) - set(worker_after)),
                      worker_by_process=by_process)


# ---------------------------------------------------------------- the worker process

class WorkerProcess:
    """A worker command in its own session (process group), with its output in a log file."""

    def __init__(self, command: list[str], env: dict[str, str], log: pathlib.Path):
        self.command, self.env, self.log = command, env, log
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("WorkerProcess.pid before start()")
        return self._proc.pid

    def start(self) -> None:
        self._log_file = self.log.open("wb")
        # start_new_session: the worker and its children form one process group that stop() can end by its id.
        self._proc = subprocess.Popen(self.command, cwd=REPO, env=self.env, stdin=subprocess.DEVNULL,
                                      stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def pids(self) -> list[int]:
        return descendants(self._proc.pid) if self.alive() and self._proc is not None else []

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 20.0) -> int | None:
        """SIGTERM (a warm shutdown for both systems), then SIGKILL to the worker's process group if needed."""
        proc = self._proc
        if proc is None:
            return None
        try:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    pass
            # The group's id is the worker's PID (start_new_session): this reaches the pool children too, also
            # those left behind by a main process that exited first, and nothing that is not the worker's.
            if group_members(proc.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return proc.returncode
        finally:
            self._proc = None
            if self._log_file is not None:
                self._log_file.close()


def group_members(pgid: int) -> list[int]:
    """PIDs of the live processes whose process group is pgid."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = pathlib.Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out


def worker_env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env[URL_ENV] = url
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTHONSTARTUP", None)
    return env


# ---------------------------------------------------------------- the two systems

class CeleryDriver:
    """Celery's worker command and its producer side (the run's own app, on the run's Redis)."""

    system = "celery"

    def __init__(self, cfg: PeersConfig):
        self.cfg = cfg
        self.app: Any = None
        self.task: Any = None

    def describe(self) -> str:
        c = self.cfg
        return (f"celery worker --pool={c.celery_pool} --concurrency={c.celery_concurrency} "
                f"--prefetch-multiplier={c.celery_prefetch}, no result backend, without gossip/mingle/heartbeat")

    def worker_command(self) -> list[str]:
        c = self.cfg
        return [sys.executable, "-m", "celery", "-A", "loadtest.peers.celery_noop", "worker",
                f"--pool={c.celery_pool}", f"--concurrency={c.celery_concurrency}",
                f"--prefetch-multiplier={c.celery_prefetch}", "--queues=peers", "--loglevel=WARNING",
                "--without-gossip", "--without-mingle", "--without-heartbeat", f"--hostname=peers-{os.getpid()}@%h"]

    def connect(self, url: str) -> None:
        from loadtest.peers.celery_noop import TASK_NAME, make_app
        self.app = make_app(url)
        self.task = self.app.tasks[TASK_NAME]

    def enqueue_batch(self, phase: str, seqs: range, enqueued_at: float) -> None:
        if self.cfg.celery_enqueue == "group":
            from celery import group  # type: ignore[import-untyped,import-not-found,unused-ignore]
            group(self.task.s(phase, seq, enqueued_at) for seq in seqs).apply_async()
        else:  # one producer (one connection) held for the batch, as group does internally
            with self.app.producer_or_acquire() as producer:
                for seq in seqs:
                    self.task.apply_async((phase, seq, enqueued_at), producer=producer)

    def enqueue_one(self, phase: str, seq: int, enqueued_at: float) -> None:
        self.task.apply_async((phase, seq, enqueued_at))

    def close(self) -> None:
        if self.app is not None:
            self.app.close()
            self.app = None


class DramatiqDriver:
    """Dramatiq's worker command and its producer side (a RedisBroker of the run's own)."""

    system = "dramatiq"

    def __init__(self, cfg: PeersConfig):
        self.cfg = cfg
        self.broker: Any = None
        self.group: Any = None
        self.make_message: Callable[[str, int, float], Any] | None = None

    def describe(self) -> str:
        c = self.cfg
        return f"dramatiq --processes {c.dramatiq_processes} --threads {c.dramatiq_threads}, default middleware"

    def worker_command(self) -> list[str]:
        c = self.cfg
        return [sys.executable, "-m", "dramatiq", "loadtest.peers.dramatiq_noop", "--processes",
                str(c.dramatiq_processes), "--threads", str(c.dramatiq_threads), "--queues", "peers",
                "--worker-shutdown-timeout", "10000"]

    def connect(self, url: str) -> None:
        import dramatiq  # type: ignore[import-not-found,unused-ignore]
        from dramatiq.brokers.redis import RedisBroker  # type: ignore[import-not-found,unused-ignore]

        from loadtest.peers.dramatiq_noop import make_message
        # A socket timeout so that a Redis that stops answering fails the run instead of hanging it.
        self.broker = RedisBroker(url=f"{url}?socket_timeout=10")
        self.group, self.make_message = dramatiq.group, make_message

    def enqueue_batch(self, phase: str, seqs: range, enqueued_at: float) -> None:
        assert self.make_message is not None, "connect() first"
        self.group([self.make_message(phase, seq, enqueued_at) for seq in seqs], broker=self.broker).run()

    def enqueue_one(self, phase: str, seq: int, enqueued_at: float) -> None:
        assert self.make_message is not None, "connect() first"
        self.broker.enqueue(self.make_message(phase, seq, enqueued_at))

    def close(self) -> None:
        if self.broker is not None:
            self.broker.close()
            self.broker = None


Driver = CeleryDriver | DramatiqDriver


def make_driver(system: str, cfg: PeersConfig) -> Driver:
    if system == "celery":
        return CeleryDriver(cfg)
    if system == "dramatiq":
        return DramatiqDriver(cfg)
    raise ValueError(f"unknown system {system!r} (one of {', '.join(SYSTEMS)})")


# ---------------------------------------------------------------- waiting for and reading the start records

def wait_for_starts(client: Any, phase: str, expected: int, worker: WorkerProcess, timeout_s: float,
                    stall_timeout_s: float) -> int:
    """Poll LLEN until `expected` records are in; give up on timeout, on no progress, or when the worker died."""
    deadline = time.monotonic() + timeout_s
    seen, last_progress = 0, time.monotonic()
    while True:
        count = count_starts(client, phase)
        now = time.monotonic()
        if count >= expected:
            return count
        if count > seen:
            seen, last_progress = count, now
        if now >= deadline or now - last_progress >= stall_timeout_s or not worker.alive():
            return count
        time.sleep(POLL_S)


def executions(starts: list[Start], expected: int) -> Executions:
    seqs = collections.Counter(s.seq for s in starts)
    by_pid = collections.Counter(str(s.pid) for s in starts)
    return Executions(expected=expected, executed=len(starts), missing=sum(1 for i in range(expected) if i not in seqs),
                      duplicates=sum(c - 1 for c in seqs.values() if c > 1), by_process=dict(by_pid))


def first_starts(starts: list[Start]) -> list[Start]:
    """One record per task (the first execution), so that a duplicate does not count twice in the latencies."""
    firsts: dict[int, Start] = {}
    for s in starts:
        if s.seq not in firsts or s.started < firsts[s.seq].started:
            firsts[s.seq] = s
    return list(firsts.values())


# ---------------------------------------------------------------- the phases

def warm_up(driver: Driver, client: Any, worker: WorkerProcess, cfg: PeersConfig) -> float:
    """Send cfg.warmup tasks and wait until all ran: the worker (and its pool) is up and connected."""
    t0 = time.monotonic()
    driver.enqueue_batch("W", range(cfg.warmup), time.time())
    got = wait_for_starts(client, "W", cfg.warmup, worker, cfg.start_timeout_s, cfg.start_timeout_s)
    if got < cfg.warmup:
        raise RuntimeError(f"worker not ready: {got}/{cfg.warmup} warm-up tasks ran in {cfg.start_timeout_s} s"
                           f" (worker process alive: {worker.alive()})")
    return time.monotonic() - t0


def phase_a(driver: Driver, client: Any, worker: WorkerProcess, meter: CpuMeter, cfg: PeersConfig) -> PhaseA:
    """N tasks in batches, as fast as one producer goes; then wait for all of them to have run."""
    method = {"celery": f"group(...).apply_async() x {cfg.batch}" if cfg.celery_enqueue == "group"
              else f"apply_async(producer=...) loop x {cfg.batch}",
              "dramatiq": f"group(...).run() x {cfg.batch} (broker.enqueue each)"}[driver.system]
    meter.start()
    t0 = time.time()
    enqueued = 0
    for lo in range(0, cfg.n, cfg.batch):
        seqs = range(lo, min(cfg.n, lo + cfg.batch))
        driver.enqueue_batch("A", seqs, time.time())
        enqueued += len(seqs)
        if time.time() - t0 > cfg.drain_timeout_s:  # bounded even when the broker crawls
            break
    t_enqueued = time.time()
    wait_for_starts(client, "A", enqueued, worker, cfg.drain_timeout_s, cfg.stall_timeout_s)
    cpu = meter.stop(enqueued)
    starts = read_starts(client, "A")
    firsts = first_starts(starts)
    t_last = max((s.started for s in firsts), default=None)
    completed_s = t_last - t0 if t_last is not None and len(firsts) >= cfg.n else None
    enqueue_s = t_enqueued - t0
    return PhaseA(n=cfg.n, batch=cfg.batch, method=method, enqueued=enqueued, enqueue_s=round(enqueue_s, 3),
                  accepted_per_s=round(enqueued / enqueue_s, 1),
                  completed_s=None if completed_s is None else round(completed_s, 3),
                  completed_per_s=None if completed_s is None else round(cfg.n / completed_s, 1),
                  drain_after_last_enqueue_s=None if t_last is None or completed_s is None
                  else round(t_last - t_enqueued, 3),
                  executions=executions(starts, cfg.n), pickup_ms=latency_ms(s.started - s.enqueued_at for s in firsts),
                  cpu=cpu)


def phase_b(driver: Driver, client: Any, worker: WorkerProcess, meter: CpuMeter, cfg: PeersConfig) -> PhaseB:
    """cfg.rate tasks/s for cfg.seconds, one call per task at its scheduled time; pickup = start - enqueue time."""
    total = int(cfg.rate * cfg.seconds)
    calls: list[float] = []
    behind = 0.0
    meter.start()
    p0 = time.perf_counter()
    for seq in range(total):
        due = p0 + seq / cfg.rate
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        else:
            behind = max(behind, -wait)
        c0 = time.perf_counter()
        driver.enqueue_one("B", seq, time.time())
        calls.append(time.perf_counter() - c0)
    send_s = time.perf_counter() - p0
    wait_for_starts(client, "B", total, worker, cfg.drain_timeout_s, cfg.stall_timeout_s)
    cpu = meter.stop(total)
    starts = read_starts(client, "B")
    return PhaseB(rate=cfg.rate, seconds=cfg.seconds, sent=total, send_s=round(send_s, 3),
                  achieved_rate=round(total / send_s, 1) if send_s > 0 else 0.0,
                  sender_behind_max_ms=round(behind * 1000, 1), enqueue_call_ms=latency_ms(calls),
                  executions=executions(starts, total),
                  pickup_ms=latency_ms(s.started - s.enqueued_at for s in first_starts(starts)), cpu=cpu)


def run_system(system: str, cfg: PeersConfig, log: Callable[[str], None] = print) -> SystemResult:
    """Redis, the worker, warm-up, phase A, phase B, then everything stopped and removed, also on error."""
    import redis  # type: ignore[import-not-found,unused-ignore]

    driver = make_driver(system, cfg)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"peers-{system}-"))
    result = SystemResult(system=system, label=LABELS[system], worker=driver.describe(), worker_command=[])
    server = RedisServer(executable=cfg.redis_server)
    worker: WorkerProcess | None = None
    client: Any = None
    try:
        server.start()
        client = redis.Redis.from_url(server.url, socket_timeout=10, decode_responses=True)
        command = driver.worker_command()
        result.worker_command = command
        worker = WorkerProcess(command, worker_env(server.url), tmp / "worker.log")
        log(f"[{system}] redis-server pid {server.pid} on {server.url}; worker: {' '.join(command[1:])}")
        worker.start()
        driver.connect(server.url)
        result.worker_ready_s = round(warm_up(driver, client, worker, cfg), 2)
        redis_pid = server.pid
        meter = CpuMeter({"worker": worker.pids, "redis-server": lambda: [redis_pid] if redis_pid else [],
                          "load generator": lambda: [os.getpid()]})
        log(f"[{system}] worker ready in {result.worker_ready_s} s ({len(worker.pids())} processes); phase A,"
            f" {cfg.n:,} tasks")
        result.phase_a = phase_a(driver, client, worker, meter, cfg)
        log(f"[{system}] phase A: {result.phase_a.accepted_per_s:,.0f} accepted/s,"
            f" {fmt(result.phase_a.completed_per_s)} completed/s; phase B, {cfg.rate:g}/s for {cfg.seconds:g} s")
        result.phase_b = phase_b(driver, client, worker, meter, cfg)
        log(f"[{system}] phase B: pickup p50 {fmt(result.phase_b.pickup_ms.p50, 1)} ms,"
            f" p99 {fmt(result.phase_b.pickup_ms.p99, 1)} ms")
    except Exception as e:  # one system failing still leaves the other's figures, and the error in the report
        result.error = f"{type(e).__name__}: {e}"
        log(f"[{system}] FAILED: {result.error}")
        if worker is not None:
            log(f"[{system}] worker log tail:\n{worker.log_tail()}")
    finally:
        with contextlib.suppress(Exception):
            driver.close()
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        try:
            if worker is not None:
                worker.stop()
        finally:
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def run_peers(n: int = 50_000, rate: float = 200.0, seconds: float = 10.0, systems: Sequence[str] = SYSTEMS,
              log: Callable[[str], None] = print, **options: Any) -> dict[str, Any]:
    """Run the benchmark for each system, one after the other; returns the dict written to peers.json.

    options are the other PeersConfig fields (batch, warmup, celery_pool, celery_concurrency, celery_prefetch,
    celery_enqueue, dramatiq_processes, dramatiq_threads, start_timeout_s, drain_timeout_s, stall_timeout_s,
    redis_server).
    """
    cfg = PeersConfig(n=n, rate=rate, seconds=seconds, systems=tuple(systems), **options)
    if shutil.which(cfg.redis_server) is None:
        raise RuntimeError(f"{cfg.redis_server} not found (apt-get install redis-server)")
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load_start = [round(x, 2) for x in os.getloadavg()]
    results = [run_system(system, cfg, log) for system in cfg.systems]
    return {
        "started": started,
        "config": dataclasses.asdict(cfg),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "git": git_commit(),
                    "loadavg_start": load_start, "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "versions": versions(),
        "record_cost_us": round(record_cost_us(), 2),
        "systems": {r.system: {**dataclasses.asdict(r), "complete": complete(r)} for r in results},
    }


def complete(r: SystemResult) -> bool:
    return (r.error is None and r.phase_a is not None and r.phase_b is not None
            and r.phase_a.executions.complete and r.phase_b.executions.complete)


# ---------------------------------------------------------------- the report

def _get(d: dict[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _lat(d: dict[str, Any] | None, digits: int = 1) -> str:
    if not d or not d.get("count"):
        return "-"
    return f"{fmt(d['p50'], digits)} / {fmt(d['p99'], digits)} / {fmt(d['max'], digits)}"


def _cpu_rows(phase: str, title: str) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    keys = ("worker", "redis-server", "load generator", "everything else", "machine total")
    def per_task(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda s: fmt(_get(s, phase, "cpu", "per_task_us", key), 0)

    rows = [(f"{title}: CPU us per task, {k}", per_task(k)) for k in keys]
    rows.append((f"{title}: machine busy, % of {os.cpu_count()} cores",
                 lambda s: fmt(_get(s, phase, "cpu", "machine_busy_pct"), 0)))
    return rows


def table_rows() -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    def execs(phase: str) -> Callable[[dict[str, Any]], str]:
        def cell(s: dict[str, Any]) -> str:
            e = _get(s, phase, "executions")
            if not e:
                return "-"
            return f"{e['executed']:,} / {e['missing']:,} / {e['duplicates']:,}"
        return cell

    def rate_s(per_s: str, secs: str) -> Callable[[dict[str, Any]], str]:
        return lambda s: f"{fmt(_get(s, 'phase_a', per_s))} ({fmt(_get(s, 'phase_a', secs), 2)} s)"

    return [
        ("worker", lambda s: s["worker"]),
        ("A: enqueue", lambda s: str(_get(s, "phase_a", "method") or "-")),
        ("A: accepted tasks/s (first enqueue to last returned)", rate_s("accepted_per_s", "enqueue_s")),
        ("A: completed tasks/s end to end (first enqueue to last start)", rate_s("completed_per_s", "completed_s")),
        ("A: drain after the last enqueue, s", lambda s: fmt(_get(s, "phase_a", "drain_after_last_enqueue_s"), 2)),
        ("A: executed / missing / duplicates", execs("phase_a")),
        ("A: pickup under saturation, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_a", "pickup_ms"), 0)),
        *_cpu_rows("phase_a", "A"),
        ("B: sent, achieved rate/s", lambda s: f"{fmt(_get(s, 'phase_b', 'sent'))}, "
                                               f"{fmt(_get(s, 'phase_b', 'achieved_rate'), 1)}"),
        ("B: pickup latency, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_b", "pickup_ms"))),
        ("B: enqueue call, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_b", "enqueue_call_ms"), 2)),
        ("B: executed / missing / duplicates", execs("phase_b")),
        *_cpu_rows("phase_b", "B"),
        ("worker ready (start to warm-up done), s", lambda s: fmt(s.get("worker_ready_s"), 2)),
        ("error", lambda s: s.get("error") or "-"),
    ]


def format_table(result: dict[str, Any]) -> str:
    systems = list(result["systems"].values())
    lines = ["| figure | " + " | ".join(s["label"] for s in systems) + " |",
             "| --- |" + " ---: |" * len(systems)]
    for name, cell in table_rows():
        lines.append(f"| {name} | " + " | ".join(" ".join(cell(s).replace("|", "/").split()) for s in systems) + " |")
    return "\n".join(lines)


def format_report(result: dict[str, Any], command: str) -> str:
    cfg, m, v = result["config"], result["machine"], result["versions"]
    ver = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    lines = [
        "# Peers: Celery + Redis and Dramatiq + Redis, no-op tasks (loadtest/peers/run_peers.py)",
        "",
        f"Run {result['started']} with `{command}`.",
        "",
        f"Machine: nproc {m['nproc']}, python {m['python']}, git {m['git']}, load average at start"
        f" {m['loadavg_start']}, at end {m['loadavg_end']}. Versions: {ver}.",
        "",
        f"Phase A: {cfg['n']:,} no-op tasks enqueued by one producer in batches of {cfg['batch']:,}. Phase B:"
        f" {cfg['rate']:g} tasks/s for {cfg['seconds']:g} s, one enqueue call per task. Each system has its own"
        f" redis-server (no persistence) and worker process, warmed up with {cfg['warmup']} tasks. A task's start is"
        f" recorded in-process (StartRecorder.record, {result['record_cost_us']} us per call) and pushed to Redis"
        " in batches every 20 ms by a thread of the worker process.",
        "",
        format_table(result),
        "",
        "Worker commands:",
        "",
    ]
    for s in result["systems"].values():
        cmd = " ".join(["python", *s["worker_command"][1:]]) if s["worker_command"] else "-"
        lines.append(f"- {s['label']}: `{cmd}`")
    lines += ["", "Phase A per worker process: tasks executed (pid: count) and CPU seconds:", ""]
    for s in result["systems"].values():
        lines.append(f"- {s['label']}: tasks {_get(s, 'phase_a', 'executions', 'by_process') or '-'};"
                     f" CPU s {_get(s, 'phase_a', 'cpu', 'worker_by_process') or '-'}")
    lines += ["", "CPU is utime + stime from /proc over each phase (to when the last task's record was seen),"
              " divided by the phase's tasks; 'worker' is the worker's main process and all its children,"
              " 'everything else' the rest of the machine (other people's work on a shared machine).", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the command line

def overall_timeout_s(cfg: PeersConfig) -> int:
    """An upper bound for the whole run, after which main() stops it (and cleans up) whatever it is doing."""
    per_system = cfg.start_timeout_s + 2 * cfg.drain_timeout_s + cfg.seconds + cfg.drain_timeout_s + 90
    return int(per_system * len(cfg.systems))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = PeersConfig()
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--n", type=int, default=d.n, help=f"phase A tasks (default {d.n:,})")
    p.add_argument("--rate", type=float, default=d.rate, help=f"phase B tasks/s (default {d.rate:g})")
    p.add_argument("--seconds", type=float, default=d.seconds, help=f"phase B duration (default {d.seconds:g} s)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, from: celery,dramatiq")
    p.add_argument("--batch", type=int, default=d.batch, help=f"phase A tasks per batch (default {d.batch:,})")
    p.add_argument("--warmup", type=int, default=d.warmup, help=f"warm-up tasks (default {d.warmup})")
    p.add_argument("--celery-pool", choices=["prefork", "threads", "solo"], default=d.celery_pool)
    p.add_argument("--celery-concurrency", type=int, default=d.celery_concurrency)
    p.add_argument("--celery-prefetch", type=int, default=d.celery_prefetch, help="--prefetch-multiplier")
    p.add_argument("--celery-enqueue", choices=["group", "loop"], default=d.celery_enqueue,
                   help="phase A: group(...).apply_async() per batch, or apply_async(producer=...) in a loop")
    p.add_argument("--dramatiq-processes", type=int, default=d.dramatiq_processes)
    p.add_argument("--dramatiq-threads", type=int, default=d.dramatiq_threads)
    p.add_argument("--start-timeout-s", type=float, default=d.start_timeout_s)
    p.add_argument("--drain-timeout-s", type=float, default=d.drain_timeout_s,
                   help="longest wait for a phase's tasks to have run (and for phase A's enqueueing)")
    p.add_argument("--stall-timeout-s", type=float, default=d.stall_timeout_s,
                   help="give up waiting when no task has run for this long")
    p.add_argument("--redis-server", default=d.redis_server, help="the redis-server binary")
    report.add_report_options(p, "peers")
    args = p.parse_args(argv)
    args.systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        p.error(f"--systems: unknown {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if args.n <= 0 or args.batch <= 0 or args.rate <= 0 or args.seconds <= 0 or args.warmup <= 0:
        p.error("--n, --batch, --rate, --seconds and --warmup must be positive")
    return args


class RunTimeout(BaseException):
    """The whole run's time limit: a BaseException, so that run_system's `except Exception` lets it through."""


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    options = {f.name: getattr(args, f.name) for f in dataclasses.fields(PeersConfig)
               if f.name not in ("n", "rate", "seconds", "systems")}
    cfg = PeersConfig(n=args.n, rate=args.rate, seconds=args.seconds, systems=args.systems, **options)

    def on_term(signum: int, frame: Any) -> None:  # SIGTERM: unwind like Ctrl-C, so that cleanup runs
        raise KeyboardInterrupt

    def on_alarm(signum: int, frame: Any) -> None:
        raise RunTimeout(f"the whole run took over {overall_timeout_s(cfg)} s")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(overall_timeout_s(cfg))
    command = report.command_line("loadtest.peers.run_peers", argv)
    try:
        result = run_peers(cfg.n, cfg.rate, cfg.seconds, cfg.systems, **options)
    finally:
        signal.alarm(0)
    print()
    print(format_table(result))
    print()
    print(f"versions: {result['versions']}; record() {result['record_cost_us']} us per call")
    report.publish(args, result, command, format_report)
    if not all(s["complete"] for s in result["systems"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
