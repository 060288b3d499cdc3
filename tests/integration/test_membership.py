"""membership against the real ZooKeeper of the local stack (tickTime=500).

Each test gets its own chroot under the run's chroot, so tests cannot see each
other's /nodes or /executors. Connection faults are made with a small TCP proxy
between one client and ZooKeeper (harness.faults.CutProxy: drop() resets and refuses);
session expiry with kazoo's old harness trick (harness.faults.expire_session).
Every wait is on a condition with a deadline.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from harness import faults
from harness.faults import CutProxy
from harness.wait import wait_until
from membership import (
    DuplicateNodeId,
    ExecutorDirectory,
    ExecutorInstance,
    NodeRegistry,
    SessionState,
    ZkSession,
)

# serial: session expiry and cut-offs timed against ZooKeeper's session timeout.
pytestmark = [pytest.mark.integration, pytest.mark.serial, pytest.mark.timeout(90)]

WAIT_S = 15.0
SESSION_MS = 3000


# ---------------------------------------------------------------- helpers

class Recorder:
    """A listener that records what it is called with, and lets a test wait for a condition."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._cond = threading.Condition()

    def __call__(self, *args: Any) -> None:
        with self._cond:
            self.items.append(args[0] if len(args) == 1 else args)
            self._cond.notify_all()

    def wait_until(self, predicate: Callable[[list[Any]], bool], what: str,
                   timeout_s: float = WAIT_S) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate(list(self.items)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; saw {self.items!r}")
                self._cond.wait(remaining)
            return list(self.items)


# ---------------------------------------------------------------- fixtures

@pytest.fixture
def started():
    """Factory: start a component now, stop it after the test (reverse order)."""
    items = []

    def start(component):
        items.append(component)
        component.start()
        return component

    yield start
    for component in reversed(items):
        try:
            component.stop()
        except Exception as exc:  # cleanup must not hide the test's own result
            print(f"warning: stopping {component!r}: {exc!r}")


@pytest.fixture
def inspector(hosts: str, started):
    """A plain kazoo client on the test's chroot, to look at and make znodes by hand."""
    session = started(ZkSession(hosts, session_timeout_ms=SESSION_MS))
    return session.client


@pytest.fixture
def proxy(zk_hosts: str):
    host, _, port = zk_hosts.partition("/")[0].rpartition(":")
    p = CutProxy(host, int(port))
    yield p
    p.close()


def via(proxy: CutProxy, hosts: str) -> str:
    """hosts, but reaching ZooKeeper through the proxy (same chroot)."""
    _, _, chroot = hosts.partition("/")
    return f"127.0.0.1:{proxy.port}/{chroot}"


def session_with_events(started, hosts: str, session_timeout_ms: int = SESSION_MS):
    session = ZkSession(hosts, session_timeout_ms=session_timeout_ms, connect_timeout_s=WAIT_S)
    events = Recorder()
    session.add_listener(events)
    started(session)
    return session, events


def registry_with_views(started, session: ZkSession, node_id: str):
    registry = NodeRegistry(session, node_id, {"address": f"{node_id}.local:7000", "version": "test"})
    views = Recorder()
    registry.add_members_listener(lambda members: views(set(members)))
    started(registry)
    return registry, views


def transitions(events: list) -> list[tuple[str, str, int, bool]]:
    return [(e.old_state, e.new_state, e.generation, e.new_session) for e in events]


# ---------------------------------------------------------------- tests

def test_two_nodes_see_each_other_and_one_leaving(hosts, started, inspector):
    sa, _ = session_with_events(started, hosts)
    sb, _ = session_with_events(started, hosts)
    a, a_views = registry_with_views(started, sa, "node-a")
    b, _ = registry_with_views(started, sb, "node-b")

    a_views.wait_until(lambda v: v and v[-1] == {"node-a", "node-b"}, "a to see both nodes")
    assert set(b.members()) == {"node-a", "node-b"}, "start() returns with the member list loaded"
    assert b.members()["node-a"] == {"address": "node-a.local:7000", "version": "test"}
    data, stat = inspector.get("/nodes/node-a")
    assert json.loads(data) == {"address": "node-a.local:7000", "version": "test"}
    assert stat.ephemeralOwner == sa.session_id
    assert sa.negotiated_session_timeout_ms == SESSION_MS == sa.session_timeout_ms

    b.stop()

    a_views.wait_until(lambda v: v[-1] == {"node-a"}, "a to see b leave")
    assert inspector.exists("/nodes/node-b") is None
    b.stop()  # twice: no-op


def test_expired_session_is_lost_then_a_new_generation_that_re_registers(hosts, started, inspector):
    sa, a_events = session_with_events(started, hosts)
    sb, _ = session_with_events(started, hosts)
    a, _ = registry_with_views(started, sa, "node-a")
    b, b_views = registry_with_views(started, sb, "node-b")
    b_views.wait_until(lambda v: v and v[-1] == {"node-a", "node-b"}, "b to see both nodes")
    first_session = sa.session_id
    assert (sa.session_generation, a.registered_generation) == (1, 1)

    faults.expire_session(hosts, sa.client.client_id, SESSION_MS / 1000)

    events = a_events.wait_until(
        lambda ev: any(e.new_session and e.generation == 2 for e in ev), "a's new session")
    assert transitions(events) == [
        ("stopped", "connected", 1, True),
        ("connected", "suspended", 1, False),
        ("suspended", "lost", 1, False),
        ("lost", "connected", 2, True),
    ]
    assert sa.state is SessionState.CONNECTED and sa.session_id not in (None, first_session)
    views = b_views.wait_until(
        lambda v: {"node-b"} in v and v[-1] == {"node-a", "node-b"}, "b to see a leave and come back")
    assert views.index({"node-b"}) < len(views) - 1
    wait_until(lambda: a.registered_generation == 2, WAIT_S, "a to register in its new session")
    _, stat = inspector.get("/nodes/node-a")
    assert stat.ephemeralOwner == sa.session_id


def test_dropped_connection_is_suspended_then_the_same_session(hosts, started, proxy, inspector):
    sa, a_events = session_with_events(started, via(proxy, hosts), session_timeout_ms=4000)
    sb, _ = session_with_events(started, hosts)
    a, _ = registry_with_views(started, sa, "node-a")
    b, b_views = registry_with_views(started, sb, "node-b")
    b_views.wait_until(lambda v: v and v[-1] == {"node-a", "node-b"}, "b to see both nodes")
    session_id = sa.session_id

    t_drop = time.monotonic()
    proxy.drop()

    a_events.wait_until(lambda ev: ev[-1].new_state == "suspended", "SUSPENDED after the drop", 5)
    assert sa.state is SessionState.SUSPENDED and sa.session_id == session_id
    assert t_drop <= sa.suspended_since <= time.monotonic()
    assert sa.suspended_for_s() > 0.0

    proxy.restore()

    events = a_events.wait_until(lambda ev: ev[-1].new_state == "connected", "reconnect")
    assert transitions(events)[1:] == [
        ("connected", "suspended", 1, False),
        ("suspended", "connected", 1, False),
    ]
    assert sa.session_id == session_id and sa.suspended_since is None and sa.suspended_for_s() == 0.0
    assert {"node-b"} not in b_views.items, "b never saw a leave: the session outlived the drop"
    assert a.registered_generation == 1
    assert inspector.get("/nodes/node-a")[1].ephemeralOwner == session_id


def test_cut_off_longer_than_the_session_timeout_is_lost_only_on_reconnect(hosts, started, proxy):
    sa, a_events = session_with_events(started, via(proxy, hosts), session_timeout_ms=2000)
    sb, _ = session_with_events(started, hosts)
    a, a_views = registry_with_views(started, sa, "node-a")
    b, b_views = registry_with_views(started, sb, "node-b")
    for views in (a_views, b_views):
        views.wait_until(lambda v: v and v[-1] == {"node-a", "node-b"}, "both to see both nodes")

    proxy.drop()

    # The server expires a's session: b sees a leave...
    b_views.wait_until(lambda v: v[-1] == {"node-b"}, "b to see a expire")
    # ...while a, cut off, can only say SUSPENDED and still believes in its old view.
    assert sa.state is SessionState.SUSPENDED
    assert set(a.members()) == {"node-a", "node-b"}
    assert sa.suspended_for_s() > 1.0

    proxy.restore()

    events = a_events.wait_until(lambda ev: ev[-1].new_state == "connected", "a to reconnect")
    assert transitions(events)[1:] == [
        ("connected", "suspended", 1, False),
        ("suspended", "lost", 1, False),
        ("lost", "connected", 2, True),
    ]
    b_views.wait_until(lambda v: v[-1] == {"node-a", "node-b"}, "b to see a come back")


def test_stale_znode_of_a_crashed_incarnation_is_waited_out(hosts, started, proxy, inspector):
    # Given node-a's first incarnation is cut off (as good as crashed: its session
    # lingers on the server until the timeout)...
    old, _ = session_with_events(started, via(proxy, hosts), session_timeout_ms=2000)
    started(NodeRegistry(old, "node-a", {"incarnation": 1}))
    old_session = old.session_id
    proxy.drop()

    # ...when a new incarnation starts with the same node_id...
    new, _ = session_with_events(started, hosts, session_timeout_ms=2000)
    t0 = time.monotonic()
    registry = started(NodeRegistry(new, "node-a", {"incarnation": 2}))

    # ...then it waits for the old session to expire instead of deleting its znode.
    data, stat = inspector.get("/nodes/node-a")
    assert json.loads(data) == {"incarnation": 2}
    assert stat.ephemeralOwner == new.session_id != old_session
    assert 0.5 < time.monotonic() - t0 < 2 * 2.0 + 1.0 + 1.0
    assert set(registry.members()) == {"node-a"}


def test_a_live_duplicate_node_id_is_refused(hosts, started):
    first, _ = session_with_events(started, hosts, session_timeout_ms=1000)
    started(NodeRegistry(first, "node-a", {}))
    second, _ = session_with_events(started, hosts, session_timeout_ms=1000)

    with pytest.raises(DuplicateNodeId, match="node-a") as err:
        NodeRegistry(second, "node-a", {}).start()
    assert err.value.owner_session_id == first.session_id


def test_executor_directory_sees_executors_appear_and_disappear(hosts, started, inspector):
    session, _ = session_with_events(started, hosts)
    directory = ExecutorDirectory(session)
    changes = Recorder()
    directory.add_listener(changes)
    started(directory)

    assert directory.instances("billing") == ()
    assert inspector.exists("/executors/billing") is not None, "the namespace path is ensured"

    # An executor (its own session, like the SDK) advertises itself...
    executor = started(ZkSession(hosts, session_timeout_ms=SESSION_MS)).client
    executor.create("/executors/billing/exec-1", json.dumps({
        "address": "10.0.0.7:50051", "namespace": "billing", "task_types": ["charge", "refund"],
        "max_in_flight": 16, "pid": 4242}).encode(), ephemeral=True)
    inspector.create("/executors/billing/broken", b"{not json", ephemeral=True)

    changes.wait_until(lambda c: any(inst for ns, inst in c), "the executor to appear")
    expected = (ExecutorInstance("exec-1", "10.0.0.7:50051", ("charge", "refund"), 16),)
    assert directory.instances("billing") == expected
    assert directory.instances("billing") is directory.instances("billing"), "cached tuple"
    assert changes.items[-1] == ("billing", expected)

    # ...and disappears when it goes away.
    executor.delete("/executors/billing/exec-1")
    changes.wait_until(lambda c: c[-1] == ("billing", ()), "the executor to disappear")
    assert directory.instances("billing") == ()
    assert directory.instances("other", wait_s=0) == (), "an asyncio caller need not wait"
    directory.stop()
    directory.stop()


def test_stop_leaves_no_threads_behind_and_is_safe_twice(hosts):
    def ours() -> set[str]:
        return {t.name for t in threading.enumerate() if t.name.startswith("taskring-")}

    before = ours()
    session = ZkSession(hosts, session_timeout_ms=SESSION_MS)
    registry = NodeRegistry(session, "node-a", {})
    directory = ExecutorDirectory(session)
    session.add_listener(lambda event: None)
    registry.add_members_listener(lambda members: None)
    directory.add_listener(lambda namespace, instances: None)
    for component in (session, registry, directory):
        component.stop()  # before start
    session.start()
    registry.start()
    directory.start()
    directory.instances("billing")
    assert ours() - before, "components run on threads of their own"

    for component in (directory, registry, session, directory, registry, session):
        component.stop()

    assert ours() - before == set()
    assert session.state is SessionState.STOPPED and registry.members() is not None


def test_the_lease_runs_out_before_the_server_can_expire_the_session(hosts, started, proxy):
    from membership.session import LEASE_FRACTION
    sa, a_events = session_with_events(started, via(proxy, hosts), session_timeout_ms=2000)
    sb, _ = session_with_events(started, hosts)
    a, a_views = registry_with_views(started, sa, "node-a")
    b, b_views = registry_with_views(started, sb, "node-b")
    b_views.wait_until(lambda v: v and v[-1] == {"node-a", "node-b"}, "b to see both nodes")
    # While connected, the probe keeps the lease up: never more than a lease long.
    assert sa.has_lease() and 0 < sa.lease_remaining_s() <= sa.session_timeout_ms / 1000 * LEASE_FRACTION

    proxy.drop()
    wait_until(lambda: not sa.has_lease(), 5, "the lease to run out", 0.01)
    # The lease ran out while the server still held the session: nobody else could
    # have claimed what a holds yet.
    assert not sa.has_lease()
    assert {"node-b"} not in b_views.items, "the server expired the session before the lease ran out"
    b_views.wait_until(lambda v: v[-1] == {"node-b"}, "b to see a expire")

    proxy.restore()
    a_events.wait_until(lambda ev: ev[-1].new_state == "connected", "a to reconnect")
    deadline = time.monotonic() + 5
    while not sa.has_lease() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sa.has_lease(), "the lease came back with the new session"
