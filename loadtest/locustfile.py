"""Locust load for a running taskring node: users that submit batches of tasks.

Each user holds one sync `taskring.Client` (gRPC) and calls `submit_batch` in a
loop; every call is reported to Locust's `request` event (type "grpc", name
"SubmitBatch xN"), so Locust's table shows calls/s and latency per call, and
tasks/s is calls/s x the batch size (printed at the end too). Failures are the
SDK's errors (taskring.errors.RpcError and its subclasses).

    TASKRING_TARGET=127.0.0.1:7070 .venv/bin/locust -f loadtest/locustfile.py --headless -u 4 -r 4 -t 30s

Environment:

    TASKRING_TARGET      the node's gRPC address (default 127.0.0.1:7070)
    TASKRING_NAMESPACE   namespace of the tasks (default "loadtest"); an executor of
                         this namespace must run, or the tasks wait (accepted, not run)
    TASKRING_TASK_TYPES  comma-separated task types, used round-robin (default "noop");
                         use many, since all tasks of one type share one slot
    TASKRING_BATCH       tasks per SubmitBatch (default 100; the server's cap is 1,000)
    TASKRING_DELAY_MS    delay of every task (default 0: due at once)
    TASKRING_WAIT_S      pause between a user's calls (default 0)

`loadtest/bench_node.py --serve 600` starts a private node with executors and
prints the variables to use; `bench_node.py --locust-s 20` runs this file itself.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import time

import grpc.experimental.gevent as grpc_gevent
from locust import User, constant, events, task

from taskring import Client, TaskSpec
from taskring.errors import TaskringError

# grpc's C core must cooperate with gevent, which Locust runs on: without this a
# blocking RPC would stall every user in the process. gRPC asks for it after the
# standard library is patched (importing locust patches it) and before any gRPC object.
grpc_gevent.init_gevent()

TARGET = os.environ.get("TASKRING_TARGET", "127.0.0.1:7070")
NAMESPACE = os.environ.get("TASKRING_NAMESPACE", "loadtest")
TASK_TYPES = [t.strip() for t in os.environ.get("TASKRING_TASK_TYPES", "noop").split(",") if t.strip()]
BATCH = int(os.environ.get("TASKRING_BATCH", "100"))
DELAY_MS = int(os.environ.get("TASKRING_DELAY_MS", "0"))
WAIT_S = float(os.environ.get("TASKRING_WAIT_S", "0"))

log = logging.getLogger("taskring.locust")
_seq = itertools.count()


@dataclasses.dataclass
class _Totals:
    accepted: int = 0
    duplicates: int = 0
    failed_calls: int = 0
    started: float | None = None    # time.monotonic() at the test's start


_totals = _Totals()


@events.test_start.add_listener
def _on_start(environment, **_kwargs) -> None:
    _totals.started = time.monotonic()
    log.info("taskring locust: target %s, namespace %s, %d task types, batch %d, delay %d ms",
             TARGET, NAMESPACE, len(TASK_TYPES), BATCH, DELAY_MS)


@events.test_stop.add_listener
def _on_stop(environment, **_kwargs) -> None:
    started = _totals.started
    elapsed = time.monotonic() - started if started else 0.0
    rate = _totals.accepted / elapsed if elapsed > 0 else 0.0
    # print, not log: shown even with --only-summary and a quiet log level
    print(f"taskring: accepted {_totals.accepted:,} tasks in {elapsed:.1f} s = {rate:,.0f} tasks/s"
          f" ({_totals.duplicates} duplicates, {_totals.failed_calls} failed calls)", flush=True)


class TaskringUser(User):
    """Submits batches of no-op tasks through the SDK's sync client."""

    wait_time = constant(WAIT_S)

    def on_start(self) -> None:
        self.taskring = Client(TARGET, rpc_timeout_s=30.0)

    def on_stop(self) -> None:
        self.taskring.close()

    def _specs(self) -> list[TaskSpec]:
        delay = DELAY_MS / 1000 if DELAY_MS else None
        out = []
        for _ in range(BATCH):
            i = next(_seq)
            out.append(TaskSpec(namespace=NAMESPACE, task_type=TASK_TYPES[i % len(TASK_TYPES)],
                                payload={"seq": i}, delay=delay))
        return out

    @task
    def submit_batch(self) -> None:
        specs = self._specs()
        t0 = time.perf_counter()
        accepted, exc = 0, None
        try:
            results = self.taskring.submit_batch(specs)
            accepted = sum(1 for r in results if not r.duplicate)
            _totals.accepted += accepted
            _totals.duplicates += len(results) - accepted
        except TaskringError as e:
            exc = e
            _totals.failed_calls += 1
        self.environment.events.request.fire(
            request_type="grpc", name=f"SubmitBatch x{BATCH}",
            response_time=(time.perf_counter() - t0) * 1000, response_length=accepted,
            exception=exc, context={"target": TARGET},
        )
