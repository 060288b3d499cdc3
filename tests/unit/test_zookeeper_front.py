"""membership/zookeeper_front.py against a real ZooKeeper client (kazoo) and raw frames: the calls
the SDKs' registrations make, watches, ephemerals ending with their session (closed, or gone for
its timeout), refusals with ZooKeeper's own error codes, and a broken frame closing only its
connection."""
from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from harness.wait import wait_until
from membership.zookeeper_front import ZooKeeperFront


class Running:
    """A front on its own event loop thread, and what it reported."""

    def __init__(self, **kwargs) -> None:
        self.changes: list[tuple[str, bytes | None]] = []
        self.loop = asyncio.new_event_loop()
        self.front = ZooKeeperFront(on_change=lambda path, data: self.changes.append((path, data)),
                                    sweep_interval_s=0.05, **kwargs)
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.call(self.front.start())

    def call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    @property
    def port(self) -> int:
        assert self.front.port is not None
        return self.front.port

    def client(self, chroot: str = "") -> KazooClient:
        client = KazooClient(hosts=f"127.0.0.1:{self.front.port}{chroot}", timeout=5)
        client.start(timeout=5)
        return client

    def stop(self) -> None:
        self.call(self.front.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture
def running() -> Iterator[Running]:
    r = Running(min_session_timeout_ms=200)
    try:
        yield r
    finally:
        r.stop()


def test_what_a_registration_does_is_answered_as_zookeeper_answers_it(running: Running):
    running.front.make_path("/taskring")
    zk = running.client("/taskring")
    try:
        zk.ensure_path("/executors/shop")
        zk.create("/executors/shop/a", b'{"address": "h:1"}', ephemeral=True)
        data, stat = zk.get("/executors/shop/a")
        assert data == b'{"address": "h:1"}' and stat.ephemeralOwner == zk.client_id[0] and stat.version == 0
        with pytest.raises(NodeExistsError):
            zk.create("/executors/shop/a", b"", ephemeral=True)
        with pytest.raises(BadVersionError):
            zk.set("/executors/shop/a", b"x", version=7)
        assert zk.set("/executors/shop/a", b"x", version=0).version == 1
        with pytest.raises(NotEmptyError):
            zk.delete("/executors/shop")
        with pytest.raises(NoNodeError):
            zk.create("/nowhere/a", b"")
        assert zk.get_children("/executors/shop") == ["a"]
        seq = zk.create("/executors/job-", b"", sequence=True)
        assert seq.startswith("/executors/job-") and len(seq) == len("/executors/job-") + 10
        zk.delete("/executors/shop/a")
        assert zk.exists("/executors/shop/a") is None
    finally:
        zk.stop()
        zk.close()
    assert ("/taskring/executors/shop/a", b'{"address": "h:1"}') in running.changes
    assert ("/taskring/executors/shop/a", b"x") in running.changes
    assert running.changes[-1] == ("/taskring/executors/shop/a", None)


def test_watches_fire_once_for_creation_change_and_children(running: Running):
    zk = running.client()
    events: list[tuple[str, str]] = []
    try:
        zk.exists("/a", watch=lambda e: events.append((e.type, e.path)))
        zk.create("/a", b"1")
        zk.get("/a", watch=lambda e: events.append((e.type, e.path)))
        zk.get_children("/a", watch=lambda e: events.append((e.type, e.path)))
        zk.set("/a", b"2")
        zk.set("/a", b"3")   # the data watch was used up: no second CHANGED
        zk.create("/a/b", b"")
        wait_until(lambda: len(events) >= 3, 5, "three watch events")
        assert events == [("CREATED", "/a"), ("CHANGED", "/a"), ("CHILD", "/a")]
    finally:
        zk.stop()
        zk.close()


def test_an_ephemeral_goes_when_its_session_closes(running: Running):
    zk = running.client()
    zk.create("/e", b"", ephemeral=True)
    zk.create("/p", b"")
    zk.stop()
    zk.close()
    assert running.front.data("/e") is None and running.front.data("/p") == b""
    assert ("/e", None) in running.changes


def _handshake(port: int, timeout_ms: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    body = struct.pack("!iqiq", 0, 0, timeout_ms, 0) + struct.pack("!i", 16) + bytes(16) + b"\0"
    sock.sendall(struct.pack("!i", len(body)) + body)
    _read_frame(sock)
    return sock


def _read_frame(sock: socket.socket) -> bytes:
    length = struct.unpack("!i", _exactly(sock, 4))[0]
    return _exactly(sock, length)


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _create_ephemeral(sock: socket.socket, path: str) -> int:
    raw = path.encode()
    body = struct.pack("!ii", 1, 1) + struct.pack("!i", len(raw)) + raw + struct.pack("!i", 0) \
        + struct.pack("!i", 0) + struct.pack("!i", 1)
    sock.sendall(struct.pack("!i", len(body)) + body)
    _xid, _zxid, err = struct.unpack_from("!iqi", _read_frame(sock))
    return err


def test_an_ephemeral_goes_when_its_connection_has_been_gone_for_its_timeout(running: Running):
    sock = _handshake(running.port, timeout_ms=200)
    assert _create_ephemeral(sock, "/lost") == 0
    sock.close()   # no close request: the session lives on for its timeout, then ends
    assert running.front.data("/lost") == b""
    wait_until(lambda: running.front.data("/lost") is None, 5, "the lost session's ephemeral to go")


def test_a_broken_frame_closes_its_connection_only(running: Running):
    zk = running.client()
    try:
        bad = socket.create_connection(("127.0.0.1", running.port), timeout=5)
        bad.sendall(struct.pack("!i", 1 << 30))   # a frame far over ZooKeeper's limit
        assert bad.recv(16) == b""                 # closed
        bad.close()
        zk.create("/still", b"ok")
        assert zk.get("/still")[0] == b"ok"
    finally:
        zk.stop()
        zk.close()


def test_an_operation_it_does_not_serve_is_answered_unimplemented(running: Running):
    sock = _handshake(running.port, timeout_ms=10_000)
    try:
        body = struct.pack("!ii", 5, 14)   # multi
        sock.sendall(struct.pack("!i", len(body)) + body)
        xid, _zxid, err = struct.unpack_from("!iqi", _read_frame(sock))
        assert (xid, err) == (5, -6)
    finally:
        sock.close()
