"""Child processes of the local world, started and stopped by PID, each with its log.

- `ChildProcess`: any command (an SDK CLI, an executor): output to a log file (stderr
  to a second one if asked), `stop()` = SIGTERM then SIGKILL after a deadline, and the
  process faults of harness/faults.py (kill -9, pause, resume).
- `NodeProcess`: a dispatcher node (`python -m taskring_cli.main node`) in a World, with
  its gRPC target, admin endpoint, readiness and metrics.
"""
from __future__ import annotations

import datetime as dt
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from harness import faults
from harness.wait import wait_until
from harness.world import World

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lost_port_race(log: str) -> bool:
    """The node's log says a port it was given was taken (by the time it bound it)."""
    return "Address already in use" in log or "Failed to bind" in log or "address already in use" in log


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log, or a note that there is none."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


def display_command(args: Sequence[str]) -> str:
    """A command line, with a long argument (a Java classpath) shortened."""
    return " ".join(a if len(a) <= 200 else f"<{len(a)} chars: {a[:40]}...{a[-40:]}>" for a in args)


class ChildProcess:
    """One command in a process of its own, known by its PID."""

    def __init__(self, name: str, args: Sequence[str], log_path: Path, *, err_path: Path | None = None,
                 env: dict[str, str] | None = None, cwd: Path = REPO, new_session: bool = False,
                 append: bool = True, header: bool = False):
        self.name = name
        self.args = list(args)
        self.log_path = log_path
        self.err_path = err_path
        self.env = env
        self.cwd = cwd
        self.new_session = new_session
        self.append = append
        self.header = header
        self.proc: subprocess.Popen | None = None
        self.returncode: int | None = None
        self.stop_s: float | None = None

    @property
    def started(self) -> subprocess.Popen:
        """The process, once start()ed."""
        if self.proc is None:
            raise RuntimeError(f"{self.name}: not started")
        return self.proc

    @property
    def pid(self) -> int:
        return self.started.pid

    def start(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab" if self.append else "wb") as out:
            if self.header:
                stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
                out.write(f"=== {stamp} {display_command(self.args[1:])}\n".encode())
                out.flush()
            err = open(self.err_path, "ab") if self.err_path else subprocess.STDOUT
            try:
                # new_session: a Ctrl-C in the terminal reaches only us, and we stop the child in order.
                self.proc = subprocess.Popen(self.args, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                             stdout=out, stderr=err, start_new_session=self.new_session)
            finally:
                if not isinstance(err, int):
                    err.close()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        return tail(self.log_path, lines)

    def describe(self, lines: int = 30) -> str:
        state = ("running" if self.alive() else f"exited {self.proc.returncode}") if self.proc else "not started"
        text = (f"[{self.name}: `{display_command(self.args)}` pid {self.proc.pid if self.proc else '-'} {state}]\n"
                f"--- {self.log_path}:\n{tail(self.log_path, lines)}")
        if self.err_path:
            text += f"\n--- {self.err_path}:\n{tail(self.err_path, lines)}"
        return text

    # -- stopping and faults, by PID

    def signal(self, signum: int) -> None:
        if self.alive():
            self.started.send_signal(signum)

    def terminate(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait (raises subprocess.TimeoutExpired past the deadline)."""
        if not self.alive():
            return self.proc.returncode if self.proc else 0
        t0 = time.monotonic()
        self.started.send_signal(signal.SIGTERM)
        self.returncode = self.started.wait(timeout=timeout_s)
        self.stop_s = time.monotonic() - t0
        return self.returncode

    def stop(self, timeout_s: float = 15.0) -> bool:
        """SIGTERM (resumed first if paused), SIGKILL after `timeout_s`. True if it had to be killed."""
        if not self.alive():
            return False
        self.resume()
        try:
            self.terminate(timeout_s)
            return False
        except subprocess.TimeoutExpired:
            self.kill()
            self.returncode = self.started.returncode
            return True

    def kill(self) -> None:
        faults.kill_hard(self.proc)

    def pause(self) -> None:
        faults.pause(self.started)

    def resume(self) -> None:
        if self.alive():
            faults.resume(self.started)


class NotReady(AssertionError):
    """A node that exited, or did not answer /readyz, before its deadline."""


class NodeProcess(ChildProcess):
    """`taskring node` in a World; logs go to <world.logs>/<node_id>.log unless told otherwise."""

    def __init__(self, world: World, node_id: str, *, single: bool = False, grpc_port: int | None = None,
                 admin_port: int | None = None, admin_token: str | None = None, log_path: Path | None = None,
                 python_args: Sequence[str] = (), new_session: bool = False, append: bool = True,
                 admin_ssl_context: ssl.SSLContext | None = None, **extra_env: str):
        """admin_token None: the node serves its admin endpoint without a token (--no-admin-token);
        else it takes the token from its environment and we send it. python_args go before
        `-m taskring_cli.main` (e.g. `-m cProfile -o FILE`). admin_ssl_context: the admin
        endpoint is HTTPS (the node has TASKRING_TLS_* in `extra_env`), reached with it."""
        self.admin_ssl_context = admin_ssl_context
        self.world = world
        self.node_id = node_id
        self.single = single
        self.grpc_port = grpc_port or free_port()
        self.admin_port = admin_port or free_port()
        # Ports chosen here may be taken by another process between free_port() and the node's
        # bind (parallel test workers start nodes at once): such a node is started again on new ones.
        self._ports_ours = grpc_port is None and admin_port is None
        self._port_retries = 0
        self.admin_token = admin_token
        args = [sys.executable, *python_args, "-m", "taskring_cli.main", "node", "--node-id", node_id,
                "--grpc-port", str(self.grpc_port), "--admin-port", str(self.admin_port)]
        if admin_token is None:
            args.append("--no-admin-token")
        if single:
            args.append("--single")
        env = world.node_env(**extra_env)
        env.pop("TASKRING_NODE_ID", None)   # each node has its own --node-id
        super().__init__(node_id, args, log_path or world.logs / f"{node_id}.log", env=env,
                         new_session=new_session, append=append, header=not append)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def admin(self) -> str:
        return f"{'https' if self.admin_ssl_context else 'http'}://127.0.0.1:{self.admin_port}"

    def get_bytes(self, path: str, timeout_s: float = 3.0) -> bytes:
        request = urllib.request.Request(self.admin + path)
        if self.admin_token:
            request.add_header("Authorization", f"Bearer {self.admin_token}")
        with urllib.request.urlopen(request, timeout=timeout_s, context=self.admin_ssl_context) as response:
            return response.read()

    def get(self, path: str, timeout_s: float = 3.0):
        return json.loads(self.get_bytes(path, timeout_s))

    def probe(self, path: str) -> bool:
        try:
            self.get_bytes(path, timeout_s=1.0)
            return True
        except Exception:
            return False

    def _answers_as_itself(self) -> bool:
        """/readyz names the node that answers: ours, not another process that has our port."""
        try:
            return self.get("/readyz").get("node") == self.node_id
        except Exception:
            return False

    def _new_ports(self) -> None:
        self.grpc_port, self.admin_port = free_port(), free_port()
        for flag, port in (("--grpc-port", self.grpc_port), ("--admin-port", self.admin_port)):
            self.args[self.args.index(flag) + 1] = str(port)

    def metric(self, name: str) -> float:
        """One unlabelled sample from the node's /metrics."""
        for line in self.get_bytes("/metrics").decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"node {self.node_id} exports no {name}")

    def status(self) -> dict:
        return self.get("/ring")["node_status"]

    def wait_ready(self, timeout_s: float = 30.0) -> NodeProcess:
        """Until /readyz answers 200 from this node; NotReady (with the log's tail) if it exits or
        the deadline passes. A node that lost the race for a port chosen here starts again on new
        ports (at most three times); a /readyz answered by another process on our admin port (one
        that took it before our node could) does not count."""
        def ready() -> bool:
            if not self.alive():
                if self._ports_ours and self._port_retries < 3 and _lost_port_race(self.log_tail(60)):
                    self._port_retries += 1
                    self._new_ports()
                    self.start()
                    return False
                code = self.proc.returncode if self.proc else None
                raise NotReady(f"node {self.node_id} exited ({code}) before it was ready;"
                               f" log {self.log_path}:\n{self.log_tail()}")
            return self._answers_as_itself()
        try:
            wait_until(ready, timeout_s, f"node {self.node_id} to be ready (log {self.log_path})", 0.1)
        except NotReady:
            raise
        except AssertionError as exc:
            raise NotReady(f"{exc}:\n{self.log_tail()}") from None
        return self

