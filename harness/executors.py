"""SDK executors that record every execution (task, attempt, epoch, start time), so that
tests and benchmarks can count duplicates, early starts and stale deliveries.

- `RecordingExecutor`: in this process.
- `ExecutorProcess`: the same in a child process (for the faults a process suffers:
  kill -9 mid-task, a hung process, a dropped connection); every execution is appended
  to a JSON-lines file as it starts, so what it ran before it died is still counted.

    python -m harness.executors --zk HOSTS --record FILE [--port N] [--advertise-port N]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.processes import ChildProcess, free_port
from harness.wait import wait_until
from taskring import Executor, NonRetryableError, RetryableError


@dataclasses.dataclass(frozen=True)
class Execution:
    task_id: str
    task_type: str
    attempt: int
    epoch: int
    started_ms: int
    due_ms: int | None
    heartbeat_details: Any = None
    """The last heartbeat details of an earlier attempt, as this one was given them."""


class RecordingExecutor:
    """Executor of namespace `ns` whose handlers record every run.

    Handlers: `ok` (succeeds), `fail_then_ok` (fails payload["failures"] times),
    `poison` (always raises RuntimeError), `fatal` (NonRetryableError),
    `slow` (sleeps payload["ms"] then succeeds), `beating` (works payload["ms"] in steps of
    payload["every_ms"], heart-beating its progress, resuming from an earlier attempt's), and
    `ok-0` .. `ok-31` (succeed; many types so that load spreads over many slots).
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
        for name in ("ok", "fail_then_ok", "poison", "fatal", "slow", "beating"):
            self.executor.add_handler(name, getattr(self, f"_{name}"))
        for name in self.SPREAD_TYPES:
            self.executor.add_handler(name, self._ok)
        for name in self.FLAKY_TYPES:
            self.executor.add_handler(name, self._fail_first_attempts)

    def _record(self, ctx) -> int:
        due = ctx.payload.get("due_ms")
        with self._lock:
            execution = Execution(ctx.task_id, ctx.task_type, ctx.attempt, ctx.epoch, int(time.time() * 1000), due,
                                  ctx.heartbeat_details)
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

    def _beating(self, ctx) -> None:
        self._record(ctx)
        done = int((ctx.heartbeat_details or {}).get("done_ms", 0))
        step = int(ctx.payload.get("every_ms", 200))
        while done < int(ctx.payload.get("ms", 1000)):
            time.sleep(step / 1000)
            done += step
            ctx.heartbeat({"done_ms": done})   # raises TaskStopped once told to stop

    def start(self) -> RecordingExecutor:
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


# ---------------------------------------------------------------- in a process of its own

class FileRecordingExecutor(RecordingExecutor):
    def __init__(self, zk_hosts: str, record: Path, **options):
        super().__init__(zk_hosts, **options)
        self._file = open(record, "a", buffering=1, encoding="utf-8")

    def _appended(self, execution: Execution) -> None:
        self._file.write(json.dumps(dataclasses.asdict(execution)) + "\n")


class ExecutorProcess(ChildProcess):
    """The FileRecordingExecutor as a child process, with the process faults."""

    READY = b"executor ready"

    def __init__(self, zk_hosts: str, logs: Path, name: str = "executor-b", advertise_port: int | None = None):
        self.zk_hosts = zk_hosts
        self.port = free_port()
        self.advertise_port = advertise_port
        self.record = logs / f"{name}.jsonl"
        super().__init__(name, [], logs / f"{name}.log")

    def start(self) -> ExecutorProcess:
        # The command is made here: a test may set advertise_port (a proxy's) after construction.
        self.args = [sys.executable, "-m", "harness.executors", "--zk", self.zk_hosts, "--record", str(self.record),
                     "--port", str(self.port)]
        if self.advertise_port:
            self.args += ["--advertise-port", str(self.advertise_port)]
        super().start()
        wait_until(lambda: self.READY in self.log_path.read_bytes() or not self.alive(), 30,
                   f"the executor process to register (log {self.log_path})")
        assert self.alive(), self.log_tail()
        return self

    def executions(self) -> list[Execution]:
        if not self.record.exists():
            return []
        out = []
        for line in self.record.read_text().splitlines():
            try:
                out.append(Execution(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a line cut by kill -9
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zk", required=True)
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--advertise-port", type=int)
    args = parser.parse_args()
    executor = FileRecordingExecutor(args.zk, args.record, port=args.port, advertise_port=args.advertise_port,
                                     zk_session_timeout_s=3.0)
    # The handler only notes the signal: setting an Event from it can deadlock on the
    # Event's own lock, held by this thread inside wait() when the signal lands.
    signalled: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: signalled.append(signum))
    executor.start()
    print(f"executor ready at {executor.executor.address}", flush=True)
    while not signalled:
        time.sleep(0.1)
    executor.stop()


if __name__ == "__main__":
    main()
