"""Node.start and Node.stop when a part fails to come up.

Given a start that fails (an unreachable MariaDB, or any one part made to raise),
then start raises that part's error, every part that came up before it is stopped
again, and a later stop() raises nothing. Given a part that fails to stop after a
full start, then the other parts are still stopped and stop() raises that failure.
"""
from __future__ import annotations

import asyncio
import dataclasses
import socket
import urllib.error
import urllib.request

import pytest

from dispatcher.admin.server import AdminServer
from dispatcher.base.clock import Clock
from dispatcher.base.config import MySQLConfig, NodeConfig
from dispatcher.base.errors import Unavailable
from dispatcher.base.loop_task import LoopTask
from dispatcher.node import Node


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def closed_port() -> int:
    """A local port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refuses(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def config(**overrides) -> NodeConfig:
    return NodeConfig(node_id="lifecycle-test", cluster=False, grpc_port=0, admin_port=0, **overrides)


def test_stop_after_start_failed_on_an_unreachable_store_raises_nothing():
    node = Node(config(mysql=MySQLConfig(port=closed_port())), clock=Clock())

    async def scenario():
        with pytest.raises(Unavailable, match="mysql 127.0.0.1"):
            await node.start()
        await node.stop()  # raised AttributeError ('_observer') before
        await node.stop()

    run(scenario())
    assert node.grpc_port is None and not node._serving


class _StandIn:
    """Stands in for one of the node's parts: records start and stop, raises when told."""

    def __init__(self, name: str, calls: list[str], fail_on: str | None):
        self.name, self.calls, self.fail_on = name, calls, fail_on

    def _call(self, what: str) -> None:
        self.calls.append(f"{self.name}.{what}")
        if self.fail_on == what:
            raise RuntimeError(f"{self.name} {what} failed")

    def ensure_slots(self, slot_count: int) -> None:
        pass

    def close(self) -> None:  # the log's watermarks consumer (dispatcher/parts.py)
        self._call("stop")


class Part(_StandIn):
    """A part with a sync start and stop."""

    def start(self) -> None:
        self._call("start")

    def stop(self) -> None:
        self._call("stop")


class AsyncPart(_StandIn):
    """A part with an async start and stop (the engine, ownership)."""

    async def start(self) -> None:
        self._call("start")

    async def stop(self) -> None:
        self._call("stop")


class SpiedLoop(LoopTask):
    """The node's gauge refresher, recording its start and stop."""

    def __init__(self, name, run):
        super().__init__(name, run)
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")
        super().start()

    async def stop(self) -> None:
        if self.running:
            self.calls.append("stop")
        await super().stop()


SYNC_PARTS = ("store", "session", "executors_directory", "producer", "admin", "log_watermarks")
ASYNC_PARTS = ("engine", "ownership")
START_ORDER = ("store", "session", "executors_directory", "producer", "engine", "ownership", "admin")


def node_of_parts(failing: str | None, what: str) -> tuple[Node, list[str]]:
    """A node whose parts are all stand-ins except the gRPC API, which serves for real."""
    node = Node(config(), clock=Clock())
    calls: list[str] = []
    for name in SYNC_PARTS + ASYNC_PARTS:
        kind = AsyncPart if name in ASYNC_PARTS else Part
        part = kind(name, calls, what if name == failing else None)
        if name == "log_watermarks":
            node.parts = dataclasses.replace(node.parts, log=dataclasses.replace(node.parts.log, close=part.close))
        else:
            setattr(node, name, part)
    return node, calls


@pytest.mark.parametrize("failing", START_ORDER)
def test_a_failed_start_stops_every_part_that_came_up(failing):
    node, calls = node_of_parts(failing, "start")

    async def scenario():
        with pytest.raises(RuntimeError, match=f"{failing} start failed"):
            await node.start()
        await node.stop()  # a no-op now: the failed start has cleaned up already

    observer = node._observer = SpiedLoop("observe", node._observe)
    run(scenario())
    up = START_ORDER[:START_ORDER.index(failing)]
    started = [c.split(".")[0] for c in calls if c.endswith(".start")]
    assert started == [*up, failing]  # nothing started after the failure
    stops = [c.split(".")[0] for c in calls if c.endswith(".stop")]
    for name in up:
        assert name in stops, f"{name} came up but was not stopped: {calls}"
        assert calls.index(f"{name}.stop") > calls.index(f"{failing}.start")
    assert len(stops) == len(set(stops)), f"a part was stopped twice: {calls}"
    if failing == "admin":
        # The gRPC server and the gauge refresher were up: they are down again.
        assert node.grpc_port and refuses(node.grpc_port)
        assert observer.calls == ["start", "stop"] and not observer.running
    else:
        assert observer.calls == []


def test_stop_runs_every_step_and_raises_a_failure_after_a_full_start():
    node, calls = node_of_parts("engine", "stop")

    async def scenario():
        await node.start()
        assert node._serving
        with pytest.raises(RuntimeError, match="engine stop failed"):
            await node.stop()

    run(scenario())
    stops = [c.split(".")[0] for c in calls if c.endswith(".stop")]
    # Reverse of the start order, the log's watermarks consumer closed before the store.
    assert stops == ["admin", "ownership", "engine", "producer", "executors_directory", "session",
                     "log_watermarks", "store"]
    assert node.grpc_port is not None, "the full start bound a port"
    assert refuses(node.grpc_port)


def test_a_loop_that_ends_unexpectedly_turns_the_probes_unhealthy_and_is_counted():
    node, _ = node_of_parts(None, "")
    node.admin = AdminServer(host="127.0.0.1", port=0, ring=dict, ready=node._ready, alive=node._alive,
                             registry=node.metrics.registry)
    broke = asyncio.Event()

    async def observe_then_break():
        await broke.wait()
        raise KeyError("slot 7")

    node._observer = LoopTask("observe", observe_then_break, node.loops)

    def probe(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{node.admin.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    async def scenario():
        await node.start()
        try:
            healthy = await asyncio.to_thread(probe, "/healthz")
            broke.set()
            deadline = asyncio.get_running_loop().time() + 10
            while not node.loops.ended():
                assert asyncio.get_running_loop().time() < deadline, "the loop's end was never reported"
                await asyncio.sleep(0.01)
            return healthy, await asyncio.to_thread(probe, "/healthz"), await asyncio.to_thread(probe, "/readyz")
        finally:
            await node.stop()

    healthy, alive, ready = run(scenario())
    assert healthy[0] == 200
    assert alive[0] == 503 and "observe (KeyError: 'slot 7')" in alive[1]
    assert ready[0] == 503 and "observe" in ready[1]
    assert node.metrics.registry.get_sample_value("taskring_loop_crashes_total", {"loop": "observe"}) == 1
