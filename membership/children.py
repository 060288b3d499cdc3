"""ChildrenCache: a local copy of one znode's children and their data, kept current.

kazoo's ChildrenWatch tells us the *names* of the children, on kazoo's event
thread. We only note the latest list there and hand the reading of each child's
data to a Mailbox (our own thread), so a slow read never stalls kazoo. Reads are
pipelined (get_async for every child, then collect), so a refresh costs one round
trip, not one per child.

Consistency: a refresh is a snapshot of "the children as listed, each as read a
moment later". A child that vanishes between the list and its read is skipped
(a later watch event brings the list up to date). A read that fails because the
connection dropped keeps that child's previous value; the owner calls
refresh_soon() on every reconnect, which reads everything again, because kazoo's
ChildrenWatch stays silent after a reconnect when the list of names did not
change. Changes to a child's data alone (set() without delete/create) are not
watched: our znodes are written once per session, and a changed advertisement
comes with a new znode. If the watched znode itself is deleted, kazoo's
ChildrenWatch ends for good; nothing in taskring deletes these parents.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from .dispatch import Abandoned, Mailbox, wait_result

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChildrenCache(Generic[T]):
    """Mirror of path's children as {name: parse(name, data)}.

    parse returns None for a child to leave out (malformed data: parse logs why).
    on_change(snapshot) runs on the worker mailbox whenever the snapshot differs
    from the previous one, including the first load. `loaded` is set after the
    first refresh (complete or not), so a caller can wait for it with a timeout.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        parse: Callable[[str, bytes], T | None],
        on_change: Callable[[dict[str, T]], None],
        worker: Mailbox,
        read_timeout_s: float,
    ):
        self.path = path
        self.loaded = threading.Event()
        self._client = client
        self._parse = parse
        self._on_change = on_change
        self._worker = worker
        self._read_timeout_s = read_timeout_s
        self._lock = threading.Lock()
        self._latest: list[str] | None = None
        self._refresh_queued = False
        self._snapshot: dict[str, T] = {}
        self._watch: ChildrenWatch | None = None
        self._stopped = False
        self._published = False

    def start(self) -> None:
        """Ensure the path and begin watching it (on the worker thread)."""
        self._worker.submit(self._refresh)

    def refresh_soon(self) -> None:
        """Read every child again (after a reconnect), on the worker thread."""
        with self._lock:
            if self._refresh_queued or self._stopped:
                return
            self._refresh_queued = True
        self._worker.submit(self._refresh)

    def stop(self) -> None:
        """Stop reacting. kazoo drops the watch the next time it fires (it has no
        other way to cancel a ChildrenWatch)."""
        with self._lock:
            self._stopped = True

    def _is_stopped(self) -> bool:
        return self._stopped

    def snapshot(self) -> dict[str, T]:
        with self._lock:
            return dict(self._snapshot)

    # -- kazoo event thread -------------------------------------------------------

    def _on_children(self, children: list[str]) -> bool | None:
        with self._lock:
            if self._stopped:
                return False  # tells kazoo to drop this watch
            self._latest = list(children)
            if self._refresh_queued:
                return None
            self._refresh_queued = True
        self._worker.submit(self._refresh)
        return None

    # -- worker thread -------------------------------------------------------------

    def _ensure_watch(self) -> bool:
        if self._watch is not None:
            return True
        try:
            self._client.retry(lambda: wait_result(
                self._client.ensure_path_async(self.path), self._read_timeout_s, self._is_stopped))
            # Calls _on_children once, right here, with the current list.
            self._watch = ChildrenWatch(self._client, self.path, self._on_children)
        except Abandoned:
            return False
        except Exception as exc:  # retry exhausted, connection closed, ...
            log.warning("cannot watch %s yet (%r); will retry on reconnect", self.path, exc)
            self.loaded.set()  # nobody should wait on a cache that cannot load now
            return False
        return True

    def _refresh(self) -> None:
        with self._lock:
            self._refresh_queued = False
            stopped = self._stopped
        if stopped or not self._ensure_watch():
            return
        with self._lock:
            children = self._latest
            previous = self._snapshot
        if children is None:
            return
        pending = {}
        for name in children:
            try:
                pending[name] = self._client.get_async(f"{self.path}/{name}")
            except Exception as exc:
                pending[name] = exc
        fresh: dict[str, T] = {}
        for name, result in pending.items():
            try:
                if isinstance(result, Exception):
                    raise result
                data, _stat = wait_result(result, self._read_timeout_s, self._is_stopped)
            except NoNodeError:
                continue  # gone between list and read; the watch will tell us
            except Abandoned:
                return
            except Exception as exc:  # connection loss, timeout, closed client
                log.info("reading %s/%s failed (%r); keeping the previous value", self.path, name, exc)
                if name in previous:
                    fresh[name] = previous[name]
                continue
            value = self._parse(name, data)
            if value is not None:
                fresh[name] = value
        with self._lock:
            if self._stopped:
                return
            changed = fresh != self._snapshot or not self._published
            self._snapshot = fresh
            self._published = True
        if changed:
            self._on_change(dict(fresh))
        self.loaded.set()
