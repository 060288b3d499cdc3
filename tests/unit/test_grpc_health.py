"""GrpcHealth (dispatcher/api/health.py) on an in-process gRPC server: every service is
NOT_SERVING until the node is ready, follows readiness both ways, and stays NOT_SERVING once the
node drains, whatever readiness says after."""
from __future__ import annotations

import asyncio
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from dispatcher.api.health import GrpcHealth

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def test_health_follows_readiness_and_a_drain_is_final():
    async def scenario():
        ready: list = [False, "starting"]

        def readiness() -> tuple[bool, str]:
            return bool(ready[0]), str(ready[1])
        health = GrpcHealth(readiness, ("TaskService", "PolicyService"), interval_s=3600)
        server = grpc.aio.server()
        health.add_to(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await health.start()
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)   # the stubs' types lack the methods

            async def status(service: str) -> int:
                return (await stub.Check(health_pb2.HealthCheckRequest(service=service))).status

            assert [await status(s) for s in ("", "taskring.v1.TaskService", "taskring.v1.PolicyService")] == [
                NOT_SERVING] * 3
            ready[:] = [True, "ready"]
            await health.refresh()
            assert await status("") == SERVING and await status("taskring.v1.TaskService") == SERVING
            ready[:] = [False, "no store lease"]
            await health.refresh()
            assert await status("taskring.v1.PolicyService") == NOT_SERVING
            ready[:] = [True, "ready"]
            await health.refresh()
            await health.drain()
            await health.refresh()   # ready, but stopping
            assert await status("") == NOT_SERVING and await status("taskring.v1.TaskService") == NOT_SERVING
        await health.stop()
        await server.stop(None)
    asyncio.run(scenario())
