"""Shared machinery for tests that run taskring nodes against the real stack.

- `TaskringEnv`: one test's private world: a MySQL database, a ZooKeeper chroot
  and Kafka topics (`<prefix>.{high,normal,low}`, one partition per slot).
- `NodeProcess`: a dispatcher node as a real OS process (`taskring node`), with
  the fault helpers the fault tests need: terminate, kill -9, pause, resume.
- `RecordingExecutor`: an SDK executor whose handlers record every execution
  (task, attempt, epoch, start time), so tests can count duplicates.
- `wait_until`: poll a condition with a deadline; tests never sleep to green.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable

from taskring import Executor, NonRetryableError, RetryableError

REPO = Path(__file__).resolve().parents[2]


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.05):
    """Return the predicate's first truthy value; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class TaskringEnv:
    stack: object                 # tests.conftest.StackEndpoints
    database: str
    zk_hosts: str                 # with this test's chroot
    topic_prefix: str
    partitions: int
    logs: Path

    def node_env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "TASKRING_ZK": self.zk_hosts,
            "TASKRING_KAFKA": self.stack.kafka_bootstrap,
            "TASKRING_MYSQL_HOST": self.stack.host,
            "TASKRING_MYSQL_PORT": str(self.stack.mysql_port),
            "TASKRING_MYSQL_DATABASE": self.database,
            "TASKRING_TOPIC_PREFIX": self.topic_prefix,
            "TASKRING_PARTITIONS": str(self.partitions),
            "TASKRING_LOG_LEVEL": "INFO",
        })
        env.update(extra)
        return env

    def sql(self, query: str, args=()) -> list[tuple]:
        conn = self.stack.mysql_connect(self.database)
        try:
            with conn.cursor() as cur:
                cur.execute(query, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def status_counts(self) -> dict[str, int]:
        return dict(self.sql("SELECT status, COUNT(*) FROM tasks GROUP BY status"))

    def epochs(self) -> dict[int, int]:
        return dict(self.sql("SELECT slot, epoch FROM slot_owners"))


class ProcessFaults:
    """The faults a test does to a child process it started (`self.proc`), by its PID."""

    proc: subprocess.Popen | None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9 (resumed first if paused, so it dies at once) and reap it."""
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


class NodeProcess(ProcessFaults):
    """`taskring node` in its own process; logs go to <logs>/<node_id>.log."""

    def __init__(self, env: TaskringEnv, node_id: str, *, single: bool = False, **extra_env: str):
        self.env = env
        self.node_id = node_id
        self.single = single
        self.extra_env = extra_env
        self.grpc_port = free_port()
        self.admin_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = env.logs / f"{node_id}.log"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def admin(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def start(self) -> "NodeProcess":
        args = [sys.executable, "-m", "dispatcher.cli", "node", "--node-id", self.node_id,
                "--grpc-port", str(self.grpc_port), "--admin-port", str(self.admin_port), "--no-admin-token"]
        if self.single:
            args.append("--single")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, cwd=REPO, env=self.env.node_env(**self.extra_env),
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    def get(self, path: str, timeout_s: float = 3.0):
        with urllib.request.urlopen(self.admin + path, timeout=timeout_s) as response:
            return json.loads(response.read())

    def probe(self, path: str) -> bool:
        try:
            self.get(path, timeout_s=1.0)
            return True
        except Exception:
            return False

    def metric(self, name: str) -> float:
        """One unlabelled sample from the node's /metrics."""
        with urllib.request.urlopen(self.admin + "/metrics", timeout=3) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise AssertionError(f"node {self.node_id} exports no {name}")

    def status(self) -> dict:
        return self.get("/ring")["node_status"]

    def wait_ready(self, timeout_s: float = 30.0) -> "NodeProcess":
        def ready():
            if not self.alive():
                raise AssertionError(f"node {self.node_id} exited ({self.proc.returncode}); log: {self.log_path}\n"
                                     + self.log_tail())
            return self.probe("/readyz")
        wait_until(ready, timeout_s, f"node {self.node_id} to be ready (log {self.log_path})", 0.1)
        return self

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def terminate(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait: the node hands its slots off cleanly."""
        if not self.alive():
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)



@dataclasses.dataclass(frozen=True)
class Execution:
    task_id: str
    task_type: str
    attempt: int
    epoch: int
    started_ms: int
    due_ms: int | None


class RecordingExecutor:
    """Executor of namespace `ns` whose handlers record every run.

    Handlers: `ok` (succeeds), `fail_then_ok` (fails payload["failures"] times),
    `poison` (always raises RuntimeError), `fatal` (NonRetryableError),
    `slow` (sleeps payload["ms"] then succeeds), and `ok-0` .. `ok-31` (succeed;
    many types so that load spreads over many slots).
    """

    SPREAD_TYPES = tuple(f"ok-{i}" for i in range(32))
    FLAKY_TYPES = tuple(f"flaky-{i}" for i in range(16))
    """Fail attempts 1 .. payload["failures"], then succeed; over many slots."""

    def __init__(self, zk_hosts: str, ns: str = "tests", max_in_flight: int = 256, **executor_options):
        self.ns = ns
        self.executor = Executor(ns, zk_hosts=zk_hosts, max_in_flight=max_in_flight, **executor_options)
        self._lock = threading.Lock()
        self.executions: list[Execution] = []
        self._runs: Counter = Counter()
        for name in ("ok", "fail_then_ok", "poison", "fatal", "slow"):
            self.executor.add_handler(name, getattr(self, f"_{name}"))
        for name in self.SPREAD_TYPES:
            self.executor.add_handler(name, self._ok)
        for name in self.FLAKY_TYPES:
            self.executor.add_handler(name, self._fail_first_attempts)

    def _record(self, ctx) -> int:
        due = ctx.payload.get("due_ms")
        with self._lock:
            execution = Execution(ctx.task_id, ctx.task_type, ctx.attempt, ctx.epoch, int(time.time() * 1000), due)
            self.executions.append(execution)
            self._appended(execution)
            # Counted as they come: a scan of every execution per run made a 100,000-task
            # row spend its time here rather than in the system under test.
            self._runs[ctx.task_id] += 1
            return self._runs[ctx.task_id]

    def _appended(self, execution: Execution) -> None:
        """Called under the lock with each execution recorded: for subclasses."""

    def _ok(self, ctx) -> None:
        self._record(ctx)

    def _fail_then_ok(self, ctx) -> None:
        runs = self._record(ctx)
        if runs <= int(ctx.payload.get("failures", 0)):
            raise RetryableError(f"planned failure {runs}")

    def _fail_first_attempts(self, ctx) -> None:
        # By attempt, not by runs seen here: with several executors, each sees only its share.
        self._record(ctx)
        if ctx.attempt <= int(ctx.payload.get("failures", 0)):
            raise RetryableError(f"planned failure of attempt {ctx.attempt}")

    def _poison(self, ctx) -> None:
        self._record(ctx)
        raise RuntimeError("poison task always fails")

    def _fatal(self, ctx) -> None:
        self._record(ctx)
        raise NonRetryableError("this input can never succeed")

    def _slow(self, ctx) -> None:
        self._record(ctx)
        time.sleep(int(ctx.payload.get("ms", 100)) / 1000)

    def start(self) -> "RecordingExecutor":
        self.executor.start()
        return self

    def stop(self) -> None:
        self.executor.stop(grace_s=2)

    def snapshot(self) -> list[Execution]:
        with self._lock:
            return list(self.executions)

    def runs_by_task(self) -> Counter:
        return Counter(e.task_id for e in self.snapshot())

    def duplicates(self) -> dict[str, int]:
        """Tasks executed more than once for the same attempt number."""
        seen = Counter((e.task_id, e.attempt) for e in self.snapshot())
        return {tid: n for (tid, _a), n in seen.items() if n > 1}


def new_test_id() -> str:
    return uuid.uuid4().hex[:10]


def stale_deliveries(executions: list[Execution], slot_of_task: dict[str, int]) -> list[tuple[int, int, int]]:
    """Deliveries of an older epoch that started after a newer epoch's first
    delivery in the same slot: two owners acting on one slot at once.
    Returns (slot, old_epoch, new_epoch) triples."""
    by_slot: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for e in executions:
        slot = slot_of_task.get(e.task_id)
        if slot is not None:
            by_slot[slot][e.epoch].append(e.started_ms)
    bad = []
    for slot, epochs in by_slot.items():
        ordered = sorted(epochs)
        for i, old in enumerate(ordered):
            for new in ordered[i + 1:]:
                if max(epochs[old]) > min(epochs[new]):
                    bad.append((slot, old, new))
    return bad
