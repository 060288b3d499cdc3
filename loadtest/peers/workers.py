"""The worker under test: its process (in its own session, every descendant stopped), and what
Celery and Dramatiq each need to start one and to enqueue to it."""
from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from harness.processes import REPO
from loadtest.bench.observe import descendants, group_members
from loadtest.peers.model import SYSTEMS, PeersConfig
from loadtest.peers.redis_server import (
    URL_ENV,
)

# ---------------------------------------------------------------- the worker process

class WorkerProcess:
    """A worker command in its own session (process group), with its output in a log file."""

    def __init__(self, command: list[str], env: dict[str, str], log: pathlib.Path):
        self.command, self.env, self.log = command, env, log
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("WorkerProcess.pid before start()")
        return self._proc.pid

    def start(self) -> None:
        self._log_file = self.log.open("wb")
        # start_new_session: the worker and its children form one process group that stop() can end by its id.
        self._proc = subprocess.Popen(self.command, cwd=REPO, env=self.env, stdin=subprocess.DEVNULL,
                                      stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def pids(self) -> list[int]:
        return descendants(self._proc.pid) if self.alive() and self._proc is not None else []

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 20.0) -> int | None:
        """SIGTERM (a warm shutdown for both systems), then SIGKILL to the worker's process group if needed."""
        proc = self._proc
        if proc is None:
            return None
        try:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    pass
            # The group's id is the worker's PID (start_new_session): this reaches the pool children too, also
            # those left behind by a main process that exited first, and nothing that is not the worker's.
            if group_members(proc.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return proc.returncode
        finally:
            self._proc = None
            if self._log_file is not None:
                self._log_file.close()


def worker_env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env[URL_ENV] = url
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTHONSTARTUP", None)
    return env


# ---------------------------------------------------------------- the two systems

class CeleryDriver:
    """Celery's worker command and its producer side (the run's own app, on the run's Redis)."""

    system = "celery"

    def __init__(self, cfg: PeersConfig):
        self.cfg = cfg
        self.app: Any = None
        self.task: Any = None

    def describe(self) -> str:
        c = self.cfg
        return (f"celery worker --pool={c.celery_pool} --concurrency={c.celery_concurrency} "
                f"--prefetch-multiplier={c.celery_prefetch}, no result backend, without gossip/mingle/heartbeat")

    def worker_command(self) -> list[str]:
        c = self.cfg
        return [sys.executable, "-m", "celery", "-A", "loadtest.peers.celery_noop", "worker",
                f"--pool={c.celery_pool}", f"--concurrency={c.celery_concurrency}",
                f"--prefetch-multiplier={c.celery_prefetch}", "--queues=peers", "--loglevel=WARNING",
                "--without-gossip", "--without-mingle", "--without-heartbeat", f"--hostname=peers-{os.getpid()}@%h"]

    def connect(self, url: str) -> None:
        from loadtest.peers.celery_noop import TASK_NAME, make_app
        self.app = make_app(url)
        self.task = self.app.tasks[TASK_NAME]

    def enqueue_batch(self, phase: str, seqs: range, enqueued_at: float) -> None:
        if self.cfg.celery_enqueue == "group":
            from celery import group  # type: ignore[import-untyped,import-not-found,unused-ignore]
            group(self.task.s(phase, seq, enqueued_at) for seq in seqs).apply_async()
        else:  # one producer (one connection) held for the batch, as group does internally
            with self.app.producer_or_acquire() as producer:
                for seq in seqs:
                    self.task.apply_async((phase, seq, enqueued_at), producer=producer)

    def enqueue_one(self, phase: str, seq: int, enqueued_at: float) -> None:
        self.task.apply_async((phase, seq, enqueued_at))

    def close(self) -> None:
        if self.app is not None:
            self.app.close()
            self.app = None


class DramatiqDriver:
    """Dramatiq's worker command and its producer side (a RedisBroker of the run's own)."""

    system = "dramatiq"

    def __init__(self, cfg: PeersConfig):
        self.cfg = cfg
        self.broker: Any = None
        self.group: Any = None
        self.make_message: Callable[[str, int, float], Any] | None = None

    def describe(self) -> str:
        c = self.cfg
        return f"dramatiq --processes {c.dramatiq_processes} --threads {c.dramatiq_threads}, default middleware"

    def worker_command(self) -> list[str]:
        c = self.cfg
        return [sys.executable, "-m", "dramatiq", "loadtest.peers.dramatiq_noop", "--processes",
                str(c.dramatiq_processes), "--threads", str(c.dramatiq_threads), "--queues", "peers",
                "--worker-shutdown-timeout", "10000"]

    def connect(self, url: str) -> None:
        import dramatiq  # type: ignore[import-not-found,unused-ignore]
        from dramatiq.brokers.redis import RedisBroker  # type: ignore[import-not-found,unused-ignore]

        from loadtest.peers.dramatiq_noop import make_message
        # A socket timeout so that a Redis that stops answering fails the run instead of hanging it.
        self.broker = RedisBroker(url=f"{url}?socket_timeout=10")
        self.group, self.make_message = dramatiq.group, make_message

    def enqueue_batch(self, phase: str, seqs: range, enqueued_at: float) -> None:
        assert self.make_message is not None, "connect() first"
        self.group([self.make_message(phase, seq, enqueued_at) for seq in seqs], broker=self.broker).run()

    def enqueue_one(self, phase: str, seq: int, enqueued_at: float) -> None:
        assert self.make_message is not None, "connect() first"
        self.broker.enqueue(self.make_message(phase, seq, enqueued_at))

    def close(self) -> None:
        if self.broker is not None:
            self.broker.close()
            self.broker = None


Driver = CeleryDriver | DramatiqDriver


def make_driver(system: str, cfg: PeersConfig) -> Driver:
    if system == "celery":
        return CeleryDriver(cfg)
    if system == "dramatiq":
        return DramatiqDriver(cfg)
    raise ValueError(f"unknown system {system!r} (one of {', '.join(SYSTEMS)})")
