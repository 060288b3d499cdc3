"""A private redis-server for one benchmark run, and the start records the no-op tasks write into it.

RedisServer starts `redis-server` on a free 127.0.0.1 port with a temporary directory and no persistence
(`--save "" --appendonly no`), waits until it answers PING and stops it by its PID:

    with RedisServer() as server:
        print(server.url, server.pid)

StartRecorder runs inside the worker processes: the no-op task calls `record(phase, seq, enqueued_at)`, which takes
`time.time()` and appends one tuple to an in-process deque (about a microsecond, see `record_cost_us`). A daemon
thread per process drains the deque every 20 ms into the list `peers:starts:<phase>` of the same Redis, one
pipelined RPUSH per phase, so a task costs no Redis round trip of its own. The runner reads the lists with
`count_starts` and `read_starts`. Records still in a deque when a worker process dies are lost, which is why the
runner waits until every task's record has arrived before it stops the workers.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from types import TracebackType
from typing import Any

HOST = "127.0.0.1"
STARTS_KEY = "peers:starts:{phase}"
URL_ENV = "PEERS_REDIS_URL"


# ---------------------------------------------------------------- the server

def free_port(host: str = HOST) -> int:
    """A port the kernel says is free now (another process may take it before redis binds; start() retries)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def ping(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when a Redis server answers PING on host:port (inline command, no client library needed)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def redis_server_version(executable: str = "redis-server") -> str | None:
    """`redis-server --version`'s v=... field, or None when the binary is missing."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    return out.strip() or None


class RedisServer:
    """One redis-server process on 127.0.0.1, in a temporary directory removed by stop()."""

    def __init__(self, executable: str = "redis-server", host: str = HOST, start_timeout_s: float = 10.0,
                 extra_args: list[str] | None = None):
        if not host.startswith("127."):
            raise ValueError("the benchmark's Redis listens on the loopback only")
        self.executable = executable
        self.host = host
        self.start_timeout_s = start_timeout_s
        self.extra_args = list(extra_args or [])
        self.port: int | None = None
        self.dir: pathlib.Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("RedisServer.url before start()")
        return f"redis://{self.host}:{self.port}/0"

    def command(self, port: int, directory: pathlib.Path) -> list[str]:
        # No RDB snapshots and no AOF: nothing of the run is written to disk, and no fork for a BGSAVE
        # steals a core in the middle of a phase.
        return [self.executable, "--bind", self.host, "--port", str(port), "--dir", str(directory),
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
                "--logfile", str(directory / "redis.log"), *self.extra_args]

    def start(self, attempts: int = 3) -> RedisServer:
        if self._proc is not None:
            raise RuntimeError("RedisServer already started")
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="peers-redis-"))
        try:
            for _ in range(attempts):  # a free port can be taken between free_port() and redis binding it
                port = free_port(self.host)
                self._proc = subprocess.Popen(self.command(port, self.dir), stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.port = port
                if self._wait_ready():
                    return self
                self._kill()
            raise RuntimeError(f"redis-server did not answer PING within {self.start_timeout_s} s: {self.log_tail()}")
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> bool:
        assert self._proc is not None and self.port is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if ping(self.host, self.port):
                return True
            time.sleep(0.05)
        return False

    def log_tail(self, lines: int = 10) -> str:
        if self.dir is None:
            return ""
        try:
            return " | ".join((self.dir / "redis.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _kill(self, timeout_s: float = 5.0) -> None:
        """SIGTERM this process (by its PID), SIGKILL it if it is still there after timeout_s."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout_s)

    def stop(self) -> None:
        """Stop the server and remove its directory; safe to call twice or after a failed start()."""
        try:
            self._kill()
        finally:
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


# ---------------------------------------------------------------- start records (worker side)

class StartRecorder:
    """Records when each task started, cheaply, and pushes the records to Redis from a background thread.

    One per worker module. The flusher thread and the Redis client are made lazily in the process that runs
    tasks: Celery's prefork children and Dramatiq's worker processes are forked after the module was imported,
    and a thread or a socket does not survive a fork.
    """

    def __init__(self, url: str | None, flush_interval_s: float = 0.02):
        self.url = url                      # None: record only (for measuring the cost of record())
        self.flush_interval_s = flush_interval_s
        self._pid: int | None = None
        self._start_lock = threading.Lock()
        # deque.append and popleft are atomic under the GIL: the task threads and the flusher need no lock.
        self._pending: collections.deque[tuple[str, int, float, float]] = collections.deque()

    def record(self, phase: str, seq: int, enqueued_at: float) -> None:
        started = time.time()
        if self._pid != os.getpid():
            self._start_in_this_process()
        self._pending.append((phase, seq, enqueued_at, started))

    def _start_in_this_process(self) -> None:
        # Two task threads can see a new PID at once (Dramatiq runs several per process): one starts the flusher.
        with self._start_lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._pending.clear()           # a parent's unsent records are the parent's to send
            if self.url is not None:
                threading.Thread(target=self._flush_forever, args=(self.url, self._pid), name="peers-starts",
                                 daemon=True).start()

    def _flush_forever(self, url: str, pid: int) -> None:
        import redis  # type: ignore[import-not-found,unused-ignore]
        client = redis.Redis.from_url(url)
        while True:
            time.sleep(self.flush_interval_s)
            try:
                self._flush(client, pid)
            except Exception:  # Redis gone (the run is ending): keep the records, try again next tick
                continue

    def _flush(self, client: Any, pid: int) -> None:
        by_phase: dict[str, list[str]] = collections.defaultdict(list)
        taken: list[tuple[str, int, float, float]] = []
        while self._pending:
            taken.append(self._pending.popleft())
        if not taken:
            return
        for phase, seq, enqueued_at, started in taken:
            by_phase[phase].append(f"{seq} {enqueued_at!r} {started!r} {pid}")
        try:
            pipe = client.pipeline(transaction=False)
            for phase, values in by_phase.items():
                pipe.rpush(STARTS_KEY.format(phase=phase), *values)
            pipe.execute()
        except Exception:
            self._pending.extendleft(reversed(taken))  # sent again on the next tick
            raise


def record_cost_us(count: int = 100_000) -> float:
    """Microseconds that one StartRecorder.record() call costs inside a task (no flusher, this process)."""
    recorder = StartRecorder(url=None)
    t0 = time.perf_counter()
    for i in range(count):
        recorder.record("cost", i, 0.0)
    return (time.perf_counter() - t0) / count * 1e6


# ---------------------------------------------------------------- start records (runner side)

@dataclasses.dataclass(frozen=True)
class Start:
    """One executed task: its sequence number in the phase, when it was enqueued and started (unix s), by whom."""

    seq: int
    enqueued_at: float
    started: float
    pid: int


def count_starts(client: Any, phase: str) -> int:
    return int(client.llen(STARTS_KEY.format(phase=phase)))


def read_starts(client: Any, phase: str) -> list[Start]:
    out = []
    for raw in client.lrange(STARTS_KEY.format(phase=phase), 0, -1):
        seq, enqueued_at, started, pid = raw.split()
        out.append(Start(int(seq), float(enqueued_at), float(started), int(pid)))
    return out
