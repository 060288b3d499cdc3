"""The executor's batch path over a real gRPC channel, without ZooKeeper (zk_hosts=None).

The runner takes an async handler's first step inline, without a Task, and hands a
handler that suspends to a Task of its own (`_runner.py`'s design note). Given batches
that mix handlers finishing in their first step with handlers that await, fail, hang or
block, when a dispatcher-like caller sends them, then every delivery still gets the
outcome, times, slot accounting, task identity and context isolation it would get in a
Task of its own.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import grpc
import pytest

from harness.wait import wait_until
from taskring import Executor, NonRetryableError, TaskContext
from taskring.wire import pb, pb_grpc

K = pb.OutcomeKind


def delivery(task_type: str, task_id: str, *, timeout_ms: int = 5000, start_within_ms: int = 0) -> pb.Delivery:
    return pb.Delivery(
        task=pb.Task(task_id=task_id, namespace="shop", task_type=task_type, payload_json='{"n":1}',
                     created_at="2030-01-01T00:00:00.000Z"),
        attempt=1, epoch=42, timeout_ms=timeout_ms, start_within_ms=start_within_ms,
    )


def call(ex: Executor, *deliveries: pb.Delivery, timeout: float = 30) -> dict[str, pb.Outcome]:
    with grpc.insecure_channel(ex.address) as channel:
        resp = pb_grpc.ExecutorServiceStub(channel).Execute(
            pb.ExecuteRequest(deliveries=deliveries, dispatcher_node="test"), timeout=timeout)
    assert len(resp.outcomes) == len(deliveries)
    return {o.task_id: o for o in resp.outcomes}


def test_a_batch_mixing_every_kind_of_handler(make_executor):
    ex = make_executor()
    ran: list[str] = []

    @ex.handler("done_at_once")
    async def done_at_once(ctx: TaskContext) -> None:
        ran.append(ctx.task_id)

    @ex.handler("awaits")
    async def awaits(ctx: TaskContext) -> None:
        await asyncio.sleep(0.01)
        ran.append(ctx.task_id)

    @ex.handler("fails_at_once")
    async def fails_at_once(ctx: TaskContext) -> None:
        raise NonRetryableError("bad order")

    @ex.handler("fails_later")
    async def fails_later(ctx: TaskContext) -> None:
        await asyncio.sleep(0)
        raise ValueError("late failure")

    @ex.handler("times_out_later")
    async def times_out_later(ctx: TaskContext) -> None:
        await asyncio.sleep(0)
        await asyncio.Event().wait()

    @ex.handler("sync")
    def sync(ctx: TaskContext) -> None:
        ran.append(ctx.task_id)

    ex.start()
    batch = [delivery("done_at_once", f"now-{i}") for i in range(50)]
    batch += [delivery("awaits", "awaits"), delivery("fails_at_once", "fails-at-once"),
              delivery("fails_later", "fails-later"), delivery("times_out_later", "hangs", timeout_ms=300),
              delivery("sync", "sync"), delivery("nobody", "nobody")]
    batch += [delivery("done_at_once", f"after-{i}") for i in range(50)]
    before = time.time() * 1000
    out = call(ex, *batch)
    after = time.time() * 1000

    assert {tid: K.Name(o.kind) for tid, o in out.items() if not tid.startswith(("now-", "after-"))} == {
        "awaits": "OUTCOME_KIND_SUCCEEDED",
        "fails-at-once": "OUTCOME_KIND_NON_RETRYABLE_FAILURE",
        "fails-later": "OUTCOME_KIND_RETRYABLE_FAILURE",
        "hangs": "OUTCOME_KIND_TIMED_OUT",
        "sync": "OUTCOME_KIND_SUCCEEDED",
        "nobody": "OUTCOME_KIND_NO_HANDLER",
    }
    fast = [o for tid, o in out.items() if tid.startswith(("now-", "after-"))]
    assert len(fast) == 100 and {o.kind for o in fast} == {K.OUTCOME_KIND_SUCCEEDED}
    assert sorted(ran) == sorted([f"now-{i}" for i in range(50)] + [f"after-{i}" for i in range(50)]
                                 + ["awaits", "sync"])
    assert "in fails_at_once" in out["fails-at-once"].stack_trace
    assert out["fails-later"].error == "ValueError: late failure" and "in fails_later" in out["fails-later"].stack_trace
    assert "300 ms" in out["hangs"].error and "in times_out_later" in out["hangs"].stack_trace
    for o in out.values():
        assert before - 1 <= o.started_at_ms <= o.finished_at_ms <= after + 1
    # The reply waits for the whole batch, but the hung handler did not hold up the
    # fast ones: they finished when they ran, and only it was cancelled.
    assert out["hangs"].finished_at_ms >= before + 300 - 2
    assert max(o.finished_at_ms for o in fast) < out["hangs"].finished_at_ms - 100
    wait_until(lambda: ex.in_flight == 0, what="every slot back")


def test_a_handler_that_blocks_in_its_first_step_moves_the_start_of_the_next(make_executor):
    ex = make_executor()

    @ex.handler("blocks")
    async def blocks(ctx: TaskContext) -> None:
        time.sleep(0.15)  # a handler that never awaits: nothing can interrupt it

    @ex.handler("noop")
    async def noop(ctx: TaskContext) -> None:
        return None

    ex.start()
    out = call(ex, delivery("blocks", "blocks", timeout_ms=50), delivery("noop", "next"),
               delivery("noop", "leased", start_within_ms=100))
    # A handler that finishes in its first step succeeds even past its timeout, as before.
    assert out["blocks"].kind == K.OUTCOME_KIND_SUCCEEDED
    assert out["blocks"].finished_at_ms - out["blocks"].started_at_ms >= 150 - 2
    # Start times are read when each handler starts, not once for the batch ...
    assert out["next"].kind == K.OUTCOME_KIND_SUCCEEDED
    assert out["next"].started_at_ms >= out["blocks"].finished_at_ms
    # ... and so is the lease: 100 ms after arrival had passed when its turn came.
    assert out["leased"].kind == K.OUTCOME_KIND_NOT_STARTED and out["leased"].started_at_ms == 0
    assert "within 100 ms" in out["leased"].error


def test_each_handler_has_its_own_task_from_its_first_step(make_executor):
    ex = make_executor()
    first: dict[str, asyncio.Task | None] = {}
    later: dict[str, asyncio.Task | None] = {}

    @ex.handler("records")
    async def records(ctx: TaskContext) -> None:
        first[ctx.task_id] = asyncio.current_task()
        await asyncio.sleep(0.01)
        later[ctx.task_id] = asyncio.current_task()

    ex.start()
    out = call(ex, *(delivery("records", str(i)) for i in range(5)))
    assert {o.kind for o in out.values()} == {K.OUTCOME_KIND_SUCCEEDED}
    assert first == later  # the task current in the first step is the one that runs it on
    assert len({id(t) for t in first.values()}) == 5 and None not in first.values()


def test_a_timeout_scope_entered_in_the_first_step_cancels_that_handler_only(make_executor):
    ex = make_executor()
    finished: list[str] = []

    @ex.handler("own_timeout")
    async def own_timeout(ctx: TaskContext) -> None:
        async with asyncio.timeout(0.05):  # enters before the handler first suspends
            await asyncio.Event().wait()

    @ex.handler("task_group")
    async def task_group(ctx: TaskContext) -> None:
        async def boom() -> None:
            raise KeyError("child failed")

        async with asyncio.TaskGroup() as tg:
            tg.create_task(boom())
            await asyncio.sleep(1)

    @ex.handler("slower")
    async def slower(ctx: TaskContext) -> None:
        await asyncio.sleep(0.2)
        finished.append(ctx.task_id)

    ex.start()
    out = call(ex, delivery("slower", "a"), delivery("own_timeout", "t"), delivery("task_group", "g"),
               delivery("slower", "b"))
    assert out["t"].kind == K.OUTCOME_KIND_RETRYABLE_FAILURE
    assert out["t"].error.startswith("TimeoutError")  # its own timeout, not the executor's
    assert out["g"].kind == K.OUTCOME_KIND_RETRYABLE_FAILURE and "child failed" in out["g"].stack_trace
    assert out["a"].kind == out["b"].kind == K.OUTCOME_KIND_SUCCEEDED
    assert sorted(finished) == ["a", "b"]


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def test_each_handler_runs_in_its_own_context(make_executor):
    ex = make_executor()
    seen: dict[str, tuple[str, str]] = {}

    @ex.handler("sets")
    async def sets(ctx: TaskContext) -> None:
        before = VAR.get()
        VAR.set(ctx.task_id)
        if ctx.task_id.startswith("wait"):
            await asyncio.sleep(0.01)
        seen[ctx.task_id] = (before, VAR.get())

    ex.start()
    call(ex, delivery("sets", "1"), delivery("sets", "wait-2"), delivery("sets", "3"), delivery("sets", "wait-4"))
    assert seen == {"1": ("unset", "1"), "wait-2": ("unset", "wait-2"), "3": ("unset", "3"),
                    "wait-4": ("unset", "wait-4")}


def test_a_handler_running_in_its_first_step_holds_a_slot(make_executor):
    ex = make_executor(max_in_flight=2)
    counts: list[int] = []

    @ex.handler("count")
    async def count(ctx: TaskContext) -> None:
        counts.append(ex.in_flight)

    ex.start()
    call(ex, delivery("count", "1"), delivery("count", "2"))
    assert counts == [1, 1]
    assert ex.in_flight == 0


def test_fast_handlers_wait_behind_a_full_executor_in_order(make_executor):
    ex = make_executor(max_in_flight=2)
    release = asyncio.Event()
    started: list[str] = []
    loop_box: list[asyncio.AbstractEventLoop] = []

    @ex.handler("hold")
    async def hold(ctx: TaskContext) -> None:
        loop_box.append(asyncio.get_running_loop())
        started.append(ctx.task_id)
        await release.wait()

    @ex.handler("fast")
    async def fast(ctx: TaskContext) -> None:
        started.append(ctx.task_id)

    ex.start()
    with grpc.insecure_channel(ex.address) as channel:
        stub = pb_grpc.ExecutorServiceStub(channel)
        pending = stub.Execute.future(pb.ExecuteRequest(deliveries=[
            delivery("hold", "h1"), delivery("hold", "h2"), delivery("fast", "f1"), delivery("fast", "f2"),
            delivery("fast", "late", timeout_ms=100)]), timeout=30)
        wait_until(lambda: ex.in_flight == 2 and ex.waiting == 3, what="2 holding, 3 waiting")
        time.sleep(0.2)  # past the deadline of "late", which is still waiting
        loop_box[0].call_soon_threadsafe(release.set)
        out = {o.task_id: o for o in pending.result().outcomes}
    assert out["late"].kind == K.OUTCOME_KIND_TIMED_OUT and "waiting for a free slot" in out["late"].error
    assert {out[t].kind for t in ("h1", "h2", "f1", "f2")} == {K.OUTCOME_KIND_SUCCEEDED}
    assert started == ["h1", "h2", "f1", "f2"]
    wait_until(lambda: ex.in_flight == 0 and ex.waiting == 0, what="all slots free")


def test_a_cancelled_call_cancels_its_suspended_handlers_and_frees_their_slots(make_executor):
    ex = make_executor(max_in_flight=4)
    cancelled = threading.Event()

    @ex.handler("hang")
    async def hang(ctx: TaskContext) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ex.start()
    with pytest.raises(grpc.RpcError) as info:
        call(ex, delivery("hang", "1", timeout_ms=60_000), delivery("hang", "2", timeout_ms=60_000), timeout=0.3)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert cancelled.wait(5)
    wait_until(lambda: ex.in_flight == 0, what="the slots back")


def test_a_handler_that_cannot_be_called_fails_as_the_handler_whether_it_waited_or_not(make_executor):
    ex = make_executor(max_in_flight=1)

    async def no_arguments() -> None:
        return None

    @ex.handler("hold")
    async def hold(ctx: TaskContext) -> None:
        await asyncio.sleep(0.05)

    ex.add_handler("wrong", no_arguments)
    ex.start()
    out = call(ex, delivery("wrong", "at-once"), delivery("hold", "hold"), delivery("wrong", "after-waiting"))
    assert out["hold"].kind == K.OUTCOME_KIND_SUCCEEDED
    for tid in ("at-once", "after-waiting"):
        assert out[tid].kind == K.OUTCOME_KIND_RETRYABLE_FAILURE
        assert out[tid].error.startswith("TypeError: ") and "positional argument" in out[tid].error
    assert ex.in_flight == 0
