"""The peers benchmark's configuration and the records of its results (what peers.json holds)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from harness.stats import percentile

SYSTEMS = ("celery", "dramatiq")
LABELS = {"celery": "Celery+Redis", "dramatiq": "Dramatiq+Redis"}
POLL_S = 0.02


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


# ---------------------------------------------------------------- latency

def latency_ms(values_s: Iterable[float]) -> Latency:
    v = sorted(x * 1000 for x in values_s)
    if not v:
        return Latency(count=0)
    return Latency(count=len(v), p50=percentile(v, 50), p90=percentile(v, 90), p99=percentile(v, 99), max=v[-1],
                   min=v[0], mean=sum(v) / len(v))
