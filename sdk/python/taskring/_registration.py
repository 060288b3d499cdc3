"""Announce an executor to the dispatchers through ZooKeeper.

Design note.

The executor holds one ephemeral znode, ``/executors/<namespace>/<instance_id>``,
whose data is JSON: ``{"address", "namespace", "task_types", "max_in_flight",
"pid"}``. Dispatchers watch the children of ``/executors/<namespace>`` and send
only to the executors listed there. Its lifecycle follows the ZooKeeper session:

- CONNECTED (first or after a reconnect): make sure the znode exists and is ours.
  After a SUSPENDED spell with the same session it still is, and the check is
  a cheap no-op. After LOST, the old session's znode is gone and kazoo has
  reconnected with a new session, so it is created again: an executor that
  merely lost its session comes back by itself.
- The re-create runs on a kazoo worker (`handler.spawn`), never in the state
  listener, because the listener runs on kazoo's connection thread and blocking
  there would deadlock it.
- The create is safe to repeat, so it is retried through connection loss: if a
  znode exists that another session owns (a stale instance with the same id) it
  is replaced. Retries are bounded (start, stop) or interruptible by stop()
  (re-register), never kazoo's default of forever, so a ZooKeeper outage cannot
  hang start() or stop().
- `stop()` first clears `_active` (which interrupts a re-register in progress),
  then deletes the znode before the server stops, so dispatchers stop sending
  while in-flight work drains. The lock serialises create and delete, so a late
  re-create cannot bring the znode back.
- A chroot in the hosts string that does not exist yet is created first, with a
  second, plain connection: kazoo cannot create its own chroot.

kazoo's threads stay inside this module.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import InterruptedError as RetryInterrupted
from kazoo.retry import KazooRetry

log = logging.getLogger("taskring.executor")

EXECUTORS_ROOT = "/executors"


def znode_path(namespace: str, instance_id: str) -> str:
    """Where the executor `instance_id` of `namespace` announces itself."""
    return f"{EXECUTORS_ROOT}/{namespace}/{instance_id}"


def znode_data(
    *, address: str, namespace: str, task_types: Sequence[str], max_in_flight: int, pid: int | None = None
) -> bytes:
    """The JSON a dispatcher reads to decide where to send which tasks."""
    return json.dumps(
        {
            "address": address,
            "namespace": namespace,
            "task_types": sorted(task_types),
            "max_in_flight": max_in_flight,
            "pid": os.getpid() if pid is None else pid,
        },
        separators=(",", ":"),
    ).encode()


class Registration:
    """One ephemeral znode kept alive across ZooKeeper session losses."""

    def __init__(self, zk_hosts: str, path: str, data: bytes, *, session_timeout_s: float,
                 connect_timeout_s: float = 10.0) -> None:
        self._path = path
        self._zk_hosts = zk_hosts
        self._session_timeout_s = session_timeout_s
        self._data = data
        self._connect_timeout_s = connect_timeout_s
        self._client = KazooClient(hosts=zk_hosts, timeout=session_timeout_s)
        self._lock = threading.Lock()
        """Serialises create and delete of the znode; never held while waiting for a reconnect."""
        self._active = False
        """True between a successful start and stop; read without the lock to interrupt retries."""
        self._started = False

    @property
    def path(self) -> str:
        return self._path

    def start(self) -> None:
        """Connect, create the znode, and keep it across session losses."""
        with warnings.catch_warnings():  # a missing chroot is created just below
            warnings.filterwarnings("ignore", message="No chroot path exists")
            self._connect(self._client)
        self._started = True
        try:
            if self._client.chroot and not self._client.exists("/"):
                self._create_chroot()
            # Listen before creating, so a session lost in between is noticed too.
            self._client.add_listener(self._on_state)
            self._active = True
            with self._lock:
                self._retry(deadline_s=self._connect_timeout_s)(self._ensure_ours)
        except BaseException:
            self.stop()
            raise
        log.info("registered executor at %s", self._path)

    def stop(self) -> None:
        """Delete the znode and close the session. Safe before start and twice."""
        was_active, self._active = self._active, False  # first: interrupts a re-register in progress
        if not self._started:
            return
        self._started = False
        self._client.remove_listener(self._on_state)
        if was_active and self._client.connected:
            try:
                with self._lock:
                    self._retry(deadline_s=self._session_timeout_s, interruptible=False)(self._delete_ours)
            except Exception:  # the session ends below anyway, which removes the ephemeral node
                log.warning("could not delete %s; it goes with the session", self._path, exc_info=True)
        try:
            self._client.stop()
        finally:
            self._client.close()
        log.info("deregistered executor at %s", self._path)

    def _retry(self, *, deadline_s: float | None, interruptible: bool = True) -> KazooRetry:
        """Retries of one idempotent step, bounded by `deadline_s` and (when
        `interruptible`) cut short by stop().

        kazoo's own `client.retry` retries forever, which would let a ZooKeeper
        outage hang start() or stop().
        """
        return KazooRetry(max_tries=-1, delay=0.1, max_delay=2.0, deadline=deadline_s,
                          interrupt=(lambda: not self._active) if interruptible else None,
                          sleep_func=self._client.handler.sleep_func)

    def _connect(self, client: KazooClient) -> None:
        try:
            client.start(timeout=self._connect_timeout_s)
        except KazooTimeoutError as e:
            raise ConnectionError(f"cannot reach ZooKeeper at {self._zk_hosts} "
                                  f"within {self._connect_timeout_s} s") from e

    def _create_chroot(self) -> None:
        """kazoo cannot create its own chroot (everything it sends is under it): use a plain client."""
        plain = KazooClient(hosts=self._zk_hosts.split("/", 1)[0], timeout=self._session_timeout_s)
        self._connect(plain)
        try:
            plain.ensure_path(self._client.chroot)
        finally:
            plain.stop()
            plain.close()

    def _on_state(self, state: str) -> None:
        # On kazoo's connection thread: must not block (see the design note).
        if state == KazooState.CONNECTED:
            self._client.handler.spawn(self._reregister)
        elif state == KazooState.LOST:
            log.warning("ZooKeeper session lost; %s will be re-created on reconnect", self._path)
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended; dispatchers may stop seeing %s", self._path)

    def _reregister(self) -> None:
        """On a kazoo worker thread after (re)connecting: retry until done, or until stop()."""
        with self._lock:
            if not self._active:
                return
            try:
                self._retry(deadline_s=None)(self._ensure_ours)
            except RetryInterrupted:
                return  # stop() was called
            except Exception:
                log.exception("could not re-create %s; will try again on the next reconnect", self._path)

    def _owned_by_us(self, stat: ZnodeStat) -> bool:
        return bool(stat.ephemeralOwner == self._client.client_id[0])

    def _ensure_ours(self) -> None:
        """Idempotent: afterwards the znode exists, is ours, and holds our data."""
        parent = self._path.rsplit("/", 1)[0]
        self._client.ensure_path(parent)
        try:
            self._client.create(self._path, self._data, ephemeral=True)
            return
        except NodeExistsError:
            pass
        try:
            data, stat = self._client.get(self._path)
        except NoNodeError:
            self._client.create(self._path, self._data, ephemeral=True)
            return
        if self._owned_by_us(stat):
            if data != self._data:
                self._client.set(self._path, self._data, version=stat.version)
            return
        log.warning("replacing %s, held by another session", self._path)
        try:
            self._client.delete(self._path, version=stat.version)
        except NoNodeError:
            pass
        self._client.create(self._path, self._data, ephemeral=True)

    def _delete_ours(self) -> None:
        try:
            _, stat = self._client.get(self._path)
        except NoNodeError:
            return
        if self._owned_by_us(stat):
            try:
                self._client.delete(self._path, version=stat.version)
            except NoNodeError:
                pass
