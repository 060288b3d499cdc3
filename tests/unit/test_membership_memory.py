"""The in-memory twins keep the membership contract: listeners fire on their own
threads, generations increment on expiry, ephemerals go with the session, a
suspended node's view freezes, a new session re-registers."""
from __future__ import annotations

import math
import threading

import pytest

from membership import (
    DuplicateNodeId,
    ExecutorInstance,
    MemoryExecutorDirectory,
    MemoryMembership,
    MemoryNodeRegistry,
    MemorySession,
    NotStarted,
    SessionEvent,
    SessionState,
)

WAIT_S = 5.0


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def started():
    """Factory of started components, stopped after the test (in reverse order)."""
    items = []

    def start(component):
        component.start()
        items.append(component)
        return component

    yield start
    for component in reversed(items):
        component.stop()


def record_events(session):
    events, lock = [], threading.Lock()

    def listener(event):
        with lock:
            events.append(event)

    session.add_listener(listener)
    return events


# ---------------------------------------------------------------- MemorySession

def test_session_lifecycle_is_safe_before_start_and_twice(clock):
    s = MemorySession(clock=clock)
    s.stop()
    s.stop()
    assert s.state is SessionState.STOPPED and s.session_generation == 0
    assert math.isinf(s.suspended_for_s())
    s.start()
    s.start()
    assert s.state is SessionState.CONNECTED and s.session_generation == 1
    assert s.session_id is not None
    s.stop()
    s.stop()
    assert s.state is SessionState.STOPPED and s.session_id is None
    with pytest.raises(NotStarted):
        s.start()


def test_session_suspend_resume_keeps_the_session(clock, started):
    s = MemorySession(clock=clock)
    events = record_events(s)
    started(s)
    first_id = s.session_id

    clock.now += 1
    s.suspend()
    clock.now += 2.5
    assert s.state is SessionState.SUSPENDED and s.session_id == first_id
    assert s.suspended_since == 1001.0 and s.suspended_for_s() == 2.5
    assert not s.wait_connected(0.01)
    s.resume()
    assert s.flush(WAIT_S)

    assert s.state is SessionState.CONNECTED and s.session_id == first_id
    assert s.session_generation == 1 and s.suspended_for_s() == 0.0
    assert [(e.old_state, e.new_state, e.generation, e.new_session) for e in events] == [
        ("stopped", "connected", 1, True),
        ("connected", "suspended", 1, False),
        ("suspended", "connected", 1, False),
    ]
    assert events[1].at_monotonic == 1001.0


def test_session_expire_is_suspended_lost_then_a_new_generation(clock, started):
    s = MemorySession(clock=clock)
    events = record_events(s)
    started(s)
    first_id = s.session_id

    s.expire()
    assert s.flush(WAIT_S)

    assert s.state is SessionState.CONNECTED and s.session_generation == 2
    assert s.session_id not in (None, first_id)
    assert [(e.new_state, e.generation, e.new_session) for e in events[1:]] == [
        ("suspended", 1, False),
        ("lost", 1, False),
        ("connected", 2, True),
    ]


def test_session_expire_without_reconnect_stays_lost_until_resume(clock, started):
    s = MemorySession(clock=clock)
    started(s)
    s.suspend()
    clock.now += 3
    s.expire(reconnect=False)
    assert s.state is SessionState.LOST and s.session_id is None
    assert s.suspended_for_s() == 3.0  # the clock runs from when the connection dropped

    s.resume()
    assert s.state is SessionState.CONNECTED and s.session_generation == 2


def test_session_listener_runs_on_its_own_thread_and_may_block(started):
    s = MemorySession()
    release = threading.Event()
    blocked_names: list[str] = []
    other: list[SessionEvent] = []

    def blocking(event):
        blocked_names.append(threading.current_thread().name)
        release.wait(WAIT_S)

    s.add_listener(blocking)
    got = threading.Event()

    def hear(e: SessionEvent) -> None:
        other.append(e)
        got.set()

    s.add_listener(hear)
    started(s)
    s.suspend()
    s.resume()

    assert got.wait(WAIT_S)
    # Given the first listener is blocked, the second still hears every event.
    deadline_ok = s.wait_connected(WAIT_S)
    assert deadline_ok
    release.set()
    assert s.flush(WAIT_S)
    assert [e.new_state for e in other] == ["connected", "suspended", "connected"]
    assert blocked_names and blocked_names[0] != threading.current_thread().name


def test_session_stop_delivers_a_final_stopped_event():
    s = MemorySession()
    events = record_events(s)
    s.start()
    s.stop()  # stop drains the listeners' queues before their threads end
    assert [e.new_state for e in events] == ["connected", "stopped"]


def test_session_has_no_kazoo_client():
    with pytest.raises(NotStarted):
        _ = MemorySession().client


# ---------------------------------------------------------------- MemoryNodeRegistry

def node(hub, name, started, session=None):
    session = session or started(MemorySession())
    return session, started(MemoryNodeRegistry(session, name, {"address": f"{name}:7000"}, hub=hub))


def test_two_nodes_see_each_other_and_listeners_fire(started):
    hub = MemoryMembership()
    sa, a = node(hub, "a", started)
    seen: list[dict[str, dict]] = []
    a.add_members_listener(seen.append)

    sb, b = node(hub, "b", started)
    assert a.flush(WAIT_S) and b.flush(WAIT_S)

    assert set(a.members()) == set(b.members()) == {"a", "b"}
    assert b.members()["a"] == {"address": "a:7000"}
    assert seen and set(seen[-1]) == {"a", "b"}
    assert a.registered_generation == 1


def test_expired_node_leaves_and_comes_back_with_a_new_generation(started):
    hub = MemoryMembership()
    sa, a = node(hub, "a", started)
    sb, b = node(hub, "b", started)
    b_views = []
    b.add_members_listener(lambda m: b_views.append(set(m)))

    sa.expire(reconnect=False)
    assert a.flush(WAIT_S) and b.flush(WAIT_S)
    assert set(b.members()) == {"b"}, "b sees a leave"
    assert sa.state is SessionState.LOST and a.registered_generation == 1

    sa.resume()
    assert a.flush(WAIT_S) and b.flush(WAIT_S)
    assert sa.session_generation == 2 and a.registered_generation == 2
    assert set(b.members()) == {"a", "b"}, "and come back"
    assert b_views == [{"b"}, {"a", "b"}]


def test_expire_with_reconnect_re_registers(started):
    hub = MemoryMembership()
    sa, a = node(hub, "a", started)
    sa.expire()
    assert a.flush(WAIT_S)
    assert sa.session_generation == 2 and a.registered_generation == 2
    assert set(a.members()) == {"a"} and set(hub.members()) == {"a"}


def test_suspended_node_keeps_a_stale_view_others_still_see_it(started):
    hub = MemoryMembership()
    sa, a = node(hub, "a", started)
    sb, b = node(hub, "b", started)
    assert a.flush(WAIT_S)

    sa.suspend()
    sb.stop()  # b leaves while a cannot hear about it
    assert a.flush(WAIT_S)
    assert set(a.members()) == {"a", "b"}, "a's view is frozen while suspended"
    assert set(hub.members()) == {"a"}, "a's ephemeral outlives the dropped connection"

    sa.resume()
    assert a.flush(WAIT_S)
    assert set(a.members()) == {"a"}
    assert a.registered_generation == 1, "same session: no re-registration"


def test_expire_while_suspended_then_resume(started):
    hub = MemoryMembership()
    sa, a = node(hub, "a", started)
    sa.suspend()
    sa.expire(reconnect=False)
    assert set(hub.members()) == set()
    sa.resume()
    assert a.flush(WAIT_S)
    assert set(hub.members()) == {"a"} and a.registered_generation == 2


def test_duplicate_node_id_is_refused(started):
    hub = MemoryMembership()
    node(hub, "a", started)
    other = started(MemorySession())
    with pytest.raises(DuplicateNodeId, match="'a'"):
        MemoryNodeRegistry(other, "a", {}, hub=hub).start()


def test_registry_stop_deregisters_and_is_safe_twice(started):
    hub = MemoryMembership()
    sa = started(MemorySession())
    a = MemoryNodeRegistry(sa, "a", {}, hub=hub)
    a.stop()  # before start
    a.start()
    assert set(hub.members()) == {"a"}
    a.stop()
    a.stop()
    assert hub.members() == {}


def test_registry_validates_like_the_real_one():
    s, hub = MemorySession(), MemoryMembership()
    with pytest.raises(ValueError, match="node_id"):
        MemoryNodeRegistry(s, "a/b", {}, hub=hub)
    with pytest.raises(ValueError, match="info"):
        MemoryNodeRegistry(s, "a", {"x": object()}, hub=hub)
    with pytest.raises(NotStarted):
        MemoryNodeRegistry(s, "a", {}, hub=hub).start()  # session not started


# ---------------------------------------------------------------- MemoryExecutorDirectory

def ex(instance_id, *types, max_in_flight=8):
    return ExecutorInstance(instance_id, f"10.0.0.1:{5000 + len(instance_id)}", tuple(types), max_in_flight)


def test_executor_directory_lazy_watch_and_listeners(started):
    d = started(MemoryExecutorDirectory())
    seen = []
    d.add_listener(lambda ns, inst: seen.append((ns, [i.instance_id for i in inst])))
    d.register("billing", ex("i2", "charge"))
    d.register("mail", ex("m1", "send"))
    assert d.flush(WAIT_S)
    assert seen == [], "nobody asked yet: namespaces are watched lazily"

    assert [i.instance_id for i in d.instances("billing")] == ["i2"]
    d.register("billing", ex("i1", "charge", "refund"))
    d.deregister("billing", "i2")
    d.deregister("billing", "nope")
    d.register("mail", ex("m2", "send"))  # not watched: no event
    assert d.flush(WAIT_S)

    assert [i.instance_id for i in d.instances("billing")] == ["i1"]
    assert d.instances("billing")[0].task_types == ("charge", "refund")
    assert seen == [("billing", ["i2"]), ("billing", ["i1", "i2"]), ("billing", ["i1"])]
    assert d.instances("billing") is d.instances("billing"), "hot path returns the cached tuple"
    # known(): what the watched namespaces hold now (for the executor gauge); mail is not watched
    assert d.known() == {"billing": d.instances("billing")}


def test_executor_directory_lifecycle_and_validation():
    d = MemoryExecutorDirectory()
    d.stop()
    with pytest.raises(NotStarted):
        d.instances("billing")
    d2 = MemoryExecutorDirectory()
    d2.start()
    with pytest.raises(ValueError, match="namespace"):
        d2.instances("a/b")
    d2.stop()
    d2.stop()
