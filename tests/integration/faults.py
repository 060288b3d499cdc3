"""Fault helpers: a TCP proxy that can black-hole a connection (a network cut
that sends no reset, the hard case: the client learns of it only from silence)."""
from __future__ import annotations

import socket
import threading


class BlackholeProxy:
    """Forwards 127.0.0.1:<port> to a target; `cut()` silently drops all traffic
    both ways (connections stay open, nothing arrives), `restore()` ends the cut
    by closing the black-holed connections so clients reconnect through it."""

    def __init__(self, target_host: str, target_port: int):
        self._target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept_loop, name="proxy-accept", daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
            if self._cut.is_set():
                continue  # held open, never answered
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.append(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not self._cut.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def _close_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self) -> None:
        self._cut.set()

    def restore(self) -> None:
        self._close_all()
        self._cut.clear()

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        self._close_all()
