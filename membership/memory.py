"""In-memory twins of ZkSession, NodeRegistry and ExecutorDirectory, for unit tests of logic.

Same public surface and the same threading contract as the real ones (listeners
run on threads of their own, through the same Fanout), so code tested against a
twin does not meet new threads in production. Session states follow the same
rules (transitions.py). Tests drive the twins instead of a server:

    hub = MemoryMembership()
    a, b = MemorySession(), MemorySession()
    ...
    a.suspend(); a.flush()        # connection dropped: a's view freezes, others still see a
    a.expire();  a.flush()        # server expired a: a leaves, a sees LOST, a new session, a rejoins

flush() waits until every listener has handled every event so far, so a test can
assert right after it without sleeping.

What the twins model: ephemerals vanish when their session expires or stops (not
when it is merely suspended); a suspended node's member list freezes and catches
up on reconnect; a new session re-registers. What they do not: server-side
timers (nothing expires by itself: call expire()), retries, data changes of a
znode, a stale ephemeral of another process holding our node_id while it expires
(MemoryNodeRegistry raises DuplicateNodeId at once instead of waiting).
"""
from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable

from .dispatch import Fanout, Mailbox
from .errors import DuplicateNodeId, NotStarted
from .interface import (
    ExecutorInstance,
    ExecutorsListener,
    MembersListener,
    SessionEvent,
    SessionListener,
    SessionState,
)
from .nodes import encode_info
from .paths import check_segment
from .transitions import KAZOO_CONNECTED, KAZOO_LOST, KAZOO_SUSPENDED, SessionTracker


class MemorySession:
    """A ZooKeeper session you drive by hand: suspend(), resume(), expire()."""

    def __init__(self, *, session_timeout_ms: int = 6000, clock: Callable[[], float] = time.monotonic):
        self.session_timeout_ms = session_timeout_ms
        self.requested_session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = 1.0
        self._clock = clock
        self._lock = threading.Condition()
        self._tracker = SessionTracker()
        self._ids = itertools.count(random.getrandbits(40) << 16)
        self._current_id: int | None = None
        self._fanout = Fanout("memory-session-listener")
        self._lifecycle = "new"
        # Called (synchronously, before LOST is announced) when the session ends:
        # the twin of the server deleting the session's ephemerals.
        self._on_end: list[Callable[[int], None]] = []

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("MemorySession cannot be restarted after stop(); create a new one")
            self._lifecycle = "running"
            self._fanout.start()
            self._current_id = next(self._ids)
            self._report(KAZOO_CONNECTED)

    def stop(self) -> None:
        with self._lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopped"
            ended, self._current_id = self._current_id, None
        if ended is not None:
            self._end_session(ended)
        with self._lock:
            event = self._tracker.stop(self._clock())
            if event is not None:
                self._fanout.publish(event)
            self._lock.notify_all()
        self._fanout.stop()

    # -- driving it ----------------------------------------------------------------

    def suspend(self) -> None:
        """The connection drops; the session lives on (its ephemerals stay)."""
        with self._lock:
            self._require_running()
            self._report(KAZOO_SUSPENDED)

    def resume(self) -> None:
        """Reconnect: the same session if it was only suspended, a new one after LOST."""
        with self._lock:
            self._require_running()
            if self._current_id is None:
                self._current_id = next(self._ids)
            self._report(KAZOO_CONNECTED)

    def expire(self, *, reconnect: bool = True) -> None:
        """The server expires the session; like kazoo we see SUSPENDED (if we were
        connected), then LOST, then (reconnect=True) a new session."""
        with self._lock:
            self._require_running()
            self._report(KAZOO_SUSPENDED)
            ended, self._current_id = self._current_id, None
        if ended is not None:
            self._end_session(ended)
        with self._lock:
            self._report(KAZOO_LOST)
            if reconnect:
                self._current_id = next(self._ids)
                self._report(KAZOO_CONNECTED)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every listener has handled every event so far."""
        return self._fanout.flush(timeout_s)

    # -- the ZkSession surface ----------------------------------------------------

    def lease_remaining_s(self) -> float:
        """The twin has no probe: its lease is whole while CONNECTED and gone otherwise."""
        with self._lock:
            connected = self._tracker.state is SessionState.CONNECTED
        return self.session_timeout_ms / 1000.0 if connected else 0.0

    def has_lease(self) -> bool:
        return self.lease_remaining_s() > 0.0

    @property
    def state(self) -> SessionState:
        with self._lock:
            return self._tracker.state

    @property
    def session_id(self) -> int | None:
        with self._lock:
            return self._tracker.session_id

    @property
    def session_generation(self) -> int:
        with self._lock:
            return self._tracker.generation

    @property
    def suspended_since(self) -> float | None:
        with self._lock:
            return self._tracker.suspended_since

    def suspended_for_s(self) -> float:
        with self._lock:
            return self._tracker.suspended_for_s(self._clock())

    @property
    def negotiated_session_timeout_ms(self) -> int | None:
        return self.session_timeout_ms if self._lifecycle == "running" else None

    @property
    def client(self):
        raise NotStarted("MemorySession has no ZooKeeper client; recipes need a real ZkSession")

    def wait_connected(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._tracker.state is not SessionState.CONNECTED:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    def add_listener(self, callback: SessionListener) -> None:
        self._fanout.add(callback)

    def remove_listener(self, callback: SessionListener) -> None:
        self._fanout.remove(callback)

    # -- internals -------------------------------------------------------------

    def _require_running(self) -> None:
        if self._lifecycle != "running":
            raise NotStarted("MemorySession: call start() first")

    def _report(self, kazoo_state: str) -> None:
        event = self._tracker.observe(kazoo_state, self._current_id, self._clock())
        if event is not None:
            self._fanout.publish(event)
            self._lock.notify_all()

    def _end_session(self, session_id: int) -> None:
        for callback in list(self._on_end):
            callback(session_id)


class MemoryMembership:
    """The shared 'server' of MemoryNodeRegistry instances: several nodes in one
    process see each other through one hub."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: dict[str, tuple[dict, int]] = {}  # node_id -> (info, owner session id)
        self._watchers: list[Callable[[], None]] = []

    def members(self) -> dict[str, dict]:
        """The server's truth (what a connected node would see)."""
        with self._lock:
            return {node_id: dict(info) for node_id, (info, _owner) in self._members.items()}

    def _register(self, node_id: str, info: dict, owner: int) -> None:
        with self._lock:
            held = self._members.get(node_id)
            if held is not None and held[1] != owner:
                raise DuplicateNodeId(node_id, held[1], 0.0)
            self._members[node_id] = (dict(info), owner)
        self._notify()

    def _deregister(self, node_id: str, owner: int) -> None:
        with self._lock:
            held = self._members.get(node_id)
            if held is None or held[1] != owner:
                return
            del self._members[node_id]
        self._notify()

    def _watch(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._watchers.append(callback)

    def _unwatch(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._watchers = [w for w in self._watchers if w != callback]

    def _notify(self) -> None:
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher()


class MemoryNodeRegistry:
    """Twin of NodeRegistry on a MemoryMembership hub.

    Like the real one, hub changes are applied on a worker thread of its own (the
    twin of kazoo's watch hand-off), so registries never call each other under a lock.
    """

    def __init__(self, session: MemorySession, node_id: str, info: dict, *, hub: MemoryMembership):
        self.node_id = check_segment("node_id", node_id)
        encode_info(info)  # same validation as the real one
        self._info = dict(info)
        self._session = session
        self._hub = hub
        self._lifecycle_lock = threading.Lock()
        self._lifecycle = "new"
        self._register_lock = threading.Lock()
        self._registered_generation = 0
        self._registered_owner: int | None = None
        self._view: dict[str, dict] = {}
        self._view_loaded = False
        self._worker = Mailbox(f"memory-nodes-{node_id}")
        self._fanout = Fanout(f"memory-members-{node_id}")

    def start(self) -> None:
        with self._lifecycle_lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("MemoryNodeRegistry cannot be restarted after stop(); create a new one")
            if self._session.state is SessionState.STOPPED:
                raise NotStarted("MemoryNodeRegistry.start: start the MemorySession first")
            self._worker.start()
            self._fanout.start()
            self._session.add_listener(self._on_session_event)
            self._session._on_end.append(self._on_session_end)
            try:
                self._register()
            except BaseException:
                self._session.remove_listener(self._on_session_event)
                self._session._on_end.remove(self._on_session_end)
                self._worker.stop()
                self._fanout.stop()
                self._lifecycle = "stopped"
                raise
            self._lifecycle = "running"
            self._hub._watch(self._on_hub_change)
            self._worker.submit(self._sync_view)
            self._worker.flush()  # members() is loaded when start() returns

    def stop(self) -> None:
        with self._lifecycle_lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopped"
        self._hub._unwatch(self._on_hub_change)
        self._session.remove_listener(self._on_session_event)
        if self._on_session_end in self._session._on_end:
            self._session._on_end.remove(self._on_session_end)
        with self._register_lock:
            owner = self._registered_owner
        if owner is not None:
            self._hub._deregister(self.node_id, owner)
        self._worker.stop()
        self._fanout.stop()

    def members(self) -> dict[str, dict]:
        view = self._view
        return {node_id: dict(info) for node_id, info in view.items()}

    def add_members_listener(self, callback: MembersListener) -> None:
        self._fanout.add(callback)

    @property
    def registered_generation(self) -> int:
        return self._registered_generation

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until the session's listeners, our worker and our listeners have
        handled everything so far."""
        return (self._session.flush(timeout_s) and self._worker.flush(timeout_s)
                and self._fanout.flush(timeout_s))

    # -- internals -------------------------------------------------------------

    def _register(self) -> None:
        with self._register_lock:
            generation = self._session.session_generation
            owner = self._session.session_id
            if owner is None or generation <= self._registered_generation:
                return
            self._hub._register(self.node_id, self._info, owner)
            self._registered_generation = generation
            self._registered_owner = owner

    def _on_session_end(self, session_id: int) -> None:
        # The server deletes the ended session's ephemerals (others see us leave).
        self._hub._deregister(self.node_id, session_id)

    def _on_session_event(self, event: SessionEvent) -> None:
        if self._lifecycle != "running" or event.new_state is not SessionState.CONNECTED:
            return
        self._register()
        self._worker.submit(self._sync_view)

    def _on_hub_change(self) -> None:
        self._worker.submit(self._sync_view)

    def _sync_view(self) -> None:
        """On the worker. Like a watch: applied only while connected, so a suspended
        node keeps its old view until it reconnects."""
        if self._lifecycle != "running" or self._session.state is not SessionState.CONNECTED:
            return
        view = self._hub.members()
        if view == self._view and self._view_loaded:
            return
        self._view = view
        self._view_loaded = True
        self._fanout.publish({node_id: dict(info) for node_id, info in view.items()})


class MemoryExecutorDirectory:
    """Twin of ExecutorDirectory; tests play the executors with register()/deregister()."""

    def __init__(self, session: MemorySession | None = None):
        self._session = session
        self._lock = threading.Lock()
        self._lifecycle = "new"
        self._registered: dict[str, dict[str, ExecutorInstance]] = {}
        self._instances: dict[str, tuple[ExecutorInstance, ...]] = {}  # watched namespaces only
        self._fanout = Fanout("memory-executors-listener")

    def start(self) -> None:
        with self._lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("MemoryExecutorDirectory cannot be restarted after stop(); create a new one")
            self._lifecycle = "running"
        self._fanout.start()

    def stop(self) -> None:
        with self._lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopped"
        self._fanout.stop()

    def instances(self, namespace: str, *, wait_s: float | None = None) -> tuple[ExecutorInstance, ...]:
        """Like ExecutorDirectory.instances (the first load is immediate here)."""
        found = self._instances.get(namespace)
        if found is not None:
            return found
        check_segment("namespace", namespace)
        with self._lock:
            if self._lifecycle != "running":
                raise NotStarted("MemoryExecutorDirectory.instances: call start() first")
            instances = self._sorted(namespace)
            self._instances[namespace] = instances
            self._fanout.publish(namespace, instances)  # the first load, as for the real one
            return instances

    def known(self) -> dict[str, tuple[ExecutorInstance, ...]]:
        """Like ExecutorDirectory.known: the watched namespaces' executors."""
        return dict(self._instances)

    def add_listener(self, callback: ExecutorsListener) -> None:
        self._fanout.add(callback)

    def flush(self, timeout_s: float = 5.0) -> bool:
        return self._fanout.flush(timeout_s)

    # -- the executors' side -------------------------------------------------------

    def register(self, namespace: str, instance: ExecutorInstance) -> None:
        """An executor appears (or re-advertises) under namespace."""
        check_segment("namespace", namespace)
        check_segment("instance_id", instance.instance_id)
        with self._lock:
            self._registered.setdefault(namespace, {})[instance.instance_id] = instance
            self._changed(namespace)

    def deregister(self, namespace: str, instance_id: str) -> None:
        """An executor goes away (its session ended); unknown ids are ignored."""
        with self._lock:
            if self._registered.get(namespace, {}).pop(instance_id, None) is not None:
                self._changed(namespace)

    def _sorted(self, namespace: str) -> tuple[ExecutorInstance, ...]:
        found = self._registered.get(namespace, {})
        return tuple(found[k] for k in sorted(found))

    def _changed(self, namespace: str) -> None:
        # Listeners hear only about watched namespaces, as with the real directory.
        if namespace in self._instances:
            self._instances[namespace] = self._sorted(namespace)
            self._fanout.publish(namespace, self._instances[namespace])
