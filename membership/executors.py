"""ExecutorDirectory: the live executors of each namespace, for the dispatch hot path.

Executors (the SDK inside business services) register ephemeral znodes at
/executors/<namespace>/<instance_id> with JSON data:

    {"address": "host:port", "namespace": "...", "task_types": ["..."],
     "max_in_flight": N, "pid": ...}

A dispatcher node needs only the namespaces it dispatches for, so each namespace
is watched lazily, the first time instances() is asked about it, and from then on
kept current by a ChildrenCache (children.py). instances() on a watched namespace
is one dict lookup returning a cached tuple: no lock, no I/O, no allocation.

The first call for a namespace blocks until its first load (bounded by wait_s,
by default the session's connect_timeout_s; after that it returns an empty tuple
and the watch keeps trying). A znode whose data is not a valid advertisement is left out with a
warning: one misconfigured executor must not take a namespace down.
"""
from __future__ import annotations

import json
import logging
import threading

from .children import ChildrenCache
from .dispatch import Fanout, Mailbox
from .errors import NotStarted
from .interface import ExecutorInstance, ExecutorsListener, SessionEvent, SessionState
from .paths import EXECUTORS_ROOT, check_segment, namespace_path
from .session import ZkSession

log = logging.getLogger(__name__)

_EMPTY: tuple[ExecutorInstance, ...] = ()


def parse_executor(namespace: str, instance_id: str, data: bytes) -> ExecutorInstance | None:
    """The ExecutorInstance advertised in data, or None (logged) if it is malformed."""
    where = f"{EXECUTORS_ROOT}/{namespace}/{instance_id}"
    try:
        doc = json.loads(data)
    except ValueError:
        log.warning("%s: data is not JSON; leaving this executor out", where)
        return None
    if not isinstance(doc, dict):
        log.warning("%s: data is not a JSON object; leaving this executor out", where)
        return None
    address = doc.get("address")
    if not isinstance(address, str) or not _is_host_port(address):
        log.warning("%s: address %r is not host:port; leaving this executor out", where, address)
        return None
    if doc.get("namespace", namespace) != namespace:
        log.warning("%s: advertises namespace %r; leaving this executor out", where, doc.get("namespace"))
        return None
    task_types = doc.get("task_types")
    if not isinstance(task_types, list) or not all(isinstance(t, str) and t for t in task_types):
        log.warning("%s: task_types %r is not a list of names; leaving this executor out", where, task_types)
        return None
    max_in_flight = doc.get("max_in_flight")
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        log.warning("%s: max_in_flight %r is not a positive int; leaving this executor out", where, max_in_flight)
        return None
    return ExecutorInstance(instance_id, address, tuple(task_types), max_in_flight)


def _is_host_port(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


class ExecutorDirectory:
    """Lazily watched /executors/<namespace>, one cached tuple per namespace."""

    def __init__(self, session: ZkSession):
        self._session = session
        self._lock = threading.Lock()
        self._lifecycle = "new"  # new | running | stopped
        # namespace -> sorted tuple; read without the lock on the hot path.
        self._instances: dict[str, tuple[ExecutorInstance, ...]] = {}
        self._caches: dict[str, ChildrenCache[ExecutorInstance]] = {}
        self._worker = Mailbox("taskring-executors")
        self._fanout = Fanout("taskring-executors-listener")

    def start(self) -> None:
        with self._lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("ExecutorDirectory cannot be restarted after stop(); create a new one")
            if self._session.state is SessionState.STOPPED:
                raise NotStarted("ExecutorDirectory.start: start the ZkSession first")
            self._worker.start()
            self._fanout.start()
            self._session.add_listener(self._on_session_event)
            self._lifecycle = "running"

    def stop(self) -> None:
        with self._lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopped"
            caches = list(self._caches.values())
        self._session.remove_listener(self._on_session_event)
        for cache in caches:
            cache.stop()
        self._worker.stop()
        self._fanout.stop()

    def instances(self, namespace: str, *, wait_s: float | None = None) -> tuple[ExecutorInstance, ...]:
        """Live executors of namespace, sorted by instance_id.

        The first call for a namespace starts watching it and waits for the first
        load, up to wait_s (default: the session's connect_timeout_s). An asyncio
        caller should pass wait_s=0 (it then gets () until the load lands, and
        listeners hear about it) or warm the namespace up in a thread.
        """
        found = self._instances.get(namespace)
        if found is not None:
            return found
        return self._first_lookup(namespace, self._session.connect_timeout_s if wait_s is None else wait_s)

    def known(self) -> dict[str, tuple[ExecutorInstance, ...]]:
        """Every watched namespace's live executors, as instances() would answer now (for
        metrics). The copy is one C-level step under the GIL, safe against the worker's swaps."""
        return dict(self._instances)

    def add_listener(self, callback: ExecutorsListener) -> None:
        """callback(namespace, instances) on a thread of its own whenever a watched
        namespace changes (and on its first load)."""
        self._fanout.add(callback)

    # -- internals -------------------------------------------------------------

    def _first_lookup(self, namespace: str, wait_s: float) -> tuple[ExecutorInstance, ...]:
        check_segment("namespace", namespace)
        with self._lock:
            if self._lifecycle != "running":
                raise NotStarted("ExecutorDirectory.instances: call start() first")
            cache = self._caches.get(namespace)
            if cache is None:
                cache = ChildrenCache(
                    self._session.client, namespace_path(namespace),
                    parse=lambda instance_id, data: parse_executor(namespace, instance_id, data),
                    on_change=lambda snapshot: self._publish(namespace, snapshot),
                    worker=self._worker, read_timeout_s=self._session.connect_timeout_s,
                )
                self._caches[namespace] = cache
                cache.start()
        if not cache.loaded.wait(wait_s) and wait_s > 0:
            log.warning("executors of namespace %r not loaded within %.1fs; none for now",
                        namespace, wait_s)
        # If it still has not loaded, answer "none" from now on without waiting;
        # the watch fills it in when ZooKeeper answers.
        return self._instances.setdefault(namespace, _EMPTY)

    def _publish(self, namespace: str, snapshot: dict[str, ExecutorInstance]) -> None:
        """On the worker thread: swap in the new tuple, then tell listeners."""
        instances = tuple(snapshot[k] for k in sorted(snapshot))
        self._instances[namespace] = instances
        self._fanout.publish(namespace, instances)

    def _on_session_event(self, event: SessionEvent) -> None:
        if event.new_state is not SessionState.CONNECTED:
            return
        with self._lock:
            caches = list(self._caches.values())
        for cache in caches:
            cache.refresh_soon()
