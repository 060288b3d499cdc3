"""gRPC health (`grpc.health.v1`) and server reflection on the node's gRPC port, for Kubernetes'
gRPC probes and for tools such as grpcurl that need no proto file.

Health answers for the whole server ("") and for each of the node's services by its full name
(`taskring.v1.TaskService`, ...). They are NOT_SERVING while the node starts, SERVING while it
is ready (the same judgement as the admin endpoint's /readyz: serving, no loop ended, a store
lease on its slots, ownership not in doubt), NOT_SERVING again when it is not, and NOT_SERVING
for good once it begins to stop (`drain`, the first step of a graceful stop, so that a load
balancer or a probe stops sending work before anything is taken down). Readiness is read every
`interval_s` and pushed to the health servicer when it changes, so a Watch sees the change.

Both services are open: a probe carries no token, and reflection shows only the wire contract,
which is public (proto/).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from dispatcher.base.loop_task import LoopWatch, PeriodicJob
from taskring.wire import pb

log = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def full_names(service_names: Sequence[str]) -> list[str]:
    """`TaskService` -> `taskring.v1.TaskService`."""
    return [pb.DESCRIPTOR.services_by_name[name].full_name for name in service_names]


class GrpcHealth:
    def __init__(self, ready: Callable[[], tuple[bool, str]], service_names: Sequence[str], *,
                 interval_s: float = 1.0, watch: LoopWatch | None = None):
        self._ready = ready
        self._services = ["", *full_names(service_names)]
        self._servicer = health.aio.HealthServicer()
        self._serving: bool | None = None
        self._draining = False
        self._job = PeriodicJob("grpc-health", interval_s=interval_s, step=self.refresh, watch=watch)

    def add_to(self, server: grpc.aio.Server) -> None:
        """Register health and reflection on `server` (before it starts)."""
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)
        names = [*self._services[1:], health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                 reflection.SERVICE_NAME]
        reflection.enable_server_reflection(names, server)

    async def start(self) -> None:
        """NOT_SERVING for every service until the first refresh finds the node ready (the
        servicer's own default for "" is SERVING)."""
        for service in self._services:
            await self._servicer.set(service, NOT_SERVING)
        self._serving = False
        self._job.start()

    async def stop(self) -> None:
        await self._job.stop()

    async def refresh(self) -> None:
        """Push the node's readiness to every service's status when it changed."""
        if self._draining:
            return
        try:
            ready, why = self._ready()
        except Exception as exc:   # a judgement that cannot be made is not "ready"
            log.warning("grpc health: the readiness check failed: %s", exc)
            ready, why = False, f"readiness check failed: {exc}"
        if ready == self._serving:
            return
        self._serving = ready
        log.info("grpc health: %s (%s)", "SERVING" if ready else "NOT_SERVING", why)
        for service in self._services:
            await self._servicer.set(service, SERVING if ready else NOT_SERVING)

    async def drain(self) -> None:
        """NOT_SERVING for every service from now on (the node is stopping)."""
        self._draining = True
        await self._job.stop()
        await self._servicer.enter_graceful_shutdown()
