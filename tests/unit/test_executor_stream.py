"""The node's Work stream to an executor (dispatcher/engine/executor_stream.py) against the
Python SDK's executor serving on 127.0.0.1 (no ZooKeeper): outcomes as tasks finish,
fallback to Execute calls, a stream that breaks, a deadline, a stop that drains."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from dispatcher.base.clock import Clock
from dispatcher.engine.executor_pool import ExecutorPool
from membership import ExecutorInstance
from taskring import Executor
from taskring.wire import pb, pb_grpc

SLOW_RELEASE = threading.Event()


class Directory:
    def __init__(self, address: str) -> None:
        self.address = address

    def instances(self, namespace: str, *, wait_s: float | None = None):
        return (ExecutorInstance("ex", self.address, (), 100),)


@pytest.fixture
def executor() -> Iterator[Executor]:
    ex = Executor("ns", zk_hosts=None, max_in_flight=100)

    @ex.handler("fast")
    async def fast(task) -> None:
        return None

    @ex.handler("slow")
    async def slow(task) -> None:
        while not SLOW_RELEASE.is_set():
            await asyncio.sleep(0.01)

    SLOW_RELEASE.clear()
    ex.start()
    yield ex
    SLOW_RELEASE.set()
    ex.stop(grace_s=5)


def delivery(task_id: str, task_type: str, timeout_ms: int = 30_000) -> pb.Delivery:
    return pb.Delivery(task=pb.Task(task_id=task_id, namespace="ns", task_type=task_type), attempt=1,
                       timeout_ms=timeout_ms)


def pool_for(address: str, **options) -> ExecutorPool:
    return ExecutorPool(Directory(address), "n1", now_ms=Clock().now_ms, **options)


async def run(pool: ExecutorPool, task_type: str, deliveries: list[pb.Delivery]):
    return await pool.run(pool.reserve("ns", task_type, len(deliveries)), deliveries)


async def serve(servicer: pb_grpc.ExecutorServiceServicer) -> tuple[grpc.aio.Server, str]:
    """A stand-in executor of another kind on 127.0.0.1: its server and address."""
    server = grpc.aio.server()
    pb_grpc.add_ExecutorServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


def kinds(result) -> list[str]:
    return sorted(pb.OutcomeKind.Name(o.kind) for o in result.outcomes)


def test_a_chunk_returns_when_its_own_tasks_end_not_when_a_slow_one_beside_it_does(executor):
    async def scenario():
        pool = pool_for(executor.address)
        slow = asyncio.create_task(run(pool, "slow", [delivery("s1", "slow")]))
        fast = await run(pool, "fast", [delivery(f"f{i}", "fast") for i in range(50)])
        assert kinds(fast) == ["OUTCOME_KIND_SUCCEEDED"] * 50
        assert not slow.done()      # still running at the executor
        assert executor.address in pool._streams and not pool._calls_only
        SLOW_RELEASE.set()
        assert kinds(await slow) == ["OUTCOME_KIND_SUCCEEDED"]
        await pool.stop()
    asyncio.run(scenario())


def test_each_outcome_frees_its_place_before_the_rest_of_its_chunk_ends(executor):
    async def scenario():
        pool = pool_for(executor.address)
        heard: list[str] = []
        mixed = [delivery("f1", "fast"), delivery("s1", "slow"), delivery("f2", "fast")]
        call = asyncio.create_task(pool.run(pool.reserve("ns", "any", 3), mixed,
                                            lambda outcomes: heard.extend(o.task_id for o in outcomes)))
        deadline = time.monotonic() + 10
        while sorted(heard) != ["f1", "f2"]:
            assert time.monotonic() < deadline, heard
            await asyncio.sleep(0.01)
        assert pool.in_flight() == 1 and not call.done()   # only the slow one holds a place
        SLOW_RELEASE.set()
        await call
        assert pool.in_flight() == 0 and sorted(heard) == ["f1", "f2", "s1"]
        await pool.stop()
    asyncio.run(scenario())


class Silent(pb_grpc.ExecutorServiceServicer):
    """An executor that takes deliveries on its stream and never answers (hung)."""

    async def Work(self, request_iterator, context):
        async for _ in request_iterator:
            pass


def test_a_chunk_past_its_deadline_comes_back_as_retryable_failures():
    async def scenario():
        server, address = await serve(Silent())
        pool = pool_for(address, rpc_margin_s=0.2)
        result = await run(pool, "fast", [delivery("a", "fast", timeout_ms=100)])
        assert kinds(result) == ["OUTCOME_KIND_RETRYABLE_FAILURE"]
        assert "DEADLINE_EXCEEDED" in result.outcomes[0].error
        assert pool._streams    # a hung executor's stream is not torn down by one late chunk
        await pool.stop()
        await server.stop(None)
    asyncio.run(scenario())


class CallsOnly(pb_grpc.ExecutorServiceServicer):
    """An executor of an SDK without Work: the generated servicer answers UNIMPLEMENTED."""

    async def Execute(self, request, context):
        return pb.ExecuteResponse(outcomes=[pb.Outcome(task_id=d.task.task_id, attempt=d.attempt,
                                                       kind=pb.OUTCOME_KIND_SUCCEEDED) for d in request.deliveries])


def test_an_executor_without_work_gets_execute_calls_and_is_remembered():
    async def scenario():
        server, address = await serve(CallsOnly())
        pool = pool_for(address)
        first = await run(pool, "fast", [delivery("a", "fast"), delivery("b", "fast")])
        assert kinds(first) == ["OUTCOME_KIND_SUCCEEDED"] * 2    # nothing spent on the refusal
        assert address in pool._calls_only
        assert kinds(await run(pool, "fast", [delivery("c", "fast")])) == ["OUTCOME_KIND_SUCCEEDED"]
        await pool.stop()
        await server.stop(None)
    asyncio.run(scenario())


def test_a_broken_stream_fails_what_waits_and_the_next_chunk_opens_a_new_one(executor):
    async def scenario():
        pool = pool_for(executor.address)
        assert kinds(await run(pool, "fast", [delivery("a", "fast")])) == ["OUTCOME_KIND_SUCCEEDED"]
        first = pool._streams[executor.address]
        waiting = asyncio.create_task(run(pool, "slow", [delivery("s1", "slow")]))
        deadline = time.monotonic() + 10
        while executor.in_flight == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert executor.in_flight == 1
        await first.close()  # the connection goes: what waits fails, retryable
        result = await waiting
        assert kinds(result) == ["OUTCOME_KIND_RETRYABLE_FAILURE"]
        assert "UNAVAILABLE" in result.outcomes[0].error
        assert kinds(await run(pool, "fast", [delivery("b", "fast")])) == ["OUTCOME_KIND_SUCCEEDED"]
        assert pool._streams[executor.address] is not first
        await pool.stop()
    asyncio.run(scenario())


def test_an_executor_that_stops_finishes_what_runs_and_sends_its_outcome(executor):
    async def scenario():
        pool = pool_for(executor.address)
        waiting = asyncio.create_task(run(pool, "slow", [delivery("s1", "slow")]))
        deadline = time.monotonic() + 10
        while executor.in_flight == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        stopper = threading.Thread(target=executor.stop, kwargs={"grace_s": 10})
        stopper.start()
        deadline = time.monotonic() + 10
        while not executor._servicer.stopping.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert executor._servicer.stopping.is_set()
        SLOW_RELEASE.set()
        assert kinds(await waiting) == ["OUTCOME_KIND_SUCCEEDED"]
        await asyncio.to_thread(stopper.join, 15)
        assert not stopper.is_alive()
        await pool.stop()
    asyncio.run(scenario())
