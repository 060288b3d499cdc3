"""Test your handlers and schedules against `taskring dev`: no servers, and a clock you move.

    from taskring.testing import TaskringDev

    def test_unpaid_order_is_cancelled(taskring_dev: TaskringDev):
        executor = taskring_dev.executor("shop")
        executor.add_handler("cancel_unpaid", cancel_unpaid)
        executor.start()
        task = taskring_dev.client().submit("shop", "cancel_unpaid", {"order": 7}, delay=1800)
        taskring_dev.advance(minutes=30)
        assert taskring_dev.wait_for(task.task_id).state is TaskState.SUCCEEDED

`TaskringDev` runs `taskring dev` (the server package's command) as a child process on free
ports, and stops it, with every executor and client it made, on `stop()`. The `taskring_dev`
fixture (a pytest plugin this package registers) gives each test its own, started in about a
second; `@pytest.mark.taskring_dev(start_at="2027-03-13T12:00:00Z")` starts its clock elsewhere.

Moving the clock moves everything the node times: a delay, a retry's backoff, a cron rule's
next fire (in its zone, daylight saving included), a heartbeat timeout. A handler itself runs in
real time. The SDK is the one you ship: the executors register through dev's ZooKeeper front and
the client calls dev's gRPC API, as they would a cluster's.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from taskring.client import Client
from taskring.executor import Executor
from taskring.task import TaskInfo, TaskState

_READY = re.compile(r"taskring dev ready in \S+ s: grpc (?P<grpc>\S+) console (?P<admin>\S+)"
                    r" zookeeper (?P<zookeeper>\S+)")
_TERMINAL = frozenset({TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED, TaskState.SKIPPED})


class DevNotStarted(RuntimeError):
    """`taskring dev` could not be started or did not become ready; the message says why."""


def _command() -> list[str]:
    """`TASKRING_DEV_COMMAND` (split on spaces), else `taskring` beside this Python, else on PATH."""
    given = os.environ.get("TASKRING_DEV_COMMAND")
    if given:
        return given.split()
    beside = pathlib.Path(sys.executable).with_name("taskring")
    found = str(beside) if beside.exists() else shutil.which("taskring")
    if found is None:
        raise DevNotStarted("no `taskring` command beside this Python or on PATH: install the taskring server"
                            " package, or set TASKRING_DEV_COMMAND")
    return [found]


class TaskringDev:
    """One `taskring dev` process and what a test made on it. Start once, stop once."""

    def __init__(self, *, start_at: datetime | str | None = None, policies_file: str | None = None,
                 ready_timeout_s: float = 20.0) -> None:
        if isinstance(start_at, str):
            start_at = datetime.fromisoformat(start_at.replace("Z", "+00:00"))
        if start_at is not None and start_at.tzinfo is None:
            raise ValueError(f"start_at: needs a time zone, got {start_at.isoformat()}")
        self._start_at = start_at
        self._policies_file = policies_file
        self._ready_timeout_s = ready_timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._output: list[str] = []
        self._clients: list[Client] = []
        self._executors: list[Executor] = []
        self.grpc = ""
        """The task API's target, ``host:port``."""
        self.admin = ""
        """The admin endpoint and console, ``http://host:port/``."""
        self.zookeeper = ""
        """Where executors register: a ZooKeeper hosts string with its chroot."""

    # ---- lifecycle ----

    def start(self) -> TaskringDev:
        if self._process is not None:
            raise RuntimeError("start() once")
        args = [*_command(), "dev", "--grpc-port", "0", "--admin-port", "0", "--zookeeper-port", "0"]
        if self._start_at is not None:
            args += ["--start-at", self._start_at.astimezone(UTC).isoformat()]
        if self._policies_file is not None:
            args += ["--policies-file", self._policies_file]
        self._process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                         start_new_session=True)
        ready = threading.Event()
        threading.Thread(target=self._read_output, args=(ready,), name="taskring-dev-output", daemon=True).start()
        if not ready.wait(self._ready_timeout_s) or not self.grpc:
            self.stop()
            raise DevNotStarted(f"`{' '.join(args)}` did not become ready within {self._ready_timeout_s} s:\n"
                                + "".join(self._output[-40:]))
        return self

    def stop(self) -> None:
        """Stop every executor and client made here, then the process (SIGTERM, then SIGKILL after 10 s)."""
        for executor in self._executors:
            executor.stop()
        for client in self._clients:
            client.close()
        self._executors.clear()
        self._clients.clear()
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def __enter__(self) -> TaskringDev:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def output(self) -> str:
        """What the process printed so far (its log)."""
        return "".join(self._output)

    # ---- what a test uses ----

    def client(self, **kwargs: Any) -> Client:
        """A Client of this server (closed on stop)."""
        client = Client(self.grpc, **kwargs)
        self._clients.append(client)
        return client

    def executor(self, namespace: str, **kwargs: Any) -> Executor:
        """An Executor that registers with this server (stopped on stop); add handlers, then start it."""
        executor = Executor(namespace, zk_hosts=self.zookeeper, **kwargs)
        self._executors.append(executor)
        return executor

    def now(self) -> datetime:
        """The server's time (UTC)."""
        return _from_ms(self._admin("GET", "/api/dev/clock")["now_ms"])

    def advance(self, delta: timedelta | float | None = None, *, days: float = 0, hours: float = 0,
                minutes: float = 0, seconds: float = 0, milliseconds: float = 0) -> datetime:
        """Move the server's clock forward, then return its new time once what came due was woken
        (it runs in real time from there: wait for it with `wait_for`)."""
        if isinstance(delta, (int, float)):
            delta = timedelta(seconds=delta)
        total = (delta or timedelta()) + timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds,
                                                   milliseconds=milliseconds)
        if total < timedelta():
            raise ValueError(f"advance: time only moves forward, got {total}")
        return _from_ms(self._admin("POST", "/api/dev/clock",
                                    {"advance_ms": total // timedelta(milliseconds=1)})["now_ms"])

    def wait_for(self, task_id: str, states: Collection[TaskState] = _TERMINAL, *,
                 timeout_s: float = 10.0) -> TaskInfo:
        """The task once it is in one of `states` (by default any end); TimeoutError naming its state
        if it is not within `timeout_s` (real time)."""
        client = self._clients[0] if self._clients else self.client()
        deadline = time.monotonic() + timeout_s
        while True:
            info = client.get(task_id)
            if info.state in states:
                return info
            if time.monotonic() > deadline:
                raise TimeoutError(f"task {task_id}: {info.state.value} after {timeout_s} s,"
                                   f" waiting for {sorted(s.value for s in states)}")
            time.sleep(0.01)

    # ---- inside ----

    def _read_output(self, ready: threading.Event) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._output.append(line)
            found = _READY.search(line)
            if found and not ready.is_set():
                self.grpc, self.admin, self.zookeeper = found["grpc"], found["admin"], found["zookeeper"]
                ready.set()
        ready.set()   # ended before ready: start() reports the output

    def _admin(self, method: str, path: str, body: dict | None = None) -> dict:
        if not self.admin:
            raise RuntimeError("start() first")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.admin.rstrip("/") + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise ValueError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from None


def _from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


try:   # the fixture, when pytest is there (this module is registered as its plugin)
    import pytest
except ImportError:   # pragma: no cover - pytest is a test-time tool
    pass
else:
    def pytest_configure(config: Any) -> None:
        config.addinivalue_line("markers", "taskring_dev(start_at=..., policies_file=...): how the"
                                           " taskring_dev fixture starts its server")

    @pytest.fixture
    def taskring_dev(request: Any) -> Iterator[TaskringDev]:
        """A `taskring dev` of this test's own, stopped after it."""
        marker = request.node.get_closest_marker("taskring_dev")
        with TaskringDev(**(marker.kwargs if marker is not None else {})) as dev:
            yield dev
