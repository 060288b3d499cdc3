"""Calls executors: picks an instance, respects its cap on tasks in flight, and
turns a failed call into retryable outcomes for every task in it.

Instances come from the executor directory (ZooKeeper); load is spread by
sending each chunk to the instance with the most free capacity.
"""
from __future__ import annotations

import asyncio
import time
from typing import Protocol, Sequence

import grpc
from taskring.wire import pb, pb_grpc


class _Instance(Protocol):
    instance_id: str
    address: str
    max_in_flight: int


class Directory(Protocol):
    def instances(self, namespace: str) -> Sequence[_Instance]: ...


class ExecutorPool:
    def __init__(self, directory: Directory, node_id: str, rpc_margin_s: float = 5.0):
        self._directory = directory
        self._node_id = node_id
        self._rpc_margin_s = rpc_margin_s
        self._channels: dict[str, tuple[grpc.aio.Channel, pb_grpc.ExecutorServiceStub]] = {}
        self._in_flight: dict[str, int] = {}
        self._freed: asyncio.Condition | None = None

    def start(self) -> None:
        self._freed = asyncio.Condition()

    async def stop(self) -> None:
        channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            await channel.close(grace=None)

    def has_executor(self, namespace: str) -> bool:
        return bool(self._directory.instances(namespace))

    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def _stub(self, address: str) -> pb_grpc.ExecutorServiceStub:
        entry = self._channels.get(address)
        if entry is None:
            channel = grpc.aio.insecure_channel(address, options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ])
            entry = (channel, pb_grpc.ExecutorServiceStub(channel))
            self._channels[address] = entry
        return entry[1]

    async def _acquire(self, namespace: str, wanted: int, give_up_at: float) -> tuple[_Instance, int] | None:
        async with self._freed:
            while True:
                instances = self._directory.instances(namespace)
                best, free = None, 0
                for inst in instances:
                    f = inst.max_in_flight - self._in_flight.get(inst.address, 0)
                    if f > free:
                        best, free = inst, f
                if best is not None:
                    take = min(wanted, free)
                    self._in_flight[best.address] = self._in_flight.get(best.address, 0) + take
                    return best, take
                remaining = give_up_at - time.monotonic()
                if not instances or remaining <= 0:
                    return None
                try:
                    await asyncio.wait_for(self._freed.wait(), timeout=min(remaining, 0.5))
                except asyncio.TimeoutError:
                    pass

    async def _release(self, address: str, n: int) -> None:
        async with self._freed:
            self._in_flight[address] = self._in_flight.get(address, 0) - n
            self._freed.notify_all()

    async def execute(self, namespace: str, deliveries: Sequence[pb.Delivery],
                      wait_for_capacity_s: float = 30.0) -> list[pb.Outcome]:
        """Deliver all; every delivery gets exactly one outcome back."""
        give_up_at = time.monotonic() + wait_for_capacity_s
        pending = list(deliveries)
        calls = []
        while pending:
            got = await self._acquire(namespace, len(pending), give_up_at)
            if got is None:
                calls.append(_failed(pending, f"no executor of namespace {namespace!r} had capacity"))
                break
            inst, take = got
            chunk, pending = pending[:take], pending[take:]
            calls.append(asyncio.ensure_future(self._call(inst, chunk)))
        outcomes: list[pb.Outcome] = []
        for call in calls:
            outcomes.extend(await call if asyncio.isfuture(call) else call)
        return outcomes

    async def _call(self, inst: _Instance, chunk: list[pb.Delivery]) -> list[pb.Outcome]:
        deadline_s = max(d.timeout_ms for d in chunk) / 1000 + self._rpc_margin_s
        try:
            reply = await self._stub(inst.address).Execute(
                pb.ExecuteRequest(deliveries=chunk, dispatcher_node=self._node_id), timeout=deadline_s)
            got = {(o.task_id, o.attempt) for o in reply.outcomes}
            missing = [d for d in chunk if (d.task.task_id, d.attempt) not in got]
            return list(reply.outcomes) + _failed(missing, f"executor {inst.address} returned no outcome")
        except grpc.aio.AioRpcError as exc:
            return _failed(chunk, f"executor {inst.address}: {exc.code().name}: {exc.details()}")
        finally:
            await self._release(inst.address, len(chunk))


def _failed(deliveries: Sequence[pb.Delivery], error: str) -> list[pb.Outcome]:
    now_ms = int(time.time() * 1000)
    return [pb.Outcome(task_id=d.task.task_id, attempt=d.attempt, kind=pb.OUTCOME_KIND_RETRYABLE_FAILURE,
                       error=error, started_at_ms=0, finished_at_ms=now_ms) for d in deliveries]
