"""The faults tests and benchmarks do to the system: to a process by its PID (kill -9,
SIGSTOP/SIGCONT), to a ZooKeeper session (expiry), and to a TCP connection (a cut).

- `kill_hard`, `pause`, `resume`: signals to a child process (subprocess.Popen).
- `expire_session`: make ZooKeeper expire a live session, the way kazoo's test harness
  once did: a second client attaches to the same session (id and password), which takes
  it away from the owner's connection, then closes it, which ends it on the server.
- `CutProxy`: forwards 127.0.0.1:<port> to a server; `cut()` black-holes every
  connection (held open, nothing arrives: the client learns of it only from silence),
  `drop()` resets every connection and refuses new ones (the server is unreachable),
  `restore()` ends either (black-holed connections are closed, so clients reconnect).
"""
from __future__ import annotations

import signal
import socket
import subprocess
import threading

# ---------------------------------------------------------------- processes

def kill_hard(proc: subprocess.Popen | None) -> None:
    """kill -9 (resumed first if paused, so that it dies at once) and reap it."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait(timeout=10)


def pause(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGSTOP)


def resume(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGCONT)


# ---------------------------------------------------------------- ZooKeeper sessions

def expire_session(hosts: str, client_id: tuple[int, bytes], timeout_s: float = 4.0) -> None:
    """Expire the session `client_id` (a KazooClient's `.client_id`) on the server."""
    from kazoo.client import KazooClient

    session_id, password = client_id
    intruder = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=timeout_s)
    intruder.start(timeout=15)
    try:
        assert intruder.client_id[0] == session_id, "the second client did not attach to the owner's session"
    finally:
        intruder.stop()
        intruder.close()


# ---------------------------------------------------------------- network cuts

class CutProxy:
    """A TCP forwarder to (host, port) that can cut (silently) or drop (loudly) its connections."""

    def __init__(self, target_host: str, target_port: int):
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.settimeout(0.05)   # so that close() ends the accept loop promptly
        self.port = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._refuse = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept_loop, name="cut-proxy-accept", daemon=True)
        self._thread.start()

    # -- the faults

    def cut(self) -> None:
        """Black-hole: connections stay open, nothing passes either way, new ones are never answered."""
        self._cut.set()

    def drop(self) -> None:
        """Reset every connection and refuse new ones (accepted and closed at once)."""
        self._refuse.set()
        self._close_all()

    def restore(self) -> None:
        # The flags first, then the black-holed connections (their clients reconnect
        # through us). The other way round, a client reconnecting at once after its
        # socket was killed could be accepted while the cut still stood and be held open
        # for good: its next call then waited for its read timeout (30 s) after the
        # restore, which is what fault-matrix row 7 measured as a 14-30 s recovery.
        self._cut.clear()
        self._refuse.clear()
        self._close_all()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(5)
        self._listener.close()
        self._close_all()

    # -- the forwarding

    @staticmethod
    def _kill(s: socket.socket) -> None:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def _close_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for s in sockets:
            self._kill(s)

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._refuse.is_set():
                self._kill(client)
                continue
            with self._lock:
                self._sockets.add(client)
            if self._cut.is_set():
                continue  # held open, never answered
            try:
                upstream = socket.create_connection(self._target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                self._kill(client)
                continue
            with self._lock:
                self._sockets.add(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self._cut.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.discard(src)
                self._sockets.discard(dst)
            self._kill(src)
            self._kill(dst)
