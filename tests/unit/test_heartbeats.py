"""Heartbeats end to end between the node's Work stream (dispatcher/engine/executor_stream.py)
and the Python SDK's executor on 127.0.0.1 (taskring/_heartbeat.py), with a scripted desk in
place of the store: the automatic first heartbeat, details, a lease that runs out, CANCEL and
LOST answers stopping async and sync handlers, the STOPPED outcome, and the desk's own answers
against the in-memory store."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time
from collections.abc import Iterator

import pytest

from dispatcher.base.clock import Clock
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.executor_pool import ExecutorPool
from dispatcher.engine.heartbeats import HeartbeatDesk, answer
from dispatcher.store import records as r
from dispatcher.store.memory import MemoryTaskStore
from membership import ExecutorInstance
from taskring import Executor, TaskContext
from taskring.errors import InvalidHeartbeat, TaskStopped
from taskring.wire import pb


class Directory:
    def __init__(self, address: str) -> None:
        self.address = address

    def instances(self, namespace: str, *, wait_s: float | None = None):
        return (ExecutorInstance("ex", self.address, (), 100),)


class Desk:
    """Answers heartbeats as scripted (CONTINUE unless told), and keeps what it heard."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, int, str]] = []
        self.verdict = pb.HEARTBEAT_VERDICT_CONTINUE
        self.unknowns: list[str] = []
        self.expirations = 0

    async def answer(self, beats):
        self.heard.extend((b.task_id, b.attempt, b.details_json) for b, _d in beats)
        return [answer(b, self.verdict, "" if self.verdict == pb.HEARTBEAT_VERDICT_CONTINUE else "scripted")
                for b, _d in beats]

    def unknown(self, beat):
        self.unknowns.append(beat.task_id)
        return answer(beat, pb.HEARTBEAT_VERDICT_LOST, "not running here")

    def expired(self) -> None:
        self.expirations += 1


class Seen:
    """What handlers (on the executor's threads) saw, with waits that have deadlines."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.notes: dict[str, object] = {}
        self.release = threading.Event()

    def note(self, key: str, value: object) -> None:
        with self.cond:
            self.notes[key] = value
            self.cond.notify_all()

    def wait_for(self, key: str, timeout_s: float = 10) -> object:
        with self.cond:
            assert self.cond.wait_for(lambda: key in self.notes, timeout_s), f"{key} not seen in {timeout_s} s"
            return self.notes[key]


@pytest.fixture
def seen() -> Iterator[Seen]:
    s = Seen()
    yield s
    s.release.set()


@pytest.fixture
def executor(seen: Seen) -> Iterator[Executor]:
    ex = Executor("ns", zk_hosts=None, max_in_flight=10)

    @ex.handler("beats")   # heart-beats every 20 ms for 0.6 s, with its progress
    async def beats(ctx: TaskContext) -> None:
        seen.note(f"{ctx.task_id}:previous", ctx.heartbeat_details)
        seen.note(f"{ctx.task_id}:timeout", ctx.heartbeat_timeout_ms)
        for page in range(30):
            ctx.heartbeat({"page": page})
            await asyncio.sleep(0.02)

    @ex.handler("hangs")   # one heartbeat, then waits without any
    async def hangs(ctx: TaskContext) -> None:
        ctx.heartbeat({"page": 1})
        try:
            while not seen.release.is_set():
                await asyncio.sleep(0.01)
        finally:
            seen.note(f"{ctx.task_id}:stopped", ctx.stopped)

    @ex.handler("stalls")   # stalls past its lease, then heartbeats again
    async def stalls(ctx: TaskContext) -> None:
        await asyncio.sleep(0.8)
        ctx.heartbeat({"page": 2})
        try:
            while not seen.release.is_set():
                await asyncio.sleep(0.01)
        finally:
            seen.note(f"{ctx.task_id}:stopped", ctx.stopped)

    @ex.handler("sync_beats")   # a thread: learns of a stop at its next heartbeat
    def sync_beats(ctx: TaskContext) -> None:
        try:
            while True:
                ctx.heartbeat()
                time.sleep(0.02)
        except TaskStopped as exc:
            seen.note(f"{ctx.task_id}:raised", exc.verdict)
            raise

    @ex.handler("bad_details")
    async def bad_details(ctx: TaskContext) -> None:
        for details in (object(), "x" * 70_000):
            try:
                ctx.heartbeat(details)
            except InvalidHeartbeat as exc:
                seen.note(f"{ctx.task_id}:{type(details).__name__}", str(exc))

    ex.start()
    yield ex
    seen.release.set()
    ex.stop(grace_s=5)


def delivery(task_id: str, task_type: str, *, heartbeat_ms: int = 0, details: str = "",
             timeout_ms: int = 30_000) -> pb.Delivery:
    return pb.Delivery(task=pb.Task(task_id=task_id, namespace="ns", task_type=task_type), attempt=1,
                       timeout_ms=timeout_ms, heartbeat_timeout_ms=heartbeat_ms, heartbeat_details_json=details)


async def run(pool: ExecutorPool, task_type: str, deliveries: list[pb.Delivery]):
    return await pool.run(pool.reserve("ns", task_type, len(deliveries)), deliveries)


def pool_with(address: str, desk: Desk) -> ExecutorPool:
    return ExecutorPool(Directory(address), "n1", now_ms=Clock().now_ms, heartbeats=desk)


def only(result) -> pb.Outcome:
    assert len(result.outcomes) == 1, result
    return result.outcomes[0]


def test_a_task_that_heartbeats_outlives_its_heartbeat_timeout_many_times_over(executor, seen):
    async def scenario():
        desk = Desk()
        pool = pool_with(executor.address, desk)
        outcome = only(await run(pool, "beats", [delivery("a", "beats", heartbeat_ms=200, details='{"page": 7}')]))
        assert outcome.kind == pb.OUTCOME_KIND_SUCCEEDED, outcome
        assert desk.heard[0] == ("a", 1, "")   # the SDK's own, as the delivery arrived
        assert [json.loads(d) for _t, _a, d in desk.heard[1:]] == [{"page": p} for p in range(30)]
        assert desk.expirations == 0
        await pool.stop()
    asyncio.run(scenario())
    assert seen.wait_for("a:previous") == {"page": 7}   # the last details of an earlier attempt
    assert seen.wait_for("a:timeout") == 200


def test_an_attempt_whose_heartbeats_stop_is_given_up_at_its_heartbeat_timeout_and_then_stopped(executor, seen):
    async def scenario():
        desk = Desk()
        pool = pool_with(executor.address, desk)
        started = time.monotonic()
        outcome = only(await run(pool, "stalls", [delivery("h", "stalls", heartbeat_ms=300)]))
        took = time.monotonic() - started
        assert outcome.kind == pb.OUTCOME_KIND_TIMED_OUT and "no heartbeat within" in outcome.error, outcome
        assert took < 0.8, "given up at its heartbeat timeout, not at its 30 s timeout"
        assert desk.expirations == 1
        # The handler still runs at the executor: its next heartbeat is answered LOST (the
        # attempt waits here no more), and that stops it.
        deadline = time.monotonic() + 10
        while not desk.unknowns and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert desk.unknowns == ["h"]
        assert await asyncio.to_thread(seen.wait_for, "h:stopped") == "lost"
        await pool.stop()
    asyncio.run(scenario())


def test_a_cancel_stops_an_async_handler_at_its_next_await_and_its_outcome_is_stopped(executor, seen):
    async def scenario():
        desk = Desk()
        desk.verdict = pb.HEARTBEAT_VERDICT_CANCEL
        pool = pool_with(executor.address, desk)
        outcome = only(await run(pool, "hangs", [delivery("c", "hangs", heartbeat_ms=5_000)]))
        assert outcome.kind == pb.OUTCOME_KIND_STOPPED, outcome
        assert outcome.error == "cancelled: scripted"
        await pool.stop()
    asyncio.run(scenario())
    assert seen.wait_for("c:stopped") == "cancelled"


def test_a_lost_answer_stops_a_sync_handler_at_its_next_heartbeat(executor, seen):
    async def scenario():
        desk = Desk()
        desk.verdict = pb.HEARTBEAT_VERDICT_LOST
        pool = pool_with(executor.address, desk)
        outcome = only(await run(pool, "sync_beats", [delivery("s", "sync_beats", heartbeat_ms=5_000)]))
        assert outcome.kind == pb.OUTCOME_KIND_STOPPED and outcome.error == "lost: scripted", outcome
        await pool.stop()
    asyncio.run(scenario())
    assert seen.wait_for("s:raised") == "lost"


def test_details_that_are_not_json_or_too_large_are_refused_naming_details_and_nothing_is_sent(executor, seen):
    async def scenario():
        desk = Desk()
        pool = pool_with(executor.address, desk)
        outcome = only(await run(pool, "bad_details", [delivery("b", "bad_details", heartbeat_ms=5_000)]))
        assert outcome.kind == pb.OUTCOME_KIND_SUCCEEDED
        assert desk.heard == [("b", 1, "")]   # the automatic first one only
        await pool.stop()
    asyncio.run(scenario())
    assert str(seen.wait_for("b:object")).startswith("details: not JSON-serializable")
    assert "more than the maximum 65536" in str(seen.wait_for("b:str"))


def test_a_task_without_a_heartbeat_timeout_sends_none_and_has_no_lease(executor, seen):
    async def scenario():
        desk = Desk()
        pool = pool_with(executor.address, desk)
        seen.release.set()
        outcome = only(await run(pool, "hangs", [delivery("q", "hangs")]))
        assert outcome.kind == pb.OUTCOME_KIND_SUCCEEDED
        # Its handler called heartbeat() once: that one is sent (a handler may), no automatic one.
        assert desk.heard == [("q", 1, '{"page":1}')]
        assert not pool._streams[executor.address]._leases
        await pool.stop()
    asyncio.run(scenario())


# ---- the desk against the in-memory store


def _dispatched_task(store: MemoryTaskStore, task_id: str, now: dt.datetime) -> int:
    store.ensure_slots(1)
    epoch = store.claim_slot(0, "n1", now)
    store.insert_tasks([r.NewTask(task_id=task_id, slot=0, namespace="ns", task_type="t", priority=2,
                                  status=r.PENDING, trigger_at=now, envelope=b"", created_at=now)], "n1")
    store.claim_due(0, epoch, now, 10, now)
    done, _ = store.begin_dispatch([r.DispatchClaim(task_id, 0, 1, "mysql", now)], {0: epoch}, "n1", now)
    assert done == {task_id}
    return epoch


def test_the_desk_records_answers_and_refuses_what_it_cannot_store():
    store = MemoryTaskStore()
    store.start()
    clock = Clock()
    epoch = _dispatched_task(store, "t1", clock.now())
    desk = HeartbeatDesk(store=store, clock=clock, slot_count=1, metrics=NodeMetrics())
    d = pb.Delivery(task=pb.Task(task_id="t1", namespace="ns", task_type="t"), attempt=1, epoch=epoch)
    beats = [pb.Heartbeat(task_id="t1", attempt=1, details_json='{"row": 5}', sequence=1),
             pb.Heartbeat(task_id="t1", attempt=1, details_json="{not json", sequence=2),
             pb.Heartbeat(task_id="t1", attempt=1, details_json='"' + "x" * 70_000 + '"', sequence=3)]
    answers = asyncio.run(desk.answer([(b, d) for b in beats]))
    by_sequence = {a.sequence: a for a in answers}
    assert by_sequence[1].verdict == pb.HEARTBEAT_VERDICT_CONTINUE
    assert by_sequence[2].verdict == pb.HEARTBEAT_VERDICT_INVALID and by_sequence[2].reason.startswith("details:")
    assert by_sequence[3].verdict == pb.HEARTBEAT_VERDICT_INVALID and "more than the maximum" in by_sequence[3].reason
    assert store.heartbeat_details(["t1"]) == {"t1": '{"row": 5}'}
    store.cancel("t1", "n1", clock.now(), {("ns", "t")})
    again = asyncio.run(desk.answer([(beats[0], d)]))
    assert again[0].verdict == pb.HEARTBEAT_VERDICT_CANCEL and again[0].reason == "the task was cancelled"
    store.stop()
