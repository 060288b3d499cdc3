"""ExecutorPool: which instances a batch goes to."""
from __future__ import annotations

import asyncio

import grpc

from dispatcher.base.clock import Clock
from dispatcher.engine.executor_pool import ExecutorPool
from membership import ExecutorInstance
from taskring.wire import pb

DEAD, LIVE = "127.0.0.1:1", "127.0.0.1:2"


class Directory:
    def instances(self, namespace: str, *, wait_s: float | None = None):
        return (ExecutorInstance("dead", DEAD, ("send",), 10), ExecutorInstance("live", LIVE, ("send", "other"), 10))


class DeadStub:
    async def Execute(self, request, timeout=None):  # the gRPC method's name
        raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                   "failed to connect to all addresses")


class LiveStub:
    async def Execute(self, request, timeout=None):
        return pb.ExecuteResponse(outcomes=[pb.Outcome(task_id=d.task.task_id, attempt=d.attempt,
                                                       kind=pb.OUTCOME_KIND_SUCCEEDED) for d in request.deliveries])


class Pool(ExecutorPool):
    def _stub(self, address: str):
        return DeadStub() if address == DEAD else LiveStub()


def delivery(task_id: str) -> pb.Delivery:
    return pb.Delivery(task=pb.Task(task_id=task_id, namespace="ns", task_type="send"), attempt=1, timeout_ms=1000)


def test_an_unreachable_instance_is_left_out_for_a_while():
    pool = Pool(Directory(), "n1", now_ms=Clock().now_ms, unreachable_cooldown_s=60, use_streams=False)
    first = pool.reserve("ns", "send", 2)
    assert {inst.address for inst, _ in first.allocations} == {DEAD, LIVE}
    result = asyncio.run(pool.run(first, [delivery("a"), delivery("b")]))
    kinds = sorted(pb.OutcomeKind.Name(o.kind) for o in result.outcomes)
    assert kinds == ["OUTCOME_KIND_RETRYABLE_FAILURE", "OUTCOME_KIND_SUCCEEDED"]
    # Then the next batch goes to the reachable instances only
    again = pool.reserve("ns", "send", 2)
    assert {inst.address for inst, _ in again.allocations} == {LIVE}


def test_only_instances_that_announce_the_type_are_chosen():
    pool = Pool(Directory(), "n1", now_ms=Clock().now_ms)
    assert {inst.address for inst, _ in pool.reserve("ns", "other", 4).allocations} == {LIVE}
    assert pool.has_executor("ns", "other") and not pool.has_executor("ns", "nothing")


def test_describe_says_why_a_type_has_no_executor():
    pool = Pool(Directory(), "n1", now_ms=Clock().now_ms, unreachable_cooldown_s=60, use_streams=False)
    asyncio.run(pool.run(pool.reserve("ns", "send", 2), [delivery("a"), delivery("b")]))   # DEAD cools down
    text = pool.describe("ns", "other")
    assert text.startswith("2 executor(s) of namespace 'ns'")
    assert f"{DEAD} (1 types, not this one, unreachable for " in text
    assert f"{LIVE} (2 types, announces it)" in text


def test_describe_of_a_namespace_without_executors():
    class Empty:
        def instances(self, namespace: str, *, wait_s: float | None = None):
            return ()
    assert Pool(Empty(), "n1", now_ms=Clock().now_ms).describe("ns", "send") == \
        "no executor of namespace 'ns' is registered"


def test_free_room_is_what_reserves_could_still_hold_on_the_instances_looked_up():
    pool = Pool(Directory(), "n1", now_ms=Clock().now_ms, unreachable_cooldown_s=60, use_streams=False)
    assert pool.free_room() == 0   # nothing looked up yet
    held = pool.reserve("ns", "send", 15)
    assert held.total == 15 and pool.free_room() == 5
    asyncio.run(pool.run(held, [delivery(f"t{i}") for i in range(15)]))   # all released; DEAD cools down
    assert pool.free_room() == 20
    pool.has_executor("ns", "send")   # the next lookup leaves the unreachable instance out
    assert pool.free_room() == 10
