"""`taskring dev`: the whole of taskring in one process, with no servers, and a clock a test moves.

One node owns every slot (as `taskring node --single` does), on the in-memory twins of the store,
the log and membership (dispatcher/parts.py), with its gRPC API, its admin endpoint and console,
and a ZooKeeper front (membership/zookeeper_front.py) where the executors of every SDK register
exactly as in production. The clock is a MovableClock: `POST /api/dev/clock {"advance_ms"}` (or
the Python SDK's `taskring.testing` fixture) moves it forward, and what came due (a delayed task,
a retry's backoff, a cron fire, a heartbeat lease) goes at once.

What it is not: durable (the tasks live as long as the process), clustered, or fast (one Python
process); graphs need the MariaDB store and are refused with UNIMPLEMENTED here.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import signal
import socket
import time

from dispatcher.admin.clock_routes import ClockRoutes
from dispatcher.base.clock import MovableClock, ms_to_datetime, rfc3339
from dispatcher.base.config import NodeConfig, ZooKeeperConfig
from dispatcher.node import Node
from dispatcher.parts import memory_parts
from membership.executors import parse_executor
from membership.memory import MemoryExecutorDirectory
from membership.paths import EXECUTORS_ROOT
from membership.zookeeper_front import ZooKeeperFront

log = logging.getLogger(__name__)

CHROOT = "/taskring"
"""Made at start, so that executors pointed at `127.0.0.1:<port>/taskring` (the local stack's
string, every SDK's default) find it there."""


class DevError(Exception):
    """`taskring dev` cannot start as asked; the message names the setting."""


@dataclasses.dataclass(frozen=True)
class DevConfig:
    host: str = "127.0.0.1"
    grpc_port: int = 7070
    admin_port: int = 7080
    zookeeper_port: int = 22181
    """The local stack's ports by default, so that SDK examples and CLIs run against dev unchanged;
    0: any free port (tests)."""
    slot_count: int = 8
    start_at: dt.datetime | None = None
    """Where the clock starts (aware); None: now."""
    policies_file: str | None = None

    def __post_init__(self) -> None:
        for name in ("grpc_port", "admin_port", "zookeeper_port"):
            port = getattr(self, name)
            if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
                raise DevError(f"{name}: must be a port number in 0..65535, got {port!r}")
        if not 1 <= self.slot_count <= 1024:
            raise DevError(f"slot_count: must be 1..1024, got {self.slot_count!r}")
        if self.start_at is not None and self.start_at.tzinfo is None:
            raise DevError(f"start_at: needs a time zone (e.g. 2027-03-13T12:00:00Z), got {self.start_at.isoformat()}")


class DevServer:
    """Start once, stop once, on one event loop."""

    def __init__(self, config: DevConfig):
        self.config = config
        for name in ("grpc_port", "admin_port", "zookeeper_port"):
            _check_free(config.host, getattr(config, name), name)
        start_ms = None if config.start_at is None else int(config.start_at.timestamp() * 1000)
        self.clock = MovableClock(start_ms)
        self.executors = MemoryExecutorDirectory()
        self.zookeeper = ZooKeeperFront(host=config.host, port=config.zookeeper_port,
                                        on_change=self._znode_changed)
        node_config = NodeConfig(
            node_id="dev", grpc_host=config.host, grpc_port=config.grpc_port, admin_port=config.admin_port,
            slot_count=config.slot_count, cluster=False, retry_policies_file=config.policies_file,
            zookeeper=ZooKeeperConfig(hosts=f"{config.host}:{config.zookeeper_port}{CHROOT}"),
            # One process: the periodic loops run often, as nothing else shares them.
            poll_interval_ms=100, cron_tick_ms=250, sweep_interval_ms=1_000, recovery_interval_ms=1_000)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.node = Node(node_config, clock=self.clock, parts=memory_parts(node_config, self.executors),
                         more_routes=ClockRoutes(self.clock, self._moved).routes())

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await self.zookeeper.start()
        except OSError as exc:
            raise DevError(f"zookeeper_port: cannot listen on {self.config.host}:{self.config.zookeeper_port}:"
                           f" {exc.strerror or exc}") from None
        self.zookeeper.make_path(CHROOT)
        try:
            await self.node.start()
        except BaseException:
            await self.zookeeper.stop()
            raise

    async def stop(self) -> None:
        await self.node.stop()
        await self.zookeeper.stop()

    @property
    def endpoints(self) -> dict[str, str]:
        host = self.config.host
        return {"grpc": f"{host}:{self.node.grpc_port}", "admin": f"http://{host}:{self.node.admin.port}/",
                "zookeeper": f"{host}:{self.zookeeper.port}{CHROOT}"}

    async def advance(self, ms: int) -> int:
        """Move the clock forward and wake what came due; returns the new now (ms)."""
        now_ms = self.clock.advance(ms)
        await self.node.time_moved()
        return now_ms

    def _moved(self) -> None:
        """From an admin request's thread: the node acts on the move before the request answers."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self.node.time_moved(), self._loop).result(timeout=30)

    def _znode_changed(self, path: str, data: bytes | None) -> None:
        """An executor's znode (…/executors/<namespace>/<instance>) is an entry of the directory."""
        parts = path.split("/")
        if len(parts) < 4 or parts[-3] != EXECUTORS_ROOT.strip("/"):
            return
        namespace, instance_id = parts[-2], parts[-1]
        if data is None:
            self.executors.deregister(namespace, instance_id)
            return
        instance = parse_executor(namespace, instance_id, data)
        if instance is not None:
            self.executors.register(namespace, instance)
            log.info("executor %s registered for %s: %s", instance_id, namespace, ", ".join(instance.task_types))


def _check_free(host: str, port: int, name: str) -> None:
    """Refuse a port in use before anything starts, naming the setting (0: any free port)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise DevError(f"{name}: {host}:{port} is in use ({exc.strerror or exc}); choose another"
                           f" (--{name.replace('_', '-')}) or stop what holds it") from None


async def run_dev(config: DevConfig) -> None:
    """Run until SIGTERM/SIGINT."""
    started = time.monotonic()
    server = DevServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    ends = server.endpoints
    print(f"taskring dev ready in {time.monotonic() - started:.2f} s: grpc {ends['grpc']} console {ends['admin']}"
          f" zookeeper {ends['zookeeper']} clock {rfc3339(ms_to_datetime(server.clock.now_ms()))}", flush=True)
    await stop.wait()
    with contextlib.suppress(Exception):
        await server.stop()
