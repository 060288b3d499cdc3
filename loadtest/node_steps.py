"""CPU per task of each step the node's Python takes for an immediate no-op task, no I/O.

A benchmark, not a test, and it needs no servers. It runs the node's own code for each
step of a task's happy path over batches of 1,000 typical tasks (namespace "bench", 32
types, a small JSON payload, no task_id), and reports the median over the runs of
time.process_time per task:

- accept: `TaskApi.SubmitBatch` from the request's bytes to its response (validation,
  envelopes, rows, the Kafka messages, the response), with a store and a producer that
  answer at once; then the insert's statement text (`TaskStore.insert_in` on a cursor that
  only keeps the text).
- intake: each message made a Due (`due_of_message`) and pushed into the due queue.
- dispatch: popped from the due queue; a Delivery built per task as `Dispatch._deliver`
  does and the ExecuteRequest serialized as the Work stream sends it.
- outcome: the executor's ExecuteResponse parsed; each outcome decided (`decide`); the
  outcome write's statement text (`attempt_writes.record_outcomes` on the text-keeping
  cursor); each Kafka offset tracked and settled.

What it leaves out is the glue around these steps: the event loop, gRPC's and Kafka's
clients, the thread hops, the metrics. The node's measured CPU per task (bench_node.py)
minus this total is that glue.

    .venv/bin/python -m loadtest.node_steps            # 7 runs of 20 batches
    .venv/bin/python -m loadtest.node_steps --runs 15

Compare versions back to back, alternately (another checkout's copy: run its own
loadtest/node_steps.py): the box's other load moves CPU time.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import pathlib
import random
import statistics
import time
from collections.abc import Callable
from typing import TypeVar, cast

from dispatcher.api.service import TaskApi
from dispatcher.api.validation import Limits
from dispatcher.base.clock import Clock
from dispatcher.base.config import NodeConfig
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.due import due_of_message
from dispatcher.engine.due_queue import DueQueue
from dispatcher.engine.outcomes import decide
from dispatcher.engine.watermark import OffsetTracker
from dispatcher.log.interface import OutMessage
from dispatcher.params import api_params, decide_params
from dispatcher.store import attempt_writes
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.mysql import TaskStore
from taskring.wire import pb

REPO = pathlib.Path(__file__).resolve().parents[1]

BATCH = 1_000
T = TypeVar("T")
TYPES = 32


class _AtOnceStore:
    """The one store call the accept makes, answered at once: nothing stood there."""

    def insert_tasks(self, rows, node):
        return {}


class _AtOnceProducer:
    def __init__(self) -> None:
        self.sent: list[OutMessage] = []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    async def send(self, messages):
        self.sent = list(messages)
        return [None] * len(messages)


class _TextCursor:
    """A cursor that keeps the statements' text and says every row matched."""

    class _Connection:
        @staticmethod
        def escape(value) -> str:
            return "'" + str(value).replace("'", "''") + "'"

        def rollback(self) -> None:
            pass

    connection = _Connection()

    def __init__(self) -> None:
        self.chars = 0

    def execute(self, sql: str, args=None) -> int:
        self.chars += len(sql)
        return sql.count("WHEN '") // 2 or BATCH

    def executemany(self, sql: str, rows) -> int:
        return len(rows)


def _request(batch: int) -> bytes:
    return pb.SubmitBatchRequest(tasks=[pb.Task(namespace="bench", task_type=f"noop-{i % TYPES}",
                                                payload_json=f'{{"i": {i}, "s": "abc"}}') for i in range(batch)]
                                 ).SerializeToString()


@dataclasses.dataclass
class _Steps:
    """One run's µs per task of each step."""

    figures: dict[str, float] = dataclasses.field(default_factory=dict)

    def time(self, name: str, tasks: int, fn: Callable[[], T]) -> T:
        t0 = time.process_time()
        out = fn()
        self.figures[name] = self.figures.get(name, 0.0) + (time.process_time() - t0) / tasks * 1e6
        return out


def one_run(batches: int, config: NodeConfig, loop: asyncio.AbstractEventLoop) -> dict[str, float]:
    steps = _Steps()
    producer = _AtOnceProducer()
    api = TaskApi(params=api_params(config), store=cast(TaskStoreProtocol, _AtOnceStore()), producer=producer,
                  metrics=NodeMetrics(), limits=Limits())
    request = _request(BATCH)
    rng = random.Random(7)
    for _ in range(batches):
        _one_batch(steps, api, producer, request, config, rng, loop)
    return {name: value / batches for name, value in steps.figures.items()}


def _one_batch(steps: _Steps, api: TaskApi, producer: _AtOnceProducer, request: bytes, config: NodeConfig,
               rng: random.Random, loop: asyncio.AbstractEventLoop) -> None:
    # accept
    steps.time("accept: SubmitBatch, request bytes to response", BATCH, lambda: loop.run_until_complete(
        api.SubmitBatch(pb.SubmitBatchRequest.FromString(request), None)))
    messages = producer.sent
    envelopes = [pb.QueuedTask.FromString(m.value).task for m in messages]
    rows = [r.NewTask(task_id=t.task_id, slot=3, namespace=t.namespace, task_type=t.task_type, priority=t.priority,
                      status=r.ENQUEUED, trigger_at=Clock().now(), envelope=t.SerializeToString(),
                      created_at=Clock().now()) for t in envelopes]
    steps.time("accept: the insert's statement", BATCH, lambda: TaskStore.insert_in(_TextCursor(), rows, "node-1"))
    # intake
    now_ms = Clock().now_ms()
    due = DueQueue(100_000)
    dues = steps.time("intake: message to Due", BATCH, lambda: [
        due_of_message(m.value, slot=3, epoch=5, topic=m.topic, offset=i, now_ms=now_ms, compact=False)
        for i, m in enumerate(messages)])
    steps.time("intake: push into the due queue", BATCH, lambda: due.push_many(dues))
    tracker = OffsetTracker(0)
    steps.time("intake: offset tracked", BATCH, lambda: list(map(tracker.track, range(BATCH))))
    # dispatch
    popped = steps.time("dispatch: pop", BATCH, lambda: due.pop_due(now_ms + 60_000, BATCH))

    def deliveries() -> list[pb.Delivery]:
        out = []
        for d in popped:
            d.task.retry_count = d.attempt - 1
            out.append(pb.Delivery(task=d.task, attempt=d.attempt, epoch=d.epoch, timeout_ms=d.task.timeout_ms))
        return out
    built = steps.time("dispatch: Delivery per task", BATCH, deliveries)
    steps.time("dispatch: ExecuteRequest serialized", BATCH, lambda: pb.ExecuteRequest(
        deliveries=built, dispatcher_node="node-1").SerializeToString())
    # outcome
    for d in popped:
        d.dispatched_ms = now_ms
    reply = pb.ExecuteResponse(outcomes=[pb.Outcome(
        task_id=d.task_id, attempt=1, kind=pb.OUTCOME_KIND_SUCCEEDED, started_at_ms=now_ms + 1,
        finished_at_ms=now_ms + 2) for d in popped]).SerializeToString()
    outcomes = steps.time("outcome: ExecuteResponse parsed", BATCH, lambda: list(
        pb.ExecuteResponse.FromString(reply).outcomes))
    params = decide_params(config)
    writes = steps.time("outcome: decided", BATCH, lambda: [
        decide(d, o, now_ms + 3, params, rng).write for d, o in zip(popped, outcomes)])
    steps.time("outcome: the write's statement", BATCH, lambda: attempt_writes.record_outcomes(
        _TextCursor(), writes, {3: 5}, Clock().now()))
    steps.time("outcome: offset settled", BATCH, lambda: list(map(tracker.finish, range(BATCH))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--batches", type=int, default=20, help="batches of 1,000 per run")
    args = p.parse_args()
    config = NodeConfig.from_env({}, cluster=False)
    loop = asyncio.new_event_loop()
    runs = [one_run(args.batches, config, loop) for _ in range(args.runs)]
    loop.close()
    print(f"# node_steps.py: µs of CPU per task, median of {args.runs} runs of {args.batches} batches of {BATCH:,}\n")
    print("| step | µs / task |")
    print("| --- | ---: |")
    total = 0.0
    for name in runs[0]:
        value = statistics.median(run[name] for run in runs)
        total += value
        print(f"| {name} | {value:.2f} |")
    print(f"| **total** | **{total:.1f}** |")


if __name__ == "__main__":
    main()
