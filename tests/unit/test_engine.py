"""The engine's logic, on the in-memory twins: MemoryTaskStore, MemoryLog (with its
producer and intake), the real ExecutorPool over a fake directory whose executor
answers in-process, and a clock that moves only when a test moves it.

No I/O and no sleeping to green: a test waits on a condition with a short
deadline (`eventually`), and "nothing happens before X" is checked after the
engine has looked at the clock many more times (`engine_looked`) with the clock
held just before X.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import json
import random
import time
from collections.abc import Callable
from typing import Any

from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_datetime
from dispatcher.base.config import KafkaConfig, NodeConfig
from dispatcher.base.loop_task import LoopWatch
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine import dispatch as dispatch_module
from dispatcher.engine.engine import Engine
from dispatcher.engine.executor_pool import ExecutorPool
from dispatcher.log.codec import queued_message
from dispatcher.log.memory import MemoryIntake, MemoryLog, MemoryProducer
from dispatcher.params import engine_params
from dispatcher.policy.fairness import FairPolicy
from dispatcher.policy.retry import RetryPolicies
from dispatcher.policy.scheduling import Rate, TypeLimits
from dispatcher.store import records as r
from dispatcher.store.memory import MemoryTaskStore
from membership import ExecutorInstance
from taskring.wire import pb

T0_MS = 1_900_000_000_000          # 2030-03-17, a whole second
SLOT = 0
WAIT_S = 3.0
NORMAL = pb.PRIORITY_NORMAL

SUCCEEDED = pb.OUTCOME_KIND_SUCCEEDED
RETRYABLE = pb.OUTCOME_KIND_RETRYABLE_FAILURE
NON_RETRYABLE = pb.OUTCOME_KIND_NON_RETRYABLE_FAILURE


# ---------------------------------------------------------------- fakes

class FakeClock(Clock):
    """Holds still until told to move; counts reads, so a test can tell the engine
    has been looking at it."""

    def __init__(self, now_ms: int = T0_MS):
        self._now_ms = now_ms
        self.reads = 0

    def now_ms(self) -> int:
        self.reads += 1
        return self._now_ms

    def set(self, ms: int) -> None:
        self._now_ms = ms

    def advance(self, ms: int) -> None:
        self._now_ms += ms


class FakeDirectory:
    """The executor directory: namespace -> instances, changed by the test."""

    def __init__(self, *namespaces: str):
        self._by_ns = {ns: self._instances(ns) for ns in namespaces}

    @staticmethod
    def _instances(ns: str) -> tuple[ExecutorInstance, ...]:
        return (ExecutorInstance(f"{ns}-1", f"in-process/{ns}", ("send",), 100),)

    def add(self, ns: str, *task_types: str) -> None:
        self._by_ns[ns] = self._instances(ns) if not task_types else (
            *self._by_ns.get(ns, ()), ExecutorInstance(f"{ns}-{len(self._by_ns.get(ns, ())) + 1}",
                                                      f"in-process/{ns}", task_types, 100))

    def instances(self, namespace: str, *, wait_s: float | None = None) -> tuple[ExecutorInstance, ...]:
        return self._by_ns.get(namespace, ())


@dataclasses.dataclass(frozen=True)
class Call:
    task_id: str
    attempt: int
    epoch: int
    retry_count: int
    at_ms: int
    call_no: int = dataclasses.field(default=0, compare=False)
    """The Execute call that carried it (an Execute call frees its places when its last task ends)."""


class FakeExecutor:
    """The Execute endpoint of every instance, in-process. Each task gets the outcome
    kinds scripted for it, attempt by attempt (the last repeats; default: success);
    a task with a gate waits for it before answering."""

    def __init__(self, clock: FakeClock):
        self._clock = clock
        self.script: dict[str, list[pb.OutcomeKind]] = {}
        self.gates: dict[str, asyncio.Event] = {}
        self.calls: list[Call] = []
        self._call_no = 0

    def attempts(self, task_id: str) -> list[int]:
        return [c.attempt for c in self.calls if c.task_id == task_id]

    def open_gates(self) -> None:
        for gate in self.gates.values():
            gate.set()

    async def Execute(self, request: pb.ExecuteRequest, timeout: float | None = None) -> pb.ExecuteResponse:
        self._call_no += 1
        return pb.ExecuteResponse(outcomes=await asyncio.gather(*(self._run(d, self._call_no)
                                                                   for d in request.deliveries)))

    async def _run(self, d: pb.Delivery, call_no: int = 0) -> pb.Outcome:
        started = self._clock.now_ms()
        self.calls.append(Call(d.task.task_id, d.attempt, d.epoch, d.task.retry_count, started, call_no))
        gate = self.gates.get(f"{d.task.task_id}@{d.attempt}") or self.gates.get(d.task.task_id)
        if gate is not None:
            await gate.wait()
        kinds = self.script.get(d.task.task_id, [SUCCEEDED])
        kind = kinds[min(d.attempt, len(kinds)) - 1]
        error = "" if kind == SUCCEEDED else f"attempt {d.attempt} failed"
        return pb.Outcome(task_id=d.task.task_id, attempt=d.attempt, kind=kind, error=error,
                          started_at_ms=started, finished_at_ms=self._clock.now_ms())


class InProcessPool(ExecutorPool):
    """The real pool (instance choice, capacity, outcome bookkeeping) with its gRPC
    stub replaced by the in-process executor."""

    def __init__(self, directory: FakeDirectory, executor: FakeExecutor, may_send: Callable[[], bool] = lambda: True):
        super().__init__(directory, node_id="n1", now_ms=Clock().now_ms,
                         lease_remaining_ms=lambda: 3_000 if may_send() else 0, use_streams=False)
        self._executor = executor

    def _stub(self, address: str) -> FakeExecutor:  # type: ignore[override]  # stands in for the stub: Execute only
        return self._executor


# ---------------------------------------------------------------- the world of one test

class World:
    def __init__(self, store: MemoryTaskStore | None = None, intake_batch: int = 1_000,
                 type_limits: dict[tuple[str, str], TypeLimits] | None = None,
                 fairness: dict[tuple[str, str], FairPolicy] | None = None, **config: Any):
        self.clock = FakeClock()
        self.intake_batch = intake_batch
        self.store = store or MemoryTaskStore()
        self.store.ensure_slots(4)
        self.log = MemoryLog(partitions=4)
        self.producer = MemoryProducer(self.log)
        self.directory = FakeDirectory("ns", "slow")
        self.executor = FakeExecutor(self.clock)
        self.metrics = NodeMetrics()
        self.loops = LoopWatch()
        self.lost: list[int] = []
        self.intake: MemoryIntake | None = None
        # The session lease, as the engine's dispatch loop and the pool's send see it.
        self.lease_at_dispatch = True
        self.lease_at_send = True
        defaults: dict[str, Any] = dict(node_id="n1", slot_count=4, route_threshold_ms=10_000, poll_interval_ms=5,
                        poll_lookahead_ms=2_000, poll_batch=50, dispatch_batch=50, heap_capacity=1_000,
                        offset_commit_interval_ms=5, kafka=KafkaConfig(topic_prefix="t"), cluster=False)
        self.config = dataclasses.replace(NodeConfig(**defaults), **config)
        self.topic = self.config.kafka.topic_for(NORMAL)
        self.engine = Engine(params=engine_params(self.config), store=self.store, producer=self.producer,
                             intake_factory=self._intake,
                             executors=InProcessPool(self.directory, self.executor, lambda: self.lease_at_send),
                             metrics=self.metrics, clock=self.clock, rng=random.Random(7),
                             on_slot_lost=self.lost.append, may_send=lambda: self.lease_at_dispatch,
                             loops=self.loops, type_limits=type_limits, fairness=fairness)

    def _intake(self, deliver, closed_topics) -> MemoryIntake:
        self.intake = MemoryIntake(self.log, deliver, closed_topics, batch=self.intake_batch)
        return self.intake

    async def __aenter__(self) -> World:
        self.producer.start()
        await self.engine.start()
        return self

    async def __aexit__(self, *exc) -> None:
        self.executor.open_gates()
        await self.engine.stop()
        self.producer.stop()
        if exc[0] is None and isinstance(self.store, MemoryTaskStore):
            # Every history the engine wrote follows the lifecycle's table (records.py).
            wrong = {task_id: r.history_errors([e.state for e in events])
                     for task_id, events in self.store.histories().items()}
            assert not any(wrong.values()), {k: v for k, v in wrong.items() if v}

    async def own(self, slot: int = SLOT) -> int:
        epoch = self.store.claim_slot(slot, "n1", self.clock.now())
        await self.engine.slot_assigned(slot, epoch)
        return epoch

    async def submit(self, task_id: str, *, due_in_ms: int = 0, route: str = "kafka", namespace: str = "ns",
                     max_retries: int = 3, backoff_ms: int = 500, task_type: str = "send",
                     priority: pb.Priority = NORMAL, payload_json: str = "{}") -> int:
        """What the API does: the row first, then (Kafka path) the message. Returns the due time."""
        due_ms = self.clock.now_ms() + due_in_ms
        task = pb.Task(task_id=task_id, namespace=namespace, task_type=task_type, payload_json=payload_json,
                       timeout_ms=1_000, max_retries=max_retries, priority=priority,
                       retry_policy=pb.RetryPolicy(schedule_ms=[backoff_ms]))
        self.store.insert_tasks([r.NewTask(
            task_id=task_id, slot=SLOT, namespace=namespace, task_type=task_type, priority=priority,
            status=r.ENQUEUED if route == "kafka" else r.PENDING, trigger_at=ms_to_datetime(due_ms),
            envelope=task.SerializeToString(), created_at=self.clock.now())], "api")
        if route == "kafka":
            topic = self.config.kafka.topic_for(priority)
            assert await self.producer.send([queued_message(topic, task, SLOT, 1, due_ms)]) == [None]
        return due_ms

    def row(self, task_id: str) -> r.TaskRow:
        return self.store.get_task(task_id)[0]

    def status(self, task_id: str) -> tuple[str, int]:
        row = self.row(task_id)
        return row.status, row.attempts

    def states(self, task_id: str) -> list[str]:
        return [e.state for e in self.store.get_task(task_id)[1]]

    def no_executor(self, namespace: str) -> float:
        return self.metrics.registry.get_sample_value("taskring_no_executor_total", {"namespace": namespace}) or 0

    def committed(self, slot: int = SLOT) -> int | None:
        return self.store.committed_offsets().get((self.topic, slot))

    def queued(self) -> list[tuple[str, int, int]]:
        """(task_id, attempt, due_at_ms) of every message in the log, in order."""
        out = []
        for m in self.log.messages(self.topic, SLOT):
            q = pb.QueuedTask.FromString(m.value)
            out.append((q.task.task_id, q.attempt, q.due_at_ms))
        return out

    async def engine_looked(self, times: int = 50) -> None:
        """Wait until the engine has read the clock `times` more times: its loops have
        had every chance to act on the time as it stands. (With no slot owned only
        the dispatch loop reads it, every 50 ms when idle: ask for a few reads.)"""
        target = self.clock.reads + times
        await eventually(lambda: self.clock.reads >= target, f"the engine to read the clock {times} times")


async def eventually(condition: Callable[[], bool], what: str = "condition", timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.001)


def scenario(fn):
    """Run an async test on its own event loop, with a deadline."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), timeout=10))
    return run


# ---------------------------------------------------------------- delivery and time

@scenario
async def test_a_kafka_task_is_delivered_once_and_never_before_its_due_time():
    async with World() as w:
        # Given a Kafka-path task due in 5 s, in the heap of the slot's owner
        epoch = await w.own()
        due_ms = await w.submit("a", due_in_ms=5_000)
        await eventually(lambda: w.engine.heap_size() == 1, "the task in the heap")
        # When the clock stands 1 ms before its due time
        w.clock.set(due_ms - 1)
        await w.engine_looked()
        # Then it has not run
        assert w.executor.calls == [] and w.status("a") == (r.ENQUEUED, 0)
        # When it falls due
        w.clock.set(due_ms)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        await w.engine_looked()
        # Then it ran once, at its due time, as attempt 1 under the owner's epoch
        assert w.executor.calls == [Call("a", 1, epoch, 0, due_ms)]
        assert w.states("a") == ["accepted", "queued", "dispatched", "running", "succeeded"]


@scenario
async def test_a_mysql_task_is_claimed_ahead_but_delivered_only_when_due():
    async with World(poll_lookahead_ms=2_000) as w:
        # Given a MySQL-path task due in 60 s
        await w.own()
        due_ms = await w.submit("m", due_in_ms=60_000, route="mysql")
        await w.engine_looked()
        assert w.status("m") == (r.PENDING, 0)      # not within the lookahead yet
        # When the clock is within the lookahead, then 1 ms before due
        w.clock.set(due_ms - 1_000)
        await eventually(lambda: w.status("m") == (r.CLAIMED, 0), "the poller's claim")
        w.clock.set(due_ms - 1)
        await w.engine_looked()
        # Then it waits in the heap
        assert w.executor.calls == [] and w.engine.heap_size() == 1
        # When it falls due, it runs once
        w.clock.set(due_ms)
        await eventually(lambda: w.status("m") == (r.SUCCEEDED, 1), "success")
        await w.engine_looked()
        assert [(c.task_id, c.attempt, c.at_ms) for c in w.executor.calls] == [("m", 1, due_ms)]


# ---------------------------------------------------------------- retries and dead letters

@scenario
async def test_a_short_retry_is_a_new_kafka_message_for_the_next_attempt():
    async with World(route_threshold_ms=10_000) as w:
        # Given a task whose first attempt fails retryably, with a 500 ms backoff
        await w.own()
        w.executor.script["a"] = [RETRYABLE, SUCCEEDED]
        await w.submit("a", backoff_ms=500)
        # When attempt 1 has failed
        await eventually(lambda: len(w.queued()) == 2, "the retry's message")
        # Then the row waits on the Kafka path and the log holds attempt 2, due 500 ms later
        failed_at = w.executor.calls[0].at_ms
        assert w.status("a") == (r.ENQUEUED, 1)
        assert w.queued()[1] == ("a", 2, failed_at + 500)
        assert datetime_to_ms(w.row("a").trigger_at) == failed_at + 500
        await w.engine_looked()
        assert w.executor.attempts("a") == [1]
        # When the backoff has passed
        w.clock.advance(500)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2), "the retry's success")
        # Then attempt 2 ran with retry_count 1
        assert [(c.attempt, c.retry_count) for c in w.executor.calls] == [(1, 0), (2, 1)]
        assert w.states("a")[3:] == ["running", "retry_wait", "queued", "dispatched", "running", "succeeded"]


@scenario
async def test_a_long_retry_is_a_pending_row_for_the_poller():
    async with World(route_threshold_ms=10_000, poll_lookahead_ms=2_000) as w:
        # Given a task whose first attempt fails retryably, with a 60 s backoff
        await w.own()
        w.executor.script["a"] = [RETRYABLE, SUCCEEDED]
        await w.submit("a", backoff_ms=60_000)
        # When attempt 1 has failed
        await eventually(lambda: w.status("a") == (r.PENDING, 1), "the retry's row")
        # Then the retry waits in MySQL, and no message was produced for it
        failed_at = w.executor.calls[0].at_ms
        assert datetime_to_ms(w.row("a").trigger_at) == failed_at + 60_000
        assert len(w.queued()) == 1
        # When the backoff has passed, the poller brings it back as attempt 2
        w.clock.advance(60_000)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2), "the retry's success")
        assert w.executor.attempts("a") == [1, 2]


@scenario
async def test_after_max_retries_plus_one_attempts_the_task_is_dead_lettered():
    async with World() as w:
        # Given a task with max_retries 2 that always fails retryably
        await w.own()
        w.executor.script["a"] = [RETRYABLE]
        await w.submit("a", max_retries=2, backoff_ms=100)
        # When each retry's backoff passes
        for attempt in (1, 2):
            def retried(a: int = attempt) -> bool:
                return w.status("a") == (r.ENQUEUED, a)
            await eventually(retried, f"retry after attempt {attempt}")
            w.clock.advance(100)
        # Then the third attempt's failure dead-letters it
        await eventually(lambda: w.status("a") == (r.DEAD_LETTERED, 3), "the dead letter")
        await w.engine_looked()
        assert w.executor.attempts("a") == [1, 2, 3]
        assert [attempt for _, attempt, _ in w.queued()] == [1, 2, 3]   # no message for a 4th
        dead = w.store.dead_letters()["a"]
        assert (dead.attempts, dead.last_error) == (3, "attempt 3 failed")
        last = w.store.get_task("a")[1][-1]
        assert (last.state, last.attempt, last.detail) == ("dead_lettered", 3, "gave up after 3 attempts")


@scenario
async def test_a_non_retryable_failure_dead_letters_at_once():
    async with World() as w:
        # Given a task with retries left whose handler refuses it for good
        await w.own()
        w.executor.script["a"] = [NON_RETRYABLE]
        await w.submit("a", max_retries=5)
        # Then its first attempt dead-letters it
        await eventually(lambda: w.status("a") == (r.DEAD_LETTERED, 1), "the dead letter")
        await w.engine_looked()
        assert w.executor.attempts("a") == [1] and len(w.queued()) == 1
        assert "a" in w.store.dead_letters()
        assert w.store.get_task("a")[1][-1].detail == "non-retryable failure"


@scenario
async def test_no_executor_postpones_without_spending_an_attempt():
    async with World() as w:
        # Given a due task of a namespace that has no executor
        await w.own()
        await w.submit("a", namespace="nobody")
        await eventually(lambda: w.no_executor("nobody") == 1, "the postponement")
        # Then it is neither dispatched nor charged an attempt
        assert w.status("a") == (r.ENQUEUED, 0) and "dispatched" not in w.states("a")
        # When an executor registers, the task still waits out its postponement
        w.directory.add("nobody")
        await w.engine_looked()
        assert w.executor.calls == []
        w.clock.advance(1_000)
        # Then it runs as attempt 1
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        assert w.executor.attempts("a") == [1]


@scenario
async def test_a_node_whose_executors_are_full_pops_no_more_than_they_can_take():
    async with World(dispatch_batch=500) as w:
        popped: list[int] = []
        pop_due = w.engine._due.pop_due
        def counting_pop(now_ms: int, limit: int, room: int | None = None) -> list:
            got = pop_due(now_ms, limit, room)
            popped.append(len(got))
            return got
        w.engine._due.pop_due = counting_pop  # type: ignore[method-assign]
        # Given 300 due tasks that block, and one executor with room for 100
        await w.own()
        for i in range(300):
            w.executor.gates[f"t{i}"] = asyncio.Event()
            await w.submit(f"t{i}")
        await eventually(lambda: len(w.executor.calls) == 100, "the executor to fill up")
        before = len(popped)
        await w.engine_looked()
        # Then, while it is full, a look at the due queue takes a probe, not a batch
        assert all(n <= dispatch_module._PROBE for n in popped[before:]), popped[before:]
        # And when the tasks finish, the rest run, each once
        w.executor.open_gates()
        for i in range(300):
            w.executor.gates.pop(f"t{i}")
        await eventually(lambda: all(w.status(f"t{i}") == (r.SUCCEEDED, 1) for i in range(300)), "all 300 to succeed")
        assert sorted(c.task_id for c in w.executor.calls) == sorted(f"t{i}" for i in range(300))


# ---------------------------------------------------------------- priority

@scenario
async def test_a_backlog_of_low_tasks_pauses_the_low_topic_only_and_high_ones_go_first():
    # A heap of 1,000: low may fill 600 of it (less a poll's reserve of 100) before its
    # topic pauses; the high topic is still read, and what comes in goes first.
    async with World(heap_capacity=1_000, poll_batch=50, intake_batch=20) as w:
        await w.own()
        low_topic = w.config.kafka.topic_for(pb.PRIORITY_LOW)

        def unread_low() -> int:
            return w.intake.lag().get((low_topic, SLOT), 0) if w.intake is not None else 0

        submitted = [0]

        def all_accounted() -> bool:
            """Every low task submitted is started, waiting in the engine or unread: nothing read
            is still on its way to the event loop (where this test also runs)."""
            held = w.engine._due.held_by_class()[pb.PRIORITY_LOW]
            return len(w.executor.calls) + held + unread_low() == submitted[0]

        for _ in range(60):
            for i in range(submitted[0], submitted[0] + 20):
                w.executor.gates[f"low{i}"] = asyncio.Event()
                await w.submit(f"low{i}", priority=pb.PRIORITY_LOW)
            submitted[0] += 20
            await eventually(all_accounted, "the reads to land")
        assert len(w.executor.calls) == 100, "the executor is full of low tasks"
        # Paused at its share, less the reserve of a poll (2 x 50), give or take one read.
        held = w.engine._due.held_by_class()
        assert 500 - 20 <= held[pb.PRIORITY_LOW] <= 500 + 20 and unread_low() > 0, (held, unread_low())
        for i in range(5):
            await w.submit(f"high{i}", priority=pb.PRIORITY_HIGH)
        await eventually(lambda: w.engine._due.held_by_class()[pb.PRIORITY_HIGH] == 5,
                         "the high tasks read while the low topic is paused")
        # What admission reads: high waits behind the 5 high tasks only, low behind everything.
        ahead = w.engine.load().ahead
        assert ahead[pb.PRIORITY_HIGH].held == 5 and ahead[pb.PRIORITY_HIGH].unread == 0, ahead
        assert ahead[pb.PRIORITY_LOW].held > 400 and ahead[pb.PRIORITY_LOW].unread > 0, ahead
        # When the executor frees up, the high tasks start before the low backlog behind them.
        w.executor.open_gates()
        await eventually(lambda: all(w.status(f"high{i}") == (r.SUCCEEDED, 1) for i in range(5)), "high to succeed")
        order = [c.task_id for c in w.executor.calls]
        assert max(order.index(f"high{i}") for i in range(5)) < 100 + 50, order[100:160]
        await eventually(lambda: all(w.status(f"low{i}") == (r.SUCCEEDED, 1) for i in range(1_200)),
                         "the whole low backlog to succeed once the topic resumes")


@scenario
async def test_lower_work_leaves_the_share_kept_for_high_free_and_a_high_task_starts_at_once():
    async with World(high_reserve_share=0.1) as w:     # one executor of 100: 10 kept for high
        await w.own()
        for i in range(150):
            w.executor.gates[f"low{i}"] = asyncio.Event()
            await w.submit(f"low{i}", priority=pb.PRIORITY_LOW)
        await eventually(lambda: len(w.executor.calls) == 90, "low tasks to fill all but the kept share")
        await w.engine_looked()
        assert len(w.executor.calls) == 90
        for i in range(3):
            await w.submit(f"high{i}", priority=pb.PRIORITY_HIGH)
        await eventually(lambda: all(w.status(f"high{i}") == (r.SUCCEEDED, 1) for i in range(3)),
                         "the high tasks to run while low ones hold the rest")
        w.executor.open_gates()
        await eventually(lambda: all(w.status(f"low{i}") == (r.SUCCEEDED, 1) for i in range(150)), "all low to run")


# ---------------------------------------------------------------- concurrency limits

@scenario
async def test_a_type_at_its_limit_waits_without_taking_executor_room_and_runs_as_places_free():
    async with World(type_limits={("ns", "send"): TypeLimits(2)}) as w:
        await w.own()
        for i in range(10):
            w.executor.gates[f"t{i}"] = asyncio.Event()
            await w.submit(f"t{i}")
        for i in range(5):   # a type without a limit, in the same slot, is not held back
            w.executor.gates[f"free{i}"] = asyncio.Event()
            await w.submit(f"free{i}", namespace="slow")
        await eventually(lambda: len(w.executor.calls) == 2 + 5, "two limited and five free tasks to start")
        await w.engine_looked()
        limited = [c.task_id for c in w.executor.calls if c.task_id.startswith("t")]
        assert len(limited) == 2, limited
        assert w.engine._due.parked() == {("ns", "send", "concurrency"): 8}
        await eventually(lambda: w.store.wait_note("t9") == (1, "concurrency limit per_type (at most 2 running)"),
                         "why t9 waits to be noted for GetTask")
        assert w.engine._executors.free_room() == 2 * 100 - 7, "parked tasks took executor room"
        waiting = w.metrics.registry.get_sample_value("taskring_limit_waiting",
                                                      {"namespace": "ns", "task_type": "send", "limit": "concurrency"})
        assert waiting == 8
        # As running ones finish, as many start: never more than two at once. (An Execute call's
        # outcomes come together, so places free by batch here; over a Work stream each frees
        # its place as it ends: tests/integration/test_limits.py.)
        def limited_calls() -> list[str]:
            return [c.task_id for c in w.executor.calls if c.task_id.startswith("t")]

        def finished_and_next_started(done: frozenset[str]) -> bool:
            return all(w.status(t)[0] == r.SUCCEEDED for t in done) and len(limited_calls()) == min(10, len(done) + 2)

        started: frozenset[str] = frozenset()
        for _ in range(5):
            running = [t for t in limited_calls() if not w.executor.gates[t].is_set()]
            assert len(running) == 2 and not started & set(running), running
            started |= set(running)
            for task_id in running:
                w.executor.gates[task_id].set()
            await eventually(functools.partial(finished_and_next_started, started),
                             f"two more limited tasks to start after {len(started)} finished")
        w.executor.open_gates()
        await eventually(lambda: all(w.status(f"t{i}") == (r.SUCCEEDED, 1) for i in range(10)), "all to succeed")
        assert w.engine._gate.running() == {} and not w.engine._due.has_parked()


@scenario
async def test_a_failed_attempt_frees_its_place_and_its_retry_waits_for_one_like_any_other():
    async with World(type_limits={("ns", "send"): TypeLimits(1)}) as w:
        await w.own()
        w.executor.script["a"] = [RETRYABLE, SUCCEEDED]
        await w.submit("a", backoff_ms=5)
        await eventually(lambda: w.status("a") == (r.ENQUEUED, 1), "a's first attempt to fail, its retry queued")
        w.executor.gates["b"] = asyncio.Event()
        await w.submit("b")
        await eventually(lambda: w.executor.attempts("b") == [1], "b to take the place a's failure freed")
        w.clock.advance(10)                     # a's retry is due, and waits for b's place
        await eventually(lambda: w.engine._due.parked() == {("ns", "send", "concurrency"): 1},
                         "a's retry to wait at the limit")
        await w.engine_looked()
        assert w.executor.attempts("a") == [1]
        w.executor.open_gates()
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2) and w.status("b") == (r.SUCCEEDED, 1),
                         "both to succeed")
        assert w.engine._gate.running() == {}


@scenario
async def test_retries_over_the_retry_cap_wait_in_turn_and_first_attempts_go_on():
    async with World(type_limits={("ns", "send"): TypeLimits(max_retrying=1)}) as w:
        await w.own()
        for i in range(5):
            w.executor.script[f"r{i}"] = [RETRYABLE, SUCCEEDED]
            w.executor.gates[f"r{i}@2"] = asyncio.Event()
            await w.submit(f"r{i}", backoff_ms=5)
        await eventually(lambda: all(w.status(f"r{i}") == (r.ENQUEUED, 1) for i in range(5)), "five first failures")
        w.clock.advance(10)                # every retry is due: one runs, four wait on the cap
        await eventually(lambda: w.engine._due.parked() == {("ns", "send", "retry_cap"): 4}, "four retries waiting")
        await eventually(lambda: len([c for c in w.executor.calls if c.attempt == 2]) == 1, "one retry to start")
        await w.submit("fresh")            # a first attempt does not wait behind the cap
        await eventually(lambda: w.status("fresh") == (r.SUCCEEDED, 1), "a first attempt to run meanwhile")
        for n in range(5):
            running = [c.task_id for c in w.executor.calls if c.attempt == 2
                       and not w.executor.gates[f"{c.task_id}@2"].is_set()]
            assert len(running) == 1, running
            w.executor.gates[f"{running[0]}@2"].set()

            def ended_and_next_started(task_id: str, started: int) -> bool:
                return w.status(task_id) == (r.SUCCEEDED, 2) and \
                    len([c for c in w.executor.calls if c.attempt == 2]) == started
            await eventually(functools.partial(ended_and_next_started, running[0], min(5, n + 2)),
                             f"retry {n + 2} to start after retry {n + 1} ended")
        assert w.engine._gate.held() == {}


@scenario
async def test_a_key_at_its_limit_waits_and_other_keys_go_on():
    limits = TypeLimits(max_running_per_key=1, key="shop:{shop}")
    async with World(type_limits={("ns", "send"): limits}) as w:
        await w.own()
        for shop in ("a", "b"):
            for i in range(3):
                w.executor.gates[f"{shop}{i}"] = asyncio.Event()
                await w.submit(f"{shop}{i}", payload_json=json.dumps({"shop": shop}))
        await w.submit("keyless")       # no shop: the key "", a key of its own
        await eventually(lambda: sorted(c.task_id for c in w.executor.calls) == ["a0", "b0", "keyless"],
                         "one task of each key to start")
        await w.engine_looked()
        assert w.engine._due.parked() == {("ns", "send", "key:shop:a"): 2, ("ns", "send", "key:shop:b"): 2}
        await eventually(lambda: w.store.wait_note("a2") == (1, "concurrency limit per_key shop:a (at most 1 running)"),
                         "why a2 waits to be noted")
        assert w.engine._gate.held() == {("ns", "send", "per_key"): 3, ("ns", "send", "concurrency"): 3}
        w.executor.open_gates()
        await eventually(lambda: all(w.status(f"{s}{i}") == (r.SUCCEEDED, 1) for s in "ab" for i in range(3)),
                         "every task to run, a key at a time")
        assert w.engine._gate.held() == {} and not w.engine._due.has_parked()


@scenario
async def test_new_policies_let_what_waited_at_a_removed_limit_or_rate_go():
    limits = {("ns", "send"): TypeLimits(1), ("ns", "rated"): TypeLimits(rate=Rate(1, 60_000, 1))}
    async with World(type_limits=limits) as w:
        w.directory.add("ns", "send", "rated")
        await w.own()
        for i in range(3):
            w.executor.gates[f"t{i}"] = asyncio.Event()
            await w.submit(f"t{i}")
            await w.submit(f"r{i}", task_type="rated")
        waiting = {("ns", "send", "concurrency"): 2, ("ns", "rated", "rate"): 2}
        await eventually(lambda: w.engine._due.parked() == waiting, "two of each to wait")
        w.engine.set_policies(RetryPolicies())   # the file no longer limits either type
        await eventually(lambda: _started(w) == 6, "everything to start once the limits are gone")
        assert not w.engine._due.has_parked()
        w.executor.open_gates()


# ---------------------------------------------------------------- rate limits

def _started(w) -> int:
    return len(w.executor.calls)


@scenario
async def test_a_rate_limited_type_starts_a_burst_then_one_per_token_and_the_rest_wait_parked():
    async with World(type_limits={("ns", "send"): TypeLimits(rate=Rate(2, 1000, 2))}) as w:
        await w.own()
        for i in range(7):
            await w.submit(f"t{i}")
        await eventually(lambda: _started(w) == 2, "the burst of two to start")
        await w.engine_looked()
        assert _started(w) == 2 and w.engine._due.parked() == {("ns", "send", "rate"): 5}
        await eventually(lambda: w.store.wait_note("t6") == (1, "rate limit per_type (2 starts per 1000 ms)"),
                         "why t6 waits to be noted")
        waiting = w.metrics.registry.get_sample_value("taskring_limit_waiting",
                                                      {"namespace": "ns", "task_type": "send", "limit": "rate"})
        assert waiting == 5
        for advance_ms, started in ((500, 3), (1_000, 5), (1_000, 7)):
            w.clock.advance(advance_ms)
            await eventually(functools.partial(lambda n: _started(w) == n, started), f"{started} started")
            await w.engine_looked()
            assert _started(w) == started, "more started than the tokens that came"
        await eventually(lambda: all(w.status(f"t{i}") == (r.SUCCEEDED, 1) for i in range(7)), "all to succeed")
        assert not w.engine._due.has_parked()


@scenario
async def test_a_key_over_its_rate_waits_and_other_keys_go_on():
    limits = TypeLimits(rate_per_key=Rate(1, 1000, 1), key="shop:{shop}")
    async with World(type_limits={("ns", "send"): limits}) as w:
        await w.own()
        for shop in ("a", "b"):
            for i in range(3):
                await w.submit(f"{shop}{i}", payload_json=json.dumps({"shop": shop}))
        await eventually(lambda: sorted(c.task_id for c in w.executor.calls) == ["a0", "b0"],
                         "one task of each key to start")
        await w.engine_looked()
        assert w.engine._due.parked() == {("ns", "send", "rate_key:shop:a"): 2, ("ns", "send", "rate_key:shop:b"): 2}
        w.clock.advance(1_000)
        await eventually(lambda: _started(w) == 4, "one more of each key a period later")
        await w.engine_looked()
        assert sorted(c.task_id for c in w.executor.calls)[:4] == ["a0", "a1", "b0", "b1"] and _started(w) == 4
        w.clock.advance(1_000)
        await eventually(lambda: all(w.status(f"{s}{i}") == (r.SUCCEEDED, 1) for s in "ab" for i in range(3)),
                         "every task to run, a token at a time")


# ---------------------------------------------------------------- fair shares

@scenario
async def test_a_quiet_tenant_starts_within_a_few_places_behind_a_noisy_tenants_backlog():
    async with World(fairness={("ns", "send"): FairPolicy("t:{t}")}) as w:
        await w.own()
        noisy = [f"noisy{i}" for i in range(300)]
        for task_id in noisy:
            w.executor.gates[task_id] = asyncio.Event()
            await w.submit(task_id, payload_json='{"t": "noisy"}')
        await eventually(lambda: _started(w) == 100, "the noisy tenant to fill the executor")
        await w.engine_looked()
        assert w.engine._due.parked() == {("ns", "send", "fair:t:noisy"): 200}
        for i in range(5):
            await w.submit(f"quiet{i}", payload_json='{"t": "quiet"}')
        await eventually(lambda: w.engine._due.parked().get(("ns", "send", "fair:t:quiet")) == 5,
                         "the quiet tasks to wait for their turn")
        # One call of noisy tasks ends (FIFO would give its places to 200 noisy tasks due first).
        first_call = [c.task_id for c in w.executor.calls if c.call_no == w.executor.calls[0].call_no]
        for task_id in first_call:
            w.executor.gates[task_id].set()
        quiet_done = [f"quiet{i}" for i in range(5)]
        await eventually(lambda: all(w.executor.attempts(t) == [1] for t in quiet_done),
                         f"the quiet tenant's five tasks to start in the {len(first_call)} places one call freed")
        await w.engine_looked()
        assert _started(w) == 100 + len(first_call), "more started than places freed"
        w.executor.open_gates()
        await eventually(lambda: all(w.status(t) == (r.SUCCEEDED, 1) for t in noisy), "the noisy backlog to run")
        assert not w.engine._due.has_parked()


@scenario
async def test_after_a_crash_the_earlier_owners_running_attempt_counts_against_the_limit_until_its_timeout():
    async with World(type_limits={("ns", "send"): TypeLimits(1)}, recovery_grace_ms=500) as w:
        # n0 owned the slot and dispatched "old" (timeout 1 s), then died without an outcome.
        epoch0 = w.store.claim_slot(SLOT, "n0", w.clock.now())
        await w.submit("old", route="mysql")
        _, rows = w.store.claim_due(SLOT, epoch0, w.clock.now(), 10, w.clock.now())
        assert [row.task_id for row in rows] == ["old"]
        done, _ = w.store.begin_dispatch([r.DispatchClaim("old", SLOT, 1, "mysql", w.clock.now())], {SLOT: epoch0},
                                         "n0", w.clock.now())
        assert done == {"old"}
        await w.own()                      # claimed: "old" is pending again, its attempt in doubt
        await w.submit("new")
        await w.engine_looked()
        assert w.executor.calls == [], "started while the earlier owner's attempt may still run"
        assert w.engine._gate.running() == {("ns", "send"): 1}
        w.clock.advance(1_000 + 500)       # its timeout and the grace: it cannot be running any more
        await eventually(lambda: w.status("old")[0] == r.SUCCEEDED and w.status("new")[0] == r.SUCCEEDED,
                         "both to run once the place is free")
        assert w.engine._gate.running() == {}


# ---------------------------------------------------------------- fencing

@scenario
async def test_a_stale_epoch_makes_the_engine_drop_the_slot_and_write_nothing_more():
    async with World() as w:
        # Given attempt 1 of "a" in flight (its outcome would be a short retry), and a
        # MySQL-path task "later" not yet due
        await w.own()
        w.executor.script["a"] = [RETRYABLE]
        w.executor.gates["a"] = asyncio.Event()
        await w.submit("a")
        later_ms = await w.submit("later", due_in_ms=60_000, route="mysql")
        await eventually(lambda: w.executor.attempts("a") == [1], "attempt 1 in flight")
        # When another node claims the slot
        w.store.claim_slot(SLOT, "n2", w.clock.now())
        before = {t: w.store.get_task(t) for t in ("a", "later")}
        committed = w.store.committed_offsets()
        w.executor.gates["a"].set()
        # Then the engine drops the slot as soon as the store refuses a write
        await eventually(lambda: SLOT in w.lost, "the slot to be dropped")
        assert w.engine.owned() == {} and w.engine.heap_size() == 0
        fenced = w.metrics.registry.get_sample_value("taskring_fenced_writes_total")
        assert fenced is not None and fenced >= 1
        # And writes nothing more: no outcome, no retry message, no commit, no claim
        w.clock.set(later_ms)
        await w.engine_looked(times=4)
        assert {t: w.store.get_task(t) for t in ("a", "later")} == before
        assert w.status("a") == (r.PENDING, 1)     # as the new owner's claim left it
        assert len(w.queued()) == 1 and w.store.committed_offsets() == committed
        assert w.executor.attempts("later") == []


class CountingStore(MemoryTaskStore):
    """Counts record_outcomes calls that returned."""

    recorded = 0

    def record_outcomes(self, writes, epochs, now):
        try:
            return super().record_outcomes(writes, epochs, now)
        finally:
            self.recorded += 1


@scenario
async def test_a_slot_refused_twice_while_it_is_being_dropped_is_dropped_once():
    store = CountingStore()
    async with World(store=store) as w:
        intake = w.intake
        assert intake is not None
        # Given attempt 1 of "a" in flight, and an intake slow to apply unassignment
        # (KafkaIntake applies it between reads)
        await w.own()
        w.executor.gates["a"] = asyncio.Event()
        await w.submit("a")
        await eventually(lambda: w.executor.attempts("a") == [1], "attempt 1 in flight")
        intake.hold_commands()
        # When another node claims the slot: the poller is refused first, and the
        # engine starts dropping the slot
        w.store.claim_slot(SLOT, "n2", w.clock.now())
        await eventually(lambda: intake.held_commands() == 1, "the drop to wait on the intake")
        # And the in-flight outcome is refused too
        w.executor.gates["a"].set()
        await eventually(lambda: store.recorded == 1, "the refused outcome")
        await w.engine_looked(times=4)
        intake.release_commands()
        # Then the slot was dropped once
        await eventually(lambda: SLOT in w.lost and SLOT not in w.engine.owned(), "the slot dropped")
        await w.engine_looked(times=4)
        assert w.lost == [SLOT]
        assert w.metrics.registry.get_sample_value("taskring_fenced_writes_total") == 1


# ---------------------------------------------------------------- the Kafka path under failure

@scenario
async def test_a_retry_kafka_refuses_is_rerouted_to_mysql():
    # A lookahead shorter than the backoff, so the poller leaves the rerouted row pending
    async with World(route_threshold_ms=10_000, poll_lookahead_ms=100) as w:
        # Given a task whose first attempt fails retryably with a short backoff, and
        # Kafka refusing produce from then on
        await w.own()
        w.executor.script["a"] = [RETRYABLE, SUCCEEDED]
        await w.submit("a", backoff_ms=500)
        w.producer.fail_sends()
        # When attempt 1 has failed
        await eventually(lambda: w.status("a") == (r.PENDING, 1), "the reroute")
        # Then the retry waits in MySQL instead, and the first message is settled
        assert len(w.producer.refused) == 1 and len(w.queued()) == 1
        await eventually(lambda: w.committed() == 1, "the offset past the first message")
        # When its backoff passes, the poller runs it
        w.clock.advance(500)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2), "the retry's success")
        assert w.executor.attempts("a") == [1, 2]


@scenario
async def test_the_committed_offset_never_passes_a_task_in_flight():
    async with World() as w:
        # Given "slow" at offset 0, in flight, and "fast" at offset 1, done
        await w.own()
        w.executor.gates["slow"] = asyncio.Event()
        await w.submit("slow", namespace="slow")
        await w.submit("fast")
        await eventually(lambda: w.status("fast") == (r.SUCCEEDED, 1), "fast done")
        await eventually(lambda: w.committed() == 0, "a commit")
        # When the engine has had every chance to commit
        await w.engine_looked()
        # Then the committed offset is still that of "slow"
        assert w.committed() == 0
        # When "slow" finishes, the offset moves past both
        w.executor.gates["slow"].set()
        await eventually(lambda: w.committed() == 2, "the offset past both")
        assert w.status("slow") == (r.SUCCEEDED, 1)


@scenario
async def test_the_committed_offset_never_passes_a_task_waiting_in_the_heap():
    async with World() as w:
        # Given "later" at offset 0, due in 5 s, and "now" at offset 1, done
        await w.own()
        later_ms = await w.submit("later", due_in_ms=5_000)
        await w.submit("now")
        await eventually(lambda: w.status("now") == (r.SUCCEEDED, 1), "now done")
        await eventually(lambda: w.committed() == 0, "a commit")
        await w.engine_looked()
        assert w.committed() == 0
        # When "later" runs, the offset moves past both
        w.clock.set(later_ms)
        await eventually(lambda: w.committed() == 2, "the offset past both")


@scenario
async def test_a_failed_begin_dispatch_puts_the_task_back_without_settling_its_offset():
    async with World() as w:
        # Given the store refusing the first begin_dispatch
        await w.own()
        w.store.fail("begin_dispatch")
        await w.submit("a")
        # When the engine has tried, and put the task back for 500 ms
        await eventually(lambda: w.engine.heap_size() == 1 and w.store.failures_left("begin_dispatch") == 0,
                         "the failed attempt to dispatch")
        await w.engine_looked()
        # Then nothing ran and the offset did not pass the task
        assert w.executor.calls == [] and w.committed() in (None, 0)
        # When it is due again, it runs and the offset moves past it
        w.clock.advance(500)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        await eventually(lambda: w.committed() == 1, "the offset past it")


@scenario
async def test_an_outcome_is_recorded_however_long_the_store_refuses_while_the_slot_is_ours():
    async with World(outcome_retry_max_delay_ms=5) as w:
        # Given the store refusing record_outcomes 50 times in a row (an outage)
        await w.own()
        w.store.fail("record_outcomes", times=50)
        await w.submit("a")
        # Then the outcome is recorded once it is back, and the task ran once: no re-run
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        assert w.store.failures_left("record_outcomes") == 0 and w.executor.attempts("a") == [1]


@scenario
async def test_a_transient_record_outcomes_failure_is_retried():
    async with World() as w:
        # Given the store refusing the first record_outcomes
        await w.own()
        w.store.fail("record_outcomes")
        await w.submit("a")
        # Then the outcome is recorded on a later try, and the task ran once
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        assert w.store.failures_left("record_outcomes") == 0 and w.executor.attempts("a") == [1]
        await eventually(lambda: w.committed() == 1, "the offset past it")


@scenario
async def test_a_cancelled_task_is_skipped_and_its_offset_settled():
    async with World() as w:
        # Given a Kafka-path task due in 5 s, cancelled while it waits in the heap
        await w.own()
        due_ms = await w.submit("a", due_in_ms=5_000)
        await eventually(lambda: w.engine.heap_size() == 1, "the task in the heap")
        w.store.cancel("a", "api", w.clock.now())
        # When it falls due
        w.clock.set(due_ms)
        # Then it is not run, and the offset moves past it
        await eventually(lambda: w.committed() == 1, "the offset past it")
        assert w.executor.calls == [] and w.status("a") == (r.CANCELLED, 0)


@scenario
async def test_a_task_swept_while_its_message_waits_is_delivered_once():
    async with World() as w:
        # Given an overdue Kafka-path task of a namespace without executors: its
        # message waits in the heap, postponed, and the sweeper moves its row to
        # the MySQL path, so the poller brings a second entry for the same attempt
        epoch = await w.own()
        await w.submit("a", due_in_ms=-60_000, namespace="late")
        await eventually(lambda: w.no_executor("late") >= 1, "the message postponed")
        assert w.store.sweep_enqueued(SLOT, epoch, w.clock.now() - dt.timedelta(seconds=30), 10, w.clock.now()) == 1
        await eventually(lambda: w.status("a") == (r.CLAIMED, 0) and w.no_executor("late") >= 2, "the row postponed")
        # When an executor registers and both entries fall due together
        w.directory.add("late")
        w.clock.advance(1_000)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        await eventually(lambda: w.committed() == 1, "the offset past it")
        # Then the attempt ran once
        assert w.executor.attempts("a") == [1]


@scenario
async def test_rows_overdue_because_the_owner_is_behind_are_not_swept_until_it_caught_up():
    async with World(sweep_interval_ms=20, enqueued_grace_ms=1_000) as w:
        await w.own()
        for i in range(130):              # 100 fill the executor, 30 wait due behind them
            w.executor.gates[f"t{i}"] = asyncio.Event()
            await w.submit(f"t{i}")
        await eventually(lambda: len(w.executor.calls) == 100, "the executor to fill up")
        w.clock.advance(5_000)            # the 30 are overdue past the grace, their messages in the heap
        passes = [0]
        behind = w.engine._sweeper._behind

        def counted() -> set[int]:
            passes[0] += 1
            return behind()
        w.engine._sweeper._behind = counted
        await eventually(lambda: passes[0] >= 3, "three sweeper passes")
        assert w.engine.slots_behind() == {SLOT}
        assert [w.status(f"t{i}")[0] for i in range(100, 130)] == [r.ENQUEUED] * 30, "swept while behind"
        w.executor.open_gates()
        await eventually(lambda: all(w.status(f"t{i}") == (r.SUCCEEDED, 1) for i in range(130)), "all to succeed")
        assert w.engine.slots_behind() == set()
        assert sorted(c.task_id for c in w.executor.calls) == sorted(f"t{i}" for i in range(130))


# ---------------------------------------------------------------- handoff

@scenario
async def test_a_clean_revoke_commits_progress_and_gives_claimed_rows_back():
    async with World(offset_commit_interval_ms=60_000, poll_lookahead_ms=2_000) as w:
        # Given a Kafka task done (offset 0) and a MySQL row claimed into the heap, not yet due
        epoch = await w.own()
        await w.submit("k")
        later_ms = await w.submit("m", due_in_ms=1_500, route="mysql")
        await eventually(lambda: w.status("k") == (r.SUCCEEDED, 1) and w.status("m") == (r.CLAIMED, 0),
                         "k done and m claimed")
        assert w.committed() is None            # the periodic commit has not run
        # When the slot is revoked cleanly (a handoff)
        await w.engine.slot_revoked(SLOT, clean=True)
        # Then progress is committed, the claimed row is pending again, the slot released
        assert w.committed() == 1
        assert w.status("m") == (r.PENDING, 0)
        assert w.store.slot_owners()[SLOT] == (epoch, "")
        assert w.engine.owned() == {} and w.engine.heap_size() == 0
        assert w.intake is not None and not any(p == SLOT for _, p in w.intake.assigned())
        # And the engine no longer acts on the slot
        w.clock.set(later_ms)
        await w.engine_looked(times=4)
        assert w.executor.attempts("m") == [] and w.status("m") == (r.PENDING, 0)


@scenario
async def test_a_dispatch_loop_that_dies_on_a_defect_is_reported_and_a_stop_is_not():
    w = World()
    async with w:
        await w.own()
        assert w.loops.ended() == {}

        def defect(popped, now):
            raise TypeError("a defect in reserve")

        w.engine._dispatch._reserve = defect  # type: ignore[method-assign]
        await w.submit("t1")
        await eventually(lambda: "dispatch" in w.loops.ended(), "the dispatch loop's end to be reported")
    # The engine's own stop ends the others without a report.
    assert w.loops.ended() == {"dispatch": "TypeError: a defect in reserve"}


@scenario
async def test_stop_is_safe_twice_and_before_start():
    w = World()
    await w.engine.stop()
    async with w:
        await w.own()
    await w.engine.stop()
    assert w.store.slot_owners()[SLOT][1] == ""   # stop handed the slot off


@scenario
async def test_a_replayed_old_attempt_popped_with_its_retry_never_stands_in_for_the_retry():
    # Defect 1 of the faults issue: after a handoff the new owner replays a partition
    # from a watermark held back by an earlier task, so attempt 1's message and the
    # retry's message (attempt 2) of one task fall due in the same batch. The store
    # dispatched attempt 2; the engine delivered attempt 1, whose outcome the store then
    # refused, and the task stayed `dispatched` for good.
    async with World(offset_commit_interval_ms=60_000) as w:
        first_epoch = await w.own()
        await w.submit("later", due_in_ms=5_000)           # holds the watermark at offset 0
        w.executor.script["a"] = [RETRYABLE, SUCCEEDED]
        await w.submit("a", backoff_ms=500)
        await eventually(lambda: [q[:2] for q in w.queued()] == [("later", 1), ("a", 1), ("a", 2)],
                         "attempt 1 failed and its retry produced")
        await w.engine.slot_revoked(SLOT, clean=True)
        assert w.committed() == 0
        # When the slot is owned again once the retry is due, both messages are replayed
        w.clock.advance(1_000)
        epoch = await w.own()
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2), "the retry to succeed")
        # Then the executor saw attempt 1 once (old epoch) and attempt 2 once (new epoch)
        assert [(c.attempt, c.epoch) for c in w.executor.calls if c.task_id == "a"] == \
            [(1, first_epoch), (2, epoch)]


# ---------------------------------------------------------------- the session lease and the guard

@scenario
async def test_nothing_is_dispatched_without_the_session_lease():
    async with World() as w:
        await w.own()
        w.lease_at_dispatch = False
        await w.submit("a")
        await w.engine_looked()
        assert w.executor.calls == [] and w.status("a") == (r.ENQUEUED, 0)
        w.lease_at_dispatch = True
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success once the lease is back")


@scenario
async def test_a_dispatch_the_lease_ran_out_on_before_the_send_is_given_back_unspent():
    # Defect 3 of the faults issue: a node frozen between marking a task dispatched and
    # sending it must not send it when it wakes up past its session.
    async with World() as w:
        await w.own()
        w.lease_at_send = False
        await w.submit("a")
        await eventually(lambda: w.status("a") == (r.PENDING, 0), "the unsent attempt given back")
        assert w.executor.calls == []
        assert ("queued", 1, "not run: the session lease ran out; attempt not spent") in \
            [(e.state, e.attempt, e.detail) for e in w.store.get_task("a")[1]]
        # When the lease holds again, the poller brings it back as attempt 1
        w.lease_at_send = True
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        assert w.executor.attempts("a") == [1]


@scenario
async def test_a_dispatched_task_whose_outcome_vanished_is_recovered_as_a_failed_attempt():
    async with World(recovery_interval_ms=5, recovery_grace_ms=2_000) as w:
        epoch = await w.own()
        # Given a task an earlier incarnation dispatched under this epoch, whose outcome
        # never came back (nothing in this engine is acting on it)
        # (due beyond the poller's lookahead, so that only the test claims it)
        due_ms = await w.submit("a", route="mysql", backoff_ms=100, due_in_ms=60_000)
        w.store.claim_due(SLOT, epoch, ms_to_datetime(due_ms), 10, w.clock.now())
        w.clock.set(due_ms)
        dispatched, _ = w.store.begin_dispatch([r.DispatchClaim("a", SLOT, 1, "mysql", w.clock.now())],
                                               {SLOT: epoch}, "n1", w.clock.now())
        assert dispatched == {"a"}
        # When less than timeout (1 s) + grace (2 s) has passed, it is left alone
        w.clock.advance(2_999)
        await w.engine_looked()
        assert w.status("a") == (r.DISPATCHED, 1)
        # When it has passed, it is recovered as a failed attempt and retried
        w.clock.advance(1)
        await eventually(lambda: w.status("a")[1] == 1 and w.status("a")[0] in (r.ENQUEUED, r.PENDING),
                         "the recovery")
        w.clock.advance(100)
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 2), "the retry's success")
        events = w.store.get_task("a")[1]
        assert any(e.state == "retry_wait" and e.attempt == 1 and "recovered" in (e.detail or "") for e in events)
        assert w.metrics.registry.get_sample_value("taskring_tasks_recovered_total", {"status": "dispatched"}) == 1


@scenario
async def test_a_claimed_row_the_owner_does_not_hold_goes_back_to_the_poller():
    async with World(recovery_interval_ms=5, recovery_grace_ms=2_000, poll_interval_ms=60_000) as w:
        epoch = await w.own()
        # Given a row claimed (by a lost incarnation of this owner) that is in no heap
        # (due beyond the poller's lookahead, so that only the test claims it)
        due_ms = await w.submit("a", route="mysql", due_in_ms=60_000)
        w.store.claim_due(SLOT, epoch, ms_to_datetime(due_ms), 10, w.clock.now())
        assert w.engine.heap_size() == 0 and w.status("a") == (r.CLAIMED, 0)
        w.clock.set(due_ms + 2_001)
        await eventually(lambda: w.executor.attempts("a") == [1] and w.status("a") == (r.SUCCEEDED, 1),
                         "recovered, claimed again and run")
        assert w.metrics.registry.get_sample_value("taskring_tasks_recovered_total", {"status": "claimed"}) == 1


@scenario
async def test_an_attempt_the_executor_did_not_start_in_time_is_given_back_unspent():
    async with World() as w:
        await w.own()
        # Given an executor that answers NOT_STARTED (the lease ran out while it queued)
        w.executor.script["a"] = [pb.OUTCOME_KIND_NOT_STARTED]
        await w.submit("a")
        await eventually(lambda: w.status("a") == (r.PENDING, 0), "the attempt given back")
        # When the executor can run it, it runs as attempt 1 again
        w.executor.script["a"] = [SUCCEEDED]
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        # (It may have been given back more than once before the script changed: the
        # engine sends it again as soon as it is pending. Never as another attempt.)
        attempts = w.executor.attempts("a")
        assert len(attempts) >= 2 and set(attempts) == {1}, attempts
        assert all(c.attempt == 1 for c in w.executor.calls)



@scenario
async def test_a_task_goes_only_to_an_executor_that_handles_its_type():
    async with World() as w:
        await w.own()
        # Given the namespace's only executor handles "send", not "refund"
        await w.submit("r", task_type="refund")
        await eventually(lambda: w.no_executor("ns") >= 1, "the task postponed")
        await w.engine_looked()
        # Then nothing was sent and no attempt spent
        assert w.executor.calls == [] and w.status("r") == (r.ENQUEUED, 0)
        # When an executor announcing "refund" joins, the task runs as attempt 1
        w.directory.add("ns", "refund")
        w.clock.advance(1_000)
        await eventually(lambda: w.status("r") == (r.SUCCEEDED, 1), "success")
        assert w.executor.attempts("r") == [1]
