"""NodeRegistry: register this dispatcher node, and see which nodes are alive.

Each node holds an ephemeral znode /nodes/<node_id> whose data is a JSON object
(its info: gRPC address, version, ...). The znode lives exactly as long as the
node's ZooKeeper session, so the set of children of /nodes is the set of live
nodes, and the ring (cluster/) is computed from it.

Registering is create-or-adopt, safe to repeat under client.retry:
- create the ephemeral; done.
- it exists and its ephemeralOwner is our session: a create whose reply we lost
  to a dropped connection, or a retry. Adopt it (rewrite the data if it differs).
- it exists and is owned by another session. We never delete it. Either it is a
  previous incarnation of this node (a crashed process, a pod restarted faster
  than the session timeout) and it will vanish by itself once the server expires
  that session; or a second live process is running with the same node_id, and
  deleting its znode would not stop it: both would then act as one ring member,
  and each would silently be missing from the other's view. So we wait for it to
  vanish, up to two session timeouts plus a second (a dead session is gone after
  one timeout plus a tick); if it is still there we raise DuplicateNodeId. A
  persistent znode in our place (ephemeralOwner 0) never vanishes: we say so at once.

Our own znode from an expired session of *this* process is never in the way:
the server deletes a session's ephemerals when it expires it, and processes that
close before it accepts any request of our new session.

After a new session (ZkSession generation + 1) the old znode is gone with the old
session; the session listener registers again. A registration that fails there
(an outage outlasting the retry deadline, a duplicate id) is logged and tried
again on the next reconnect. Nothing re-creates the znode if an operator deletes
it by hand while the session lives: restart the node, or expire its session.

members() is served from a ChildrenCache of /nodes (children.py). While the
session is SUSPENDED it is the last view we had, which may be stale: that is what
ZkSession.suspended_for_s() is for.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from kazoo.exceptions import NodeExistsError, NoNodeError

from .children import ChildrenCache
from .dispatch import Abandoned, Fanout, Mailbox, wait_result
from .errors import DuplicateNodeId, MembershipError, NotStarted, ZkUnavailable
from .interface import MembersListener, SessionEvent, SessionState
from .paths import NODES_ROOT, node_path
from .session import ZkSession

log = logging.getLogger(__name__)

_STOP_POLL_S = 0.25
_DEREGISTER_TIMEOUT_S = 2.0


def _never() -> bool:
    return False


def encode_info(info: dict) -> bytes:
    """The znode data for info; ValueError naming `info` if it is not a JSON object."""
    if not isinstance(info, dict):
        raise ValueError(f"info: must be a dict, got {type(info).__name__}")
    try:
        return json.dumps(info, sort_keys=True, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"info: not JSON-serializable: {exc}") from None


def parse_info(node_id: str, data: bytes) -> dict | None:
    try:
        info = json.loads(data or b"{}")
    except ValueError:
        log.warning("%s/%s: data is not JSON; leaving the node out", NODES_ROOT, node_id)
        return None
    if not isinstance(info, dict):
        log.warning("%s/%s: data is not a JSON object; leaving the node out", NODES_ROOT, node_id)
        return None
    return info


class NodeRegistry:
    """This node's ephemeral /nodes/<node_id>, and the live nodes as seen from here."""

    def __init__(self, session: ZkSession, node_id: str, info: dict):
        self.node_id = node_id
        self.path = node_path(node_id)  # validates node_id
        self._data = encode_info(info)  # validates info
        self._session = session
        self._lifecycle_lock = threading.Lock()
        self._lifecycle = "new"  # new | running | stopping | stopped
        self._register_lock = threading.Lock()
        self._registered_generation = 0
        self._stop_requested = threading.Event()
        self._worker = Mailbox(f"taskring-nodes-{node_id}")
        self._fanout = Fanout(f"taskring-members-{node_id}")
        self._cache: ChildrenCache[dict] | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Register (raises DuplicateNodeId, ZkUnavailable) and load the member list."""
        with self._lifecycle_lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("NodeRegistry cannot be restarted after stop(); create a new one")
            if self._session.state is SessionState.STOPPED:
                raise NotStarted("NodeRegistry.start: start the ZkSession first")
            client = self._session.client
            self._worker.start()
            self._fanout.start()
            # Listen before registering, so a new session during start() is not missed.
            self._session.add_listener(self._on_session_event)
            try:
                self._register()
            except BaseException:
                self._session.remove_listener(self._on_session_event)
                self._worker.stop()
                self._fanout.stop()
                self._lifecycle = "stopped"
                raise
            self._cache = ChildrenCache(
                client, NODES_ROOT, parse=parse_info, on_change=self._publish_members,
                worker=self._worker, read_timeout_s=self._session.connect_timeout_s,
            )
            self._cache.start()
            if not self._cache.loaded.wait(self._session.connect_timeout_s):
                log.warning("%s: member list not loaded within %.1fs; members() is empty until it is",
                            self.node_id, self._session.connect_timeout_s)
            self._lifecycle = "running"

    def stop(self) -> None:
        """Delete our znode (if our session still owns it) and stop watching."""
        with self._lifecycle_lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopping"
            self._stop_requested.set()
            self._session.remove_listener(self._on_session_event)
            with self._register_lock:  # waits for a registration in progress
                pass
            if self._cache is not None:
                self._cache.stop()
            self._deregister()
            self._worker.stop()
            self._fanout.stop()
            self._lifecycle = "stopped"

    # -- view ------------------------------------------------------------------

    def members(self) -> dict[str, dict]:
        """node_id -> info of every live node, this one included once registered."""
        if self._cache is None:
            return {}
        return {node_id: dict(info) for node_id, info in self._cache.snapshot().items()}

    def add_members_listener(self, callback: MembersListener) -> None:
        """callback(members) on a thread of its own, whenever the member list changes
        (and once after the first load). Not replayed: read members() after adding."""
        self._fanout.add(callback)

    def _publish_members(self, members: dict[str, dict]) -> None:
        # Each listener gets copies it may keep or change without touching the cache.
        self._fanout.publish({node_id: dict(info) for node_id, info in members.items()})

    @property
    def registered_generation(self) -> int:
        """The session generation our znode was last (re)created in; 0 if never."""
        return self._registered_generation

    # -- registration ----------------------------------------------------------

    def _on_session_event(self, event: SessionEvent) -> None:
        if self._stop_requested.is_set() or event.new_state is not SessionState.CONNECTED:
            return
        try:
            self._register()
        except MembershipError as exc:
            log.error("%s: could not register again after reconnect: %s", self.node_id, exc)
        if self._cache is not None:
            self._cache.refresh_soon()

    def _register(self) -> None:
        with self._register_lock:
            if self._stop_requested.is_set():
                return
            generation = self._session.session_generation
            if generation <= self._registered_generation:
                return
            client = self._session.client
            stale_deadline: list[float] = []  # shared by every retry of this registration
            try:
                client.retry(lambda: self._wait(client.ensure_path_async(NODES_ROOT)))
                client.retry(self._create_or_adopt, client, stale_deadline)
            except Abandoned:
                return  # stop() was called meanwhile
            except MembershipError:
                raise
            except Exception as exc:
                raise ZkUnavailable(self.path, exc) from exc
            if self._session.session_generation == generation:
                self._registered_generation = generation
                log.info("%s: registered at %s (session generation %d)", self.node_id, self.path, generation)
            # else: a newer session began meanwhile; its event registers again.

    def _wait(self, result):
        """Wait for a kazoo async result: bounded by the session timeout (an answer
        comes by then, or the connection is declared dropped), abandoned on stop()."""
        timeout_s = max(1.0, self._session.session_timeout_ms / 1000.0)
        return wait_result(result, timeout_s, self._stop_requested.is_set)

    def _create_or_adopt(self, client, stale_deadline: list[float]) -> None:
        """One attempt at registering; safe to repeat (see the module note)."""
        while True:
            try:
                self._wait(client.create_async(self.path, self._data, ephemeral=True))
                return
            except NodeExistsError:
                pass
            try:
                data, stat = self._wait(client.get_async(self.path))
            except NoNodeError:
                continue
            # ZkSession's id, not client.client_id: kazoo hides the latter whenever
            # the connection is down, and our own znode must never look foreign.
            if stat.ephemeralOwner == self._session.session_id:
                if data != self._data:
                    self._wait(client.set_async(self.path, self._data, version=stat.version))
                return
            if stat.ephemeralOwner == 0:
                raise MembershipError(
                    f"{self.path} exists as a persistent znode, so node {self.node_id!r} "
                    "cannot register; delete it by hand")
            self._wait_vanish(client, stat.ephemeralOwner, stale_deadline)

    def _wait_vanish(self, client, owner: int, stale_deadline: list[float]) -> None:
        wait_s = 2 * self._session.session_timeout_ms / 1000.0 + 1.0
        if not stale_deadline:
            stale_deadline.append(time.monotonic() + wait_s)
            log.warning("%s: %s is held by another session (0x%x); waiting up to %.1fs for it to expire",
                        self.node_id, self.path, owner, wait_s)
        gone = threading.Event()
        if self._wait(client.exists_async(self.path, watch=lambda _event: gone.set())) is None:
            return
        while not gone.is_set():
            remaining = stale_deadline[0] - time.monotonic()
            if remaining <= 0:
                raise DuplicateNodeId(self.node_id, owner, wait_s)
            if self._stop_requested.is_set():
                raise Abandoned()
            gone.wait(min(remaining, _STOP_POLL_S))

    def _deregister(self) -> None:
        """Delete our znode if our live session owns it. Best effort and bounded: if we
        cannot reach ZooKeeper now, the znode goes with the session anyway."""
        if self._session.state is not SessionState.CONNECTED:
            return
        client = self._session.client
        try:
            session_id = self._session.session_id
            _data, stat = wait_result(client.get_async(self.path), _DEREGISTER_TIMEOUT_S, _never)
            if session_id is not None and stat.ephemeralOwner == session_id:
                wait_result(client.delete_async(self.path, version=stat.version), _DEREGISTER_TIMEOUT_S, _never)
                log.info("%s: deregistered %s", self.node_id, self.path)
        except NoNodeError:
            pass
        except Exception as exc:
            log.warning("%s: could not delete %s (%r); it goes with the session", self.node_id, self.path, exc)
