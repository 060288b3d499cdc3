"""ZooKeeperFront: enough of ZooKeeper's wire protocol, served from memory, for executors to register.

`taskring dev` runs without a ZooKeeper server, yet the executors of every SDK register the way
they do in production: a ZooKeeper client (kazoo, go-zookeeper, Curator, node-zookeeper-client)
connects, makes the parents of its znode, creates it ephemeral, reads and replaces it, deletes it
on stop. This module answers those calls from a znode tree in memory and tells `on_change` of
every znode created, changed or removed (the dev node turns executor znodes into entries of its
in-memory executor directory).

What it serves (ZooKeeper's jute encoding, one length-prefixed frame per message): connect and
reconnect of a session, ping, create / create2 / createContainer (persistent, ephemeral,
sequential), delete, exists, getData, setData, getChildren / getChildren2, sync, one-shot watches
of data, existence and children, setWatches (acknowledged), auth (accepted: no ACLs are kept),
close. A session ends, and its ephemerals go, when it closes, or when its connection has been gone
for its timeout. Anything else is answered UNIMPLEMENTED, as a real server answers an unknown op.
What it is not: a ZooKeeper. One process's memory, no quorum, no ACLs, no quotas, no
persistence; for one developer's machine.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import os
import struct
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# Op codes (ZooDefs.OpCode) and error codes (KeeperException.Code) this front answers with.
CREATE, DELETE, EXISTS, GET_DATA, SET_DATA, GET_CHILDREN, SYNC, PING = 1, 2, 3, 4, 5, 8, 9, 11
GET_CHILDREN2, CREATE2, CREATE_CONTAINER, AUTH, SET_WATCHES, SET_WATCHES2, CLOSE = 12, 15, 19, 100, 101, 105, -11
OK, UNIMPLEMENTED, BAD_ARGUMENTS = 0, -6, -8
NO_NODE, BAD_VERSION, NO_CHILDREN_FOR_EPHEMERALS, NODE_EXISTS, NOT_EMPTY = -101, -103, -108, -110, -111
EPHEMERAL, SEQUENTIAL = 1, 2
NODE_CREATED, NODE_DELETED, NODE_DATA_CHANGED, NODE_CHILDREN_CHANGED = 1, 2, 3, 4
SYNC_CONNECTED = 3
WATCH_XID, PING_XID, AUTH_XID = -1, -2, -4

_INT, _LONG, _REPLY, _STAT = struct.Struct("!i"), struct.Struct("!q"), struct.Struct("!iqi"), \
    struct.Struct("!qqqqiiiqiiq")
MIN_TIMEOUT_MS, MAX_TIMEOUT_MS = 4_000, 40_000
"""A session's timeout is held to these, as a server with a 2 s tick holds it (2 to 20 ticks)."""
MAX_FRAME = 1 << 20
"""ZooKeeper's jute.maxbuffer default: a larger frame is a broken client."""

Changed = Callable[[str, bytes | None], None]
"""(path, data): a znode was created or changed (data) or removed (None)."""


class ProtocolError(Exception):
    """A frame this front cannot read: the connection is closed."""


@dataclasses.dataclass
class Znode:
    data: bytes
    owner: int            # the session of an ephemeral, else 0
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int = 0
    cversion: int = 0
    pzxid: int = 0
    children: set[str] = dataclasses.field(default_factory=set)

    def stat(self) -> bytes:
        return _STAT.pack(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
                          self.owner, len(self.data), len(self.children), self.pzxid or self.czxid)


@dataclasses.dataclass
class Session:
    session_id: int
    password: bytes
    timeout_ms: int
    writer: asyncio.StreamWriter | None = None
    gone_since: float | None = None


class Reader:
    """Reads one frame's jute fields in order."""

    def __init__(self, frame: bytes):
        self._frame = frame
        self._at = 0

    def int32(self) -> int:
        return self._unpack(_INT)

    def int64(self) -> int:
        return self._unpack(_LONG)

    def boolean(self) -> bool:
        if self._at >= len(self._frame):
            raise ProtocolError("frame ends before a boolean")
        self._at += 1
        return self._frame[self._at - 1] != 0

    def buffer(self) -> bytes:
        length = self.int32()
        if length < 0:
            return b""
        if self._at + length > len(self._frame):
            raise ProtocolError("frame ends inside a buffer")
        self._at += length
        return self._frame[self._at - length:self._at]

    def string(self) -> str:
        try:
            return self.buffer().decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError("a string is not UTF-8") from exc

    def has_more(self) -> bool:
        return self._at < len(self._frame)

    def _unpack(self, layout: struct.Struct) -> int:
        if self._at + layout.size > len(self._frame):
            raise ProtocolError("frame ends before a number")
        value = layout.unpack_from(self._frame, self._at)[0]
        self._at += layout.size
        return value


def _string(text: str) -> bytes:
    raw = text.encode()
    return _INT.pack(len(raw)) + raw


def _buffer(raw: bytes) -> bytes:
    return _INT.pack(len(raw)) + raw


class ZooKeeperFront:
    """A ZooKeeper endpoint on `host:port` (0: any free port) answering from memory.
    Start and stop on one event loop."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, on_change: Changed | None = None,
                 sweep_interval_s: float = 0.5, min_session_timeout_ms: int = MIN_TIMEOUT_MS):
        self._host = host
        self._min_timeout_ms = min_session_timeout_ms
        self._port = port
        self._on_change = on_change or (lambda path, data: None)
        self._sweep_interval_s = sweep_interval_s
        self._zxid = itertools.count(1)
        self._last_zxid = 0
        now = _now_ms()
        self._nodes: dict[str, Znode] = {"/": Znode(b"", 0, 0, 0, now, now)}
        self._sessions: dict[int, Session] = {}
        self._session_ids = itertools.count((int.from_bytes(os.urandom(2), "big") << 40) + 1)
        # One-shot watches: path -> the sessions to tell.
        self._data_watches: dict[str, set[int]] = {}
        self._child_watches: dict[str, set[int]] = {}
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task | None = None
        self.port: int | None = None

    # ---- lifecycle ----

    async def start(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._serve, self._host, self._port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._sweeper = asyncio.ensure_future(self._sweep())

    async def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for session in list(self._sessions.values()):
            if session.writer is not None:
                session.writer.close()
            self._end_session(session.session_id)
        await server.wait_closed()

    def make_path(self, path: str) -> None:
        """Make `path` and its parents, persistent (what `ensure_path` would), before clients come."""
        parts = [p for p in path.split("/") if p]
        owner = Session(0, b"", 0)
        for i in range(1, len(parts) + 1):
            at = "/" + "/".join(parts[:i])
            if at not in self._nodes:
                err, _ = self._create(owner, at, b"", 0)
                if err != OK:
                    raise ValueError(f"path: cannot make {at!r} (error {err})")

    # ---- what the dev node reads ----

    def children(self, path: str) -> list[str]:
        node = self._nodes.get(path)
        return sorted(node.children) if node is not None else []

    def data(self, path: str) -> bytes | None:
        node = self._nodes.get(path)
        return node.data if node is not None else None

    # ---- connections ----

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session: Session | None = None
        try:
            session = self._connect(Reader(await _read_frame(reader)), writer)
            if session is None:
                return
            while True:
                frame = Reader(await _read_frame(reader))
                xid, op = frame.int32(), frame.int32()
                if op == CLOSE:
                    self._end_session(session.session_id)
                    self._reply(writer, xid, OK)
                    await writer.drain()
                    return
                err, body = self._answer(session, op, frame)
                self._reply(writer, xid, err, body)
        except (asyncio.IncompleteReadError, ConnectionError, ProtocolError) as exc:
            if isinstance(exc, ProtocolError):
                log.warning("zookeeper front: closing a connection: %s", exc)
        finally:
            if session is not None and session.writer is writer:
                session.writer, session.gone_since = None, time.monotonic()
            writer.close()

    def _connect(self, frame: Reader, writer: asyncio.StreamWriter) -> Session | None:
        frame.int32()   # protocol version
        frame.int64()  # last zxid seen
        timeout_ms = min(max(frame.int32(), self._min_timeout_ms), MAX_TIMEOUT_MS)
        session_id, password = frame.int64(), frame.buffer()
        if session_id:
            session = self._sessions.get(session_id)
            if session is None or session.password != password:
                # Expired (or never ours): timeout 0 is how a server tells a client its session is gone.
                writer.write(_frame(_INT.pack(0) + _INT.pack(0) + _LONG.pack(0) + _buffer(bytes(16)) + b"\0"))
                return None
            if session.writer is not None:
                session.writer.close()
        else:
            session = Session(next(self._session_ids), os.urandom(16), timeout_ms)
            self._sessions[session.session_id] = session
        session.writer, session.gone_since = writer, None
        writer.write(_frame(_INT.pack(0) + _INT.pack(session.timeout_ms) + _LONG.pack(session.session_id)
                            + _buffer(session.password) + b"\0"))
        return session

    def _reply(self, writer: asyncio.StreamWriter, xid: int, err: int, body: bytes = b"") -> None:
        writer.write(_frame(_REPLY.pack(xid, self._last_zxid, err) + (body if err == OK else b"")))

    # ---- requests ----

    def _answer(self, session: Session, op: int, frame: Reader) -> tuple[int, bytes]:
        if op == PING or op == AUTH or op == SET_WATCHES or op == SET_WATCHES2:
            # Auth: accepted, no ACLs are kept. Watches set again after a reconnect: acknowledged;
            # what changed while away is read again by the client (the registering SDKs do).
            return OK, b""
        if op in (CREATE, CREATE2, CREATE_CONTAINER):
            path, data = frame.string(), frame.buffer()
            for _ in range(frame.int32()):   # the ACLs: read and not kept
                frame.int32()
                frame.string()
                frame.string()
            err, created = self._create(session, path, data, frame.int32())
            if err != OK:
                return err, b""
            return OK, _string(created) + (self._nodes[created].stat() if op != CREATE else b"")
        if op == DELETE:
            return self._delete(frame.string(), frame.int32()), b""
        if op in (EXISTS, GET_DATA, GET_CHILDREN, GET_CHILDREN2):
            path, watch = frame.string(), frame.boolean()
            return self._read(session, op, path, watch)
        if op == SET_DATA:
            return self._set(frame.string(), frame.buffer(), frame.int32())
        if op == SYNC:
            return OK, _string(frame.string())
        return UNIMPLEMENTED, b""

    def _read(self, session: Session, op: int, path: str, watch: bool) -> tuple[int, bytes]:
        node = self._nodes.get(path)
        if watch and (node is not None or op == EXISTS):
            watches = self._child_watches if op in (GET_CHILDREN, GET_CHILDREN2) else self._data_watches
            watches.setdefault(path, set()).add(session.session_id)
        if node is None:
            return NO_NODE, b""
        if op == EXISTS:
            return OK, node.stat()
        if op == GET_DATA:
            return OK, _buffer(node.data) + node.stat()
        names = sorted(node.children)
        body = _INT.pack(len(names)) + b"".join(_string(n) for n in names)
        return OK, body + (node.stat() if op == GET_CHILDREN2 else b"")

    def _create(self, session: Session, path: str, data: bytes, flags: int) -> tuple[int, str]:
        parent_path = _parent(path)
        if not path.startswith("/") or path.endswith("/") and path != "/" or parent_path is None:
            return BAD_ARGUMENTS, ""
        parent = self._nodes.get(parent_path)
        if parent is None:
            return NO_NODE, ""
        if parent.owner:
            return NO_CHILDREN_FOR_EPHEMERALS, ""
        if flags & SEQUENTIAL:
            path = f"{path}{parent.cversion:010d}"
        if path in self._nodes:
            return NODE_EXISTS, ""
        zxid, now = self._next_zxid(), _now_ms()
        self._nodes[path] = Znode(data, session.session_id if flags & EPHEMERAL else 0, zxid, zxid, now, now)
        parent.children.add(path.rsplit("/", 1)[1])
        parent.cversion += 1
        parent.pzxid = zxid
        self._fire(self._data_watches, path, NODE_CREATED)
        self._fire(self._child_watches, parent_path, NODE_CHILDREN_CHANGED)
        self._on_change(path, data)
        return OK, path

    def _delete(self, path: str, version: int) -> int:
        node = self._nodes.get(path)
        if node is None or path == "/":
            return NO_NODE if node is None else BAD_ARGUMENTS
        if version != -1 and version != node.version:
            return BAD_VERSION
        if node.children:
            return NOT_EMPTY
        self._remove(path)
        return OK

    def _set(self, path: str, data: bytes, version: int) -> tuple[int, bytes]:
        node = self._nodes.get(path)
        if node is None:
            return NO_NODE, b""
        if version != -1 and version != node.version:
            return BAD_VERSION, b""
        node.data, node.version, node.mzxid, node.mtime = data, node.version + 1, self._next_zxid(), _now_ms()
        self._fire(self._data_watches, path, NODE_DATA_CHANGED)
        self._on_change(path, data)
        return OK, node.stat()

    def _remove(self, path: str) -> None:
        del self._nodes[path]
        parent_path = _parent(path)
        assert parent_path is not None
        parent = self._nodes[parent_path]
        parent.children.discard(path.rsplit("/", 1)[1])
        parent.cversion += 1
        parent.pzxid = self._next_zxid()
        self._fire(self._data_watches, path, NODE_DELETED)
        self._fire(self._child_watches, path, NODE_DELETED)
        self._fire(self._child_watches, parent_path, NODE_CHILDREN_CHANGED)
        self._on_change(path, None)

    # ---- sessions and watches ----

    def _end_session(self, session_id: int) -> None:
        if self._sessions.pop(session_id, None) is None:
            return
        for path in sorted((p for p, n in self._nodes.items() if n.owner == session_id), reverse=True):
            self._remove(path)
        for watches in (self._data_watches, self._child_watches):
            for sessions in watches.values():
                sessions.discard(session_id)

    async def _sweep(self) -> None:
        """End the sessions whose connection has been gone for longer than their timeout."""
        while True:
            await asyncio.sleep(self._sweep_interval_s)
            now = time.monotonic()
            for session in list(self._sessions.values()):
                if session.gone_since is not None and now - session.gone_since > session.timeout_ms / 1000:
                    log.info("zookeeper front: session 0x%x expired", session.session_id)
                    self._end_session(session.session_id)

    def _fire(self, watches: dict[str, set[int]], path: str, event: int) -> None:
        for session_id in watches.pop(path, ()):
            session = self._sessions.get(session_id)
            if session is not None and session.writer is not None:
                body = _INT.pack(event) + _INT.pack(SYNC_CONNECTED) + _string(path)
                session.writer.write(_frame(_REPLY.pack(WATCH_XID, -1, OK) + body))

    def _next_zxid(self) -> int:
        self._last_zxid = next(self._zxid)
        return self._last_zxid


def _parent(path: str) -> str | None:
    if path == "/" or not path.startswith("/"):
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _frame(payload: bytes) -> bytes:
    return _INT.pack(len(payload)) + payload


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    length = _INT.unpack(await reader.readexactly(4))[0]
    if not 0 <= length <= MAX_FRAME:
        raise ProtocolError(f"a frame of {length} bytes")
    return await reader.readexactly(length)


def _now_ms() -> int:
    return int(time.time() * 1000)
