"""Mailbox and Fanout: the hand-off from kazoo's threads to ours."""
from __future__ import annotations

import threading

from membership.dispatch import Fanout, Mailbox

WAIT_S = 5.0


def test_mailbox_runs_in_order_on_its_own_thread_and_survives_errors():
    box = Mailbox("test-box")
    seen: list[tuple[int, str]] = []

    def record(i):
        seen.append((i, threading.current_thread().name))

    def boom():
        raise RuntimeError("listener bug")

    box.submit(record, 1)  # before start: waits for start
    box.start()
    box.submit(boom)
    box.submit(record, 2)
    assert box.flush(WAIT_S)

    assert [i for i, _ in seen] == [1, 2]
    assert {name for _, name in seen} == {"test-box"}
    box.stop()


def test_mailbox_stop_is_safe_before_start_twice_and_drops_later_work():
    box = Mailbox("test-box")
    box.stop()
    box.stop()
    assert box.submit(lambda: None) is False
    box.start()  # after stop: stays stopped
    assert box.flush(WAIT_S) is True


def test_mailbox_stop_runs_what_was_queued():
    box = Mailbox("test-box")
    seen: list[str] = []
    box.start()
    gate = threading.Event()
    box.submit(gate.wait, WAIT_S)
    box.submit(seen.append, "queued")
    gate.set()
    box.stop(WAIT_S)
    assert seen == ["queued"]


def test_fanout_a_blocked_listener_does_not_starve_the_others():
    fan = Fanout("test-fan")
    release = threading.Event()
    slow_seen, fast_seen = [], []
    fast_got_both = threading.Event()

    def slow(item):
        release.wait(WAIT_S)
        slow_seen.append(item)

    def fast(item):
        fast_seen.append(item)
        if len(fast_seen) == 2:
            fast_got_both.set()

    fan.add(slow)
    fan.add(fast)
    fan.start()
    fan.publish("a")
    fan.publish("b")

    # Given slow is stuck on "a", when we wait, then fast still gets both, in order.
    assert fast_got_both.wait(WAIT_S)
    assert fast_seen == ["a", "b"] and slow_seen == []
    release.set()
    assert fan.flush(WAIT_S)
    assert slow_seen == ["a", "b"]
    fan.stop()


def test_fanout_listener_added_late_runs_and_removed_listener_stops():
    fan = Fanout("test-fan")
    fan.start()
    seen: list[int] = []
    fan.add(seen.append)
    fan.publish(1)
    assert fan.flush(WAIT_S)
    fan.remove(seen.append)
    fan.publish(2)
    assert fan.flush(WAIT_S)
    assert seen == [1]
    fan.stop()
    fan.stop()


def test_fanout_listener_may_stop_the_fanout_from_its_own_thread():
    fan = Fanout("test-fan")
    done = threading.Event()

    def stopper(_item):
        fan.stop()  # must not deadlock joining itself
        done.set()

    fan.add(stopper)
    fan.start()
    fan.publish("x")
    assert done.wait(WAIT_S)
