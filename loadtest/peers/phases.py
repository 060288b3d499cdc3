"""The peers benchmark's run: for each system its Redis and worker, the warm-up, phase A (throughput)
and phase B (pickup at a fixed rate), measured from the start records and observe.GroupCpuMeter."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import importlib.metadata
import os
import pathlib
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from loadtest.bench.observe import GroupCpuMeter, git_revision
from loadtest.bench.report import fmt
from loadtest.peers.model import (
    LABELS,
    POLL_S,
    SYSTEMS,
    CpuUse,
    Executions,
    PeersConfig,
    PhaseA,
    PhaseB,
    SystemResult,
    latency_ms,
)
from loadtest.peers.redis_server import (
    RedisServer,
    Start,
    count_starts,
    read_starts,
    record_cost_us,
    redis_server_version,
)
from loadtest.peers.workers import Driver, WorkerProcess, make_driver, worker_env

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


def phase_a(driver: Driver, client: Any, worker: WorkerProcess, meter: GroupCpuMeter, cfg: PeersConfig) -> PhaseA:
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
    cpu = cpu_use(meter.stop(), enqueued)
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


def phase_b(driver: Driver, client: Any, worker: WorkerProcess, meter: GroupCpuMeter, cfg: PeersConfig) -> PhaseB:
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
    cpu = cpu_use(meter.stop(), total)
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
        meter = GroupCpuMeter({"worker": worker.pids, "redis-server": lambda: [redis_pid] if redis_pid else [],
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
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "git": git_revision(),
                    "loadavg_start": load_start, "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "versions": versions(),
        "record_cost_us": round(record_cost_us(), 2),
        "systems": {r.system: {**dataclasses.asdict(r), "complete": complete(r)} for r in results},
    }


def complete(r: SystemResult) -> bool:
    return (r.error is None and r.phase_a is not None and r.phase_b is not None
            and r.phase_a.executions.complete and r.phase_b.executions.complete)


# ---------------------------------------------------------------- versions and CPU

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


def cpu_use(figures: dict[str, Any], tasks: int) -> CpuUse:
    """observe.GroupCpuMeter's figures of a phase, per task, with "everything else" on the machine."""
    groups, busy, wall, cores = figures["groups"], figures["machine_busy_s"], figures["wall_s"], figures["cores"]
    used: dict[str, float] = {name: g["cpu_s"] for name, g in groups.items()}
    worker = groups.get("worker", {"by_pid": {}, "gone": 0})
    main = next(iter(worker["by_pid"]), None)  # descendants() lists the worker's main process first
    by_process = {f"{'main' if pid == main else 'child'} {pid}": cpu for pid, cpu in worker["by_pid"].items()}
    used["everything else"] = round(max(0.0, busy - sum(used.values())), 3)
    per_task = {k: round(v / tasks * 1e6, 1) for k, v in used.items()} if tasks else {}
    if tasks:
        per_task["machine total"] = round(busy / tasks * 1e6, 1)
    return CpuUse(wall_s=round(wall, 3), tasks=tasks, cores=cores,
                  machine_busy_pct=round(100 * busy / (wall * cores), 1) if wall > 0 else 0.0,
                  process_cpu_s=used, per_task_us=per_task, worker_processes=len(worker["by_pid"]),
                  worker_processes_gone=worker["gone"], worker_by_process=by_process)
