"""ZkSession: this process's ZooKeeper session, and what it may believe about it.

Design note: SUSPENDED vs LOST
==============================

A ZooKeeper session outlives TCP connections. The server keeps it (and every
ephemeral znode made in it: our /nodes entry, our slot claims) until it has heard
nothing from the client for the negotiated session timeout; then it expires the
session and deletes those ephemerals. The client cannot see that happen. kazoo
therefore reports three things, and ZkSession maps them to four states:

                       start()
      STOPPED ----------------------> CONNECTED (generation 1)
                                        |    ^
                    connection drops    |    |  reconnected in time:
                    (or pings go        |    |  same session, same generation,
                     unanswered)        v    |  nothing was lost
                                      SUSPENDED
                                        |
                    reconnected, but the server had expired the session
                                        v
                                       LOST ---- new session ----> CONNECTED
                                                                   (generation + 1,
                                                                    new_session=True)
      any state --- stop() ---> STOPPED

CONNECTED   Our session is live: what we registered or claimed in this
            generation stands.

SUSPENDED   We cannot tell whether the session is still alive. kazoo learns of an
            expiry only when it reconnects, so a node that was cut off can believe,
            for a while, that it still owns what it owned. Slot owners do not
            act on this state: the store leases of their slots decide whether they
            may dispatch (cluster/coordinator.py, "Leases"). A timer on
            suspended_for_s() would be an upper bound, not a safe bound: the
            server counts from the last packet it received, and kazoo
            only declares a connection dead after a ping has gone unanswered (it
            pings every third of the timeout and waits another third), so other
            nodes may see our ephemerals vanish as early as about a third of a
            session timeout after we turn SUSPENDED. What keeps a late node
            harmless is the epoch each claim carries (a fencing token checked by
            every write), not this timer.

LOST        The session is gone, and every ephemeral it created with it (our slot
            claims, not our store leases). It may be reported long after the fact
            (on reconnect).

new session A CONNECTED event with new_session=True (generation incremented) means
            start over: register again, claim again. A CONNECTED whose session id
            differs from the last one we saw is treated the same even if kazoo
            never said LOST in between.

The lease. A frozen process (SIGSTOP, a long GC pause, a VM stall) learns nothing
until it runs again, and then acts for a moment on what it believed before: kazoo
has not yet noticed that its session is gone. So every process keeps a lease on
the monotonic clock: a probe thread reads the root every quarter of the session
timeout, and each answered read proves the server heard from us no earlier than
when the read was sent. The server cannot expire the session sooner than one
session timeout after that, so until LEASE_FRACTION of a timeout has passed since
the last answered probe, nobody else can hold what this session holds.
has_lease() says whether that is still so (slot owners gate dispatch on
their store leases instead, which outlive a ZooKeeper outage).

The rules live, pure and table-tested, in transitions.py; the in-memory twin
(memory.py) uses the same rules.

Threads: kazoo calls our state listener on its connection thread. There we only
update the state (under a lock, so `state` is always current) and publish a
SessionEvent to a Fanout (dispatch.py): each listener added with add_listener()
runs on its own thread owned by this ZkSession, receives every event in order,
and may block or do ZooKeeper I/O without delaying kazoo or other listeners.
Events reach listeners shortly after `state` changes; a listener that needs the
latest truth reads `state` / `session_generation` rather than trusting an old
event.

Session timeout: kazoo's client._session_timeout is the *requested* value; the
server clamps it to [minSessionTimeout, maxSessionTimeout]. session_timeout_ms
reports the negotiated value once connected (read from the connect reply) and
the requested value until then.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import Connect
from kazoo.retry import KazooRetry

from .dispatch import Fanout
from .errors import NotStarted, ZkConnectTimeout
from .interface import SessionListener, SessionState
from .transitions import SessionTracker

log = logging.getLogger(__name__)

# Reconnect attempts back off to at most this: the point of reconnecting is to
# do it within the session timeout, so the default (up to an hour) is useless.
_RECONNECT_MAX_DELAY_S = 1.0
_CONNECT_REPLY_TIMEOUT_S = 2.0
"""Longest wait for the server's answer to a connect request. kazoo waits the session
timeout divided by the number of hosts: with one host, a connect sent to a ZooKeeper
that is restarting (its port open, not serving yet) waits the whole session, and the
server expires the session meanwhile. A server that has not answered in this long is
not going to; the connection retry tries again (measured: a restart shorter than the
session then expired one about 1 time in 6 without this)."""

LEASE_FRACTION = 0.75
"""The lease lasts this share of the session timeout from the last answered probe:
the rest is margin for the probe's own trip and the server's expiry ticks."""
_PROBES_PER_TIMEOUT = 4


class ZkSession:
    """One kazoo client and the session state this process may act on.

    Single use: start() once, stop() as often as you like (stop before start is a
    no-op and leaves it startable; start after stop raises NotStarted).
    """

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout_ms: int = 6000,
        connect_timeout_s: float = 10,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not isinstance(hosts, str) or not hosts.strip():
            raise ValueError(f"hosts: must be a non-empty 'host:port[,host:port][/chroot]', got {hosts!r}")
        if isinstance(session_timeout_ms, bool) or not isinstance(session_timeout_ms, int) \
                or session_timeout_ms <= 0:
            raise ValueError(f"session_timeout_ms: must be a positive int, got {session_timeout_ms!r}")
        if not connect_timeout_s > 0:
            raise ValueError(f"connect_timeout_s: must be > 0, got {connect_timeout_s!r}")
        self.hosts = hosts
        self.requested_session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = float(connect_timeout_s)
        self._clock = clock
        self._lock = threading.Condition()
        self._lifecycle_lock = threading.Lock()
        self._lifecycle = "new"  # new | running | stopping | stopped
        self._closing = False  # kazoo reports after this are ours (stop()), not news
        self._tracker = SessionTracker()
        self._negotiated_ms: int | None = None
        self._client: KazooClient | None = None
        self._fanout = Fanout("taskring-zk-listener")
        self._confirmed_at: float | None = None   # clock time a request later answered was sent
        self._lease_stop = threading.Event()
        self._lease_thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Connect and establish a session (generation 1), or raise ZkConnectTimeout."""
        with self._lifecycle_lock:
            if self._lifecycle == "running":
                return
            if self._lifecycle != "new":
                raise NotStarted("ZkSession cannot be restarted after stop(); create a new one")
            client = KazooClient(
                hosts=self.hosts,
                timeout=self.requested_session_timeout_ms / 1000.0,
                connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2,
                                            max_delay=_RECONNECT_MAX_DELAY_S),
                # Bounded, so that a caller-facing operation (register, ensure a
                # path) fails with an error instead of hanging through an outage.
                command_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0,
                                         deadline=self.connect_timeout_s),
            )
            self._capture_negotiated_timeout(client)
            client.add_listener(self._on_kazoo_state)
            self._client = client
            self._fanout.start()
            sent_at = self._clock()
            try:
                client.start(timeout=self.connect_timeout_s)
            except KazooTimeoutError:
                # kazoo has already stopped and closed the client.
                self._lifecycle = "stopped"
                with self._lock:
                    self._closing = True
                self._fanout.stop(timeout_s=1.0)
                raise ZkConnectTimeout(self.hosts, self.connect_timeout_s) from None
            self._lifecycle = "running"
            self._confirm(sent_at)
            self._lease_thread = threading.Thread(target=self._probe_loop, name="taskring-zk-lease", daemon=True)
            self._lease_thread.start()
        log.info("ZooKeeper session 0x%x established with %s (generation %d)",
                 self.session_id or 0, self.hosts, self.session_generation)

    def stop(self) -> None:
        """Close the session (our ephemerals go at once), then deliver a final
        STOPPED event and end the listener threads."""
        with self._lifecycle_lock:
            if self._lifecycle != "running":
                return
            self._lifecycle = "stopping"
            self._lease_stop.set()
            if self._lease_thread is not None:
                self._lease_thread.join(timeout=5)
            client = self.client  # set while running
            with self._lock:
                self._closing = True
            try:
                client.stop()
                client.close()
            except Exception:
                log.exception("closing the ZooKeeper client for %s", self.hosts)
            with self._lock:
                event = self._tracker.stop(self._clock())
                if event is not None:
                    self._fanout.publish(event)
                self._lock.notify_all()
            self._fanout.stop(timeout_s=5.0)
            self._lifecycle = "stopped"

    # -- state -----------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        with self._lock:
            return self._tracker.state

    @property
    def session_id(self) -> int | None:
        """The live session's id while CONNECTED or SUSPENDED; None when LOST or STOPPED."""
        with self._lock:
            return self._tracker.session_id

    @property
    def session_generation(self) -> int:
        """0 before the first session; +1 for every session established after that."""
        with self._lock:
            return self._tracker.generation

    @property
    def suspended_since(self) -> float | None:
        """Clock time the connection last dropped, while not CONNECTED (kept through LOST)."""
        with self._lock:
            return self._tracker.suspended_since

    def suspended_for_s(self) -> float:
        """How long we have been without a connected session: 0.0 while CONNECTED,
        seconds since the connection dropped while SUSPENDED or LOST, inf when STOPPED."""
        with self._lock:
            return self._tracker.suspended_for_s(self._clock())

    @property
    def session_timeout_ms(self) -> int:
        """The negotiated session timeout once known, else the requested one."""
        return self._negotiated_ms or self.requested_session_timeout_ms

    @property
    def negotiated_session_timeout_ms(self) -> int | None:
        return self._negotiated_ms

    @property
    def client(self) -> KazooClient:
        """The KazooClient, for recipes. Its listeners run on kazoo threads: prefer
        add_listener() here for anything that blocks."""
        if self._client is None:
            raise NotStarted("ZkSession.client: call start() first")
        return self._client

    def wait_connected(self, timeout_s: float) -> bool:
        """Wait until CONNECTED (True) or timeout_s passes (False)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._tracker.state is not SessionState.CONNECTED:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    # -- the lease ---------------------------------------------------------------

    def lease_remaining_s(self) -> float:
        """Seconds this process may still act as the holder of what its session holds
        (see "The lease" above); 0.0 when the lease has run out, or while LOST or STOPPED."""
        with self._lock:
            if self._confirmed_at is None or self._tracker.state in (SessionState.LOST, SessionState.STOPPED):
                return 0.0
            lease_s = self.session_timeout_ms / 1000.0 * LEASE_FRACTION
            return max(0.0, self._confirmed_at + lease_s - self._clock())

    def has_lease(self) -> bool:
        return self.lease_remaining_s() > 0.0

    def _confirm(self, sent_at: float) -> None:
        with self._lock:
            if self._confirmed_at is None or sent_at > self._confirmed_at:
                self._confirmed_at = sent_at

    def _probe_loop(self) -> None:
        """Renew the lease: one cheap read a quarter of a timeout, answered or not."""
        while not self._lease_stop.is_set():
            interval_s = self.session_timeout_ms / 1000.0 / _PROBES_PER_TIMEOUT
            sent_at = self._clock()
            try:
                # exists_async: no command retry, so a dead connection fails this probe
                # at once instead of blocking it through kazoo's reconnect loop.
                self.client.exists_async("/").get(timeout=interval_s)
            except Exception:
                pass  # no answer, no renewal: the lease runs down on its own
            else:
                self._confirm(sent_at)
            self._lease_stop.wait(max(0.0, interval_s - (self._clock() - sent_at)))

    # -- listeners -------------------------------------------------------------

    def add_listener(self, callback: SessionListener) -> None:
        """Call callback(SessionEvent) for every later state change, on a thread of its
        own (see the note above on ordering). Events before the call are not replayed:
        read `state` and `session_generation` after adding."""
        self._fanout.add(callback)

    def remove_listener(self, callback: SessionListener) -> None:
        self._fanout.remove(callback)

    # -- kazoo side (runs on kazoo's connection thread: no blocking here) -------

    def _on_kazoo_state(self, kazoo_state: str) -> None:
        client = self._client
        # client_id is None unless kazoo is live; it is live when CONNECTED is reported,
        # which is the only report whose session id we use.
        client_id = client.client_id if client is not None else None
        session_id = client_id[0] if client_id else None
        with self._lock:
            if self._closing:
                return
            event = self._tracker.observe(str(kazoo_state), session_id, self._clock())
            if event is None:
                return
            self._fanout.publish(event)
            self._lock.notify_all()
            current = self._tracker.session_id
        log.info("ZooKeeper session %s -> %s (generation %d, session %s)", event.old_state,
                 event.new_state, event.generation, "none" if current is None else f"0x{current:x}")

    def _capture_negotiated_timeout(self, client: KazooClient) -> None:
        """Record the session timeout from the server's connect reply.

        kazoo keeps it only in a local variable of ConnectionHandler._connect; we
        wrap the handler's private _invoke (used only for the connect and auth
        handshake) on this one instance. kazoo is pinned in pyproject.toml; if the
        private name ever changes we fall back to the requested timeout. The same
        wrapper bounds the wait for the connect reply (_CONNECT_REPLY_TIMEOUT_S).
        """
        connection = getattr(client, "_connection", None)
        invoke = getattr(connection, "_invoke", None)
        if connection is None or invoke is None:
            log.warning("kazoo internals changed: negotiated session timeout unavailable")
            return

        def _invoke(timeout, request, xid=None):
            if isinstance(request, Connect):
                timeout = min(timeout, _CONNECT_REPLY_TIMEOUT_S)
            result = invoke(timeout, request, xid)
            if isinstance(request, Connect) and isinstance(result, tuple):
                negotiated = getattr(result[0], "time_out", 0)
                if negotiated > 0:
                    self._negotiated_ms = int(negotiated)
            return result

        connection._invoke = _invoke
