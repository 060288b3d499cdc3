"""The executor: the server inside a business service that runs its tasks.

Wiring, in the order it happens (each part does one job):

1. `handler()` / `add_handler()` fill the table of task types (before start).
2. `start()` starts a private asyncio loop on a background thread (so a plain
   sync program can host it), and on it a `grpc.aio` server implementing
   ExecutorService.Execute, which hands each batch to the `DeliveryRunner`
   (`_runner.py`): its deliveries run concurrently, and the reply carries all
   their outcomes.
3. When `zk_hosts` is given, `start()` then announces the executor in ZooKeeper
   (`_registration.py`), only once the server can answer.
4. `stop()` undoes this in reverse: deregister first so dispatchers stop
   sending, then let in-flight batches drain for `grace_s`, then stop the
   server and the loop.

Async handlers run on the executor's own loop, not on the caller's: do not share
loop-bound objects (an aiohttp session created elsewhere) with them.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, TypeVar

import grpc

from taskring import _stream
from taskring._registration import Registration, znode_data, znode_path
from taskring._runner import DeliveryRunner, Handler, HandlerFn
from taskring._tracing import traced
from taskring.wire import pb, pb_grpc

if TYPE_CHECKING:   # a client is given in; the executor needs none of its code to run
    from taskring.client import Client

log = logging.getLogger("taskring.executor")

_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_TASK_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")  # as the server's (dispatcher/api/validation.py)
_INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A dispatch frame carries many tasks; gRPC's 4 MiB default is too small for big batches."""

_START_TIMEOUT_S = 30.0

F = TypeVar("F", bound=HandlerFn)

_NEW, _RUNNING, _STOPPED = "new", "running", "stopped"


_SIGNAL_POLL_S = 0.1
"""How often serve_forever looks for a signal its handler noted (the handler takes no lock)."""

class _ExecutorServicer(pb_grpc.ExecutorServiceServicer):
    def __init__(self, runner: DeliveryRunner) -> None:
        self._runner = runner
        self.stopping = asyncio.Event()
        """Set as the executor stops: open Work streams take no new deliveries and end."""

    async def Execute(self, request: pb.ExecuteRequest, context: grpc.aio.ServicerContext) -> pb.ExecuteResponse:
        return await self._runner.run_batch(request.deliveries)

    async def Work(self, request_iterator: AsyncIterator[pb.ExecuteRequest],
                   context: grpc.aio.ServicerContext) -> None:
        await _stream.serve(self._runner, request_iterator, context, self.stopping)


def _default_instance_id() -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()) or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Executor:
    """Runs the handlers of one namespace for the dispatchers. Start once, stop once."""

    def __init__(
        self,
        namespace: str,
        *,
        zk_hosts: str | None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_in_flight: int = 64,
        instance_id: str | None = None,
        advertise_host: str | None = None,
        advertise_port: int | None = None,
        zk_session_timeout_s: float = 10.0,
        credentials: grpc.ServerCredentials | None = None,
        client: Client | None = None,
    ) -> None:
        """Configure; nothing runs until `start()`.

        `zk_hosts` is a kazoo hosts string, optionally with a chroot
        (``"127.0.0.1:22181/taskring"``); None runs without registering (tests,
        or when dispatchers are pointed at the executor some other way).
        `host`/`port` are where the server listens (port 0: any free port);
        `advertise_host` is the host written into ZooKeeper when it differs
        (defaults to `host`, or the machine's name when `host` is a wildcard);
        `advertise_port` likewise, when dispatchers reach the executor through a
        port mapping or a proxy (defaults to the port the server is bound to).
        `max_in_flight` caps handlers running at once across all batches.
        `instance_id` names the znode (default: hostname-pid-random).
        `credentials`: serve TLS, or mutual TLS (`executor_tls_credentials`,
        `executor_tls_from_env`); None: plain text.
        `client`: a `Client` of the cluster, for handlers that add tasks to their graph
        (``ctx.add_tasks``); None: they cannot.
        """
        if not _NAMESPACE.fullmatch(namespace):
            raise ValueError(f"namespace: must match {_NAMESPACE.pattern}, got {namespace!r}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight: must be at least 1, got {max_in_flight}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port: must be in 0..65535, got {port}")
        if zk_session_timeout_s <= 0:
            raise ValueError("zk_session_timeout_s: must be positive")
        instance_id = instance_id if instance_id is not None else _default_instance_id()
        if not _INSTANCE_ID.fullmatch(instance_id):
            raise ValueError(f"instance_id: must match {_INSTANCE_ID.pattern}, got {instance_id!r}")
        self.namespace = namespace
        self.instance_id = instance_id
        self.max_in_flight = max_in_flight
        self._zk_hosts = zk_hosts
        self._zk_session_timeout_s = zk_session_timeout_s
        self._host = host
        self._port = port
        if advertise_host is None:
            advertise_host = socket.gethostname() if host in ("0.0.0.0", "::", "[::]", "") else host
        self._advertise_host = advertise_host
        if advertise_port is not None and not 0 < advertise_port < 65536:
            raise ValueError(f"advertise_port: must be 1..65535, got {advertise_port!r}")
        self._advertise_port = advertise_port
        self._credentials = credentials
        self._client = client
        self._handlers: dict[str, Handler] = {}
        self._state = _NEW
        self._state_lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: grpc.aio.Server | None = None
        self._runner: DeliveryRunner | None = None
        self._servicer: _ExecutorServicer | None = None
        self._registration: Registration | None = None
        self._bound_port: int | None = None

    # ---- handlers ----

    def handler(self, task_type: str) -> Callable[[F], F]:
        """Decorator: run the function for tasks of `task_type`.

        The function takes a `TaskContext`; it may be ``def`` (run on a thread)
        or ``async def`` (run on the executor's loop). Its return value is
        ignored; raise `RetryableError` / `NonRetryableError` to fail.
        """

        def register(fn: F) -> F:
            self.add_handler(task_type, fn)
            return fn

        return register

    def add_handler(self, task_type: str, fn: HandlerFn) -> None:
        """Register `fn` for `task_type` (the non-decorator form of `handler`)."""
        if not _TASK_TYPE.fullmatch(task_type):
            raise ValueError(f"task_type: must match {_TASK_TYPE.pattern}, got {task_type!r}")
        if not callable(fn):
            raise TypeError(f"handler for {task_type!r} is not callable")
        with self._state_lock:
            if self._state != _NEW:
                raise RuntimeError("register handlers before start(): the registration lists the task types")
            if task_type in self._handlers:
                raise ValueError(f"task_type: {task_type!r} already has a handler")
            # In a span continuing the submitter's trace, when the task carries one (_tracing.py).
            self._handlers[task_type] = Handler.of(traced(fn))

    @property
    def task_types(self) -> tuple[str, ...]:
        """The task types this executor has handlers for, sorted."""
        return tuple(sorted(self._handlers))

    # ---- state ----

    @property
    def address(self) -> str:
        """``host:port`` the dispatchers call, once started."""
        if self._bound_port is None:
            raise RuntimeError("the executor has no address until start()")
        return _format_address(self._advertise_host, self._advertise_port or self._bound_port)

    @property
    def in_flight(self) -> int:
        """Handlers running now, including timed-out sync handlers still on their thread."""
        return self._runner.in_flight if self._runner is not None else 0

    @property
    def waiting(self) -> int:
        """Deliveries received and waiting for a free slot (max_in_flight reached)."""
        return self._runner.waiting if self._runner is not None else 0

    @property
    def registration_path(self) -> str | None:
        """The znode this executor holds (when registering with ZooKeeper)."""
        return znode_path(self.namespace, self.instance_id) if self._zk_hosts else None

    # ---- lifecycle ----

    def start(self) -> None:
        """Start serving, then register. Returns once both are done."""
        with self._state_lock:
            if self._state != _NEW:
                raise RuntimeError(f"an Executor starts once; this one is {self._state}")
            if not self._handlers:
                raise RuntimeError("no handlers registered")
            self._state = _RUNNING
        try:
            self._start_server()
            if self._zk_hosts:
                self._registration = Registration(
                    self._zk_hosts,
                    znode_path(self.namespace, self.instance_id),
                    znode_data(address=self.address, namespace=self.namespace, task_types=self.task_types,
                               max_in_flight=self.max_in_flight),
                    session_timeout_s=self._zk_session_timeout_s,
                )
                self._registration.start()
        except BaseException:
            self.stop(grace_s=0)
            raise
        log.info("executor %s for %s serving %s at %s", self.instance_id, self.namespace,
                 ", ".join(self.task_types), self.address)

    def stop(self, grace_s: float = 10.0) -> None:
        """Deregister, drain in-flight batches for up to `grace_s`, stop. Safe before start and twice.

        Batches still running after `grace_s` are cancelled (their async
        handlers too); sync handlers' threads cannot be stopped and are left to
        finish on their own (they are daemon threads: they do not hold up exit).
        """
        if self._thread is not None and threading.current_thread() is self._thread:
            raise RuntimeError("stop() from an async handler would wait for itself; call it from another thread")
        with self._state_lock:
            previous, self._state = self._state, _STOPPED
        self._stop_requested.set()
        if previous != _RUNNING:
            return
        if self._registration is not None:
            self._registration.stop()
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._server is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._astop(grace_s), loop).result(timeout=grace_s + 10)
            except Exception:
                log.warning("executor server did not stop cleanly", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)

    def serve_forever(self, grace_s: float = 10.0) -> None:
        """Start (if needed) and serve until SIGTERM/SIGINT or `stop()`, then stop.

        Signal handlers are installed only when called from the main thread, and
        the previous ones are restored afterwards.
        """
        previous: dict[signal.Signals, object] = {}
        signalled: list[int] = []
        if threading.current_thread() is threading.main_thread():
            def on_signal(signum: int, frame: FrameType | None) -> None:
                # No lock in here: the signal may land while this same thread holds the
                # Event's lock inside wait(), and set() would wait for it forever.
                signalled.append(signum)

            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, on_signal)
        try:
            if self._state == _NEW:
                self.start()
            while not signalled and not self._stop_requested.wait(_SIGNAL_POLL_S):
                pass
            if signalled:
                log.info("executor got signal %d; stopping", signalled[0])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            self.stop(grace_s)

    def __enter__(self) -> Executor:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---- the loop thread ----

    def _start_server(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._run_loop, args=(loop,),
                                        name=f"taskring-executor-{self.namespace}", daemon=True)
        self._thread.start()
        self._bound_port = asyncio.run_coroutine_threadsafe(self._astart(), loop).result(_START_TIMEOUT_S)

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    async def _astart(self) -> int:
        self._runner = DeliveryRunner(self._handlers, self.max_in_flight, self._client)
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ])
        self._servicer = _ExecutorServicer(self._runner)
        pb_grpc.add_ExecutorServiceServicer_to_server(self._servicer, server)
        bind = f"{_format_address(self._host, self._port)}"
        try:
            port = int(server.add_insecure_port(bind) if self._credentials is None
                       else server.add_secure_port(bind, self._credentials))
        except RuntimeError as e:
            raise OSError(f"executor cannot listen on {bind}: {e}") from e
        if port == 0:
            raise OSError(f"executor cannot listen on {bind}")
        await server.start()
        self._server = server
        return port

    async def _astop(self, grace_s: float) -> None:
        assert self._server is not None
        if self._servicer is not None:
            self._servicer.stopping.set()  # before the server's grace starts: streams drain in it
        await self._server.stop(grace_s)
        if self._runner is not None:
            self._runner.close()
