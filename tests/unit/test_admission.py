"""Admission control: which load is refused, with what message and retry-after hint."""
from __future__ import annotations

import grpc
import pytest

from dispatcher.api.admission import MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, Admission
from dispatcher.base.clock import Clock
from dispatcher.base.errors import Overloaded
from dispatcher.engine.due_queue import INTAKE_SHARES
from dispatcher.engine.load import Backlog, Load
from dispatcher.engine.ready import HIGH, LOW, NORMAL


class FixedClock(Clock):
    def __init__(self) -> None:
        self.ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms


def admission(load: Load, clock: FixedClock | None = None) -> Admission:
    return Admission(load=lambda: load, max_wait_ms=1_000, max_unread=10_000, clock=clock or FixedClock())


def calm(held: int = 100, oldest_due_wait_ms: int = 0, unread: int = 0, dispatched_total: int = 0,
         capacity: int = 1_000) -> Load:
    """A node whose every class waits behind the same figures (as when all work is high)."""
    same = Backlog(held=held, oldest_due_wait_ms=oldest_due_wait_ms, unread=unread)
    return Load(capacity=capacity, dispatched_total=dispatched_total, shares={HIGH: 1.0, NORMAL: 1.0, LOW: 1.0},
                ahead={HIGH: same, NORMAL: same, LOW: same})


def low_backlog() -> Load:
    """Low tasks due for a minute, their share of the heap full and their topic unread;
    nothing of high or normal waits."""
    quiet = Backlog(held=0, oldest_due_wait_ms=0, unread=0)
    return Load(capacity=1_000, dispatched_total=0, shares=INTAKE_SHARES,
                ahead={HIGH: quiet, NORMAL: quiet, LOW: Backlog(held=600, oldest_due_wait_ms=60_000, unread=50_000)})


def test_a_node_keeping_up_admits():
    admission(calm()).check()
    admission(calm(held=899, oldest_due_wait_ms=1_000, unread=10_000)).check()   # bounds are inclusive


@pytest.mark.parametrize("load, says", [
    (calm(held=900), "the node holds 900 tasks of normal priority or above, 900 or more (90% of the 100% of its"
                     " heap's capacity of 1000 that normal tasks may fill)"),
    (calm(oldest_due_wait_ms=1_001),
     "dispatch is behind: the oldest due task of normal priority or above has waited 1001 ms (bound 1000 ms)"),
    (calm(unread=10_001),
     "intake is behind: 10001 messages of normal priority or above of owned partitions are unread (bound 10000)"),
])
def test_a_node_behind_refuses_saying_why(load, says):
    with pytest.raises(Overloaded) as refused:
        admission(load).check()
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert says in str(refused.value) and "nothing was written" in str(refused.value)
    assert MIN_RETRY_AFTER_MS <= refused.value.retry_after_ms <= MAX_RETRY_AFTER_MS


def test_the_hint_is_how_long_the_backlog_takes_at_the_rate_seen():
    clock = FixedClock()
    state = {"load": calm(unread=0, dispatched_total=0)}
    gate = Admission(load=lambda: state["load"], max_wait_ms=1_000, max_unread=10_000, clock=clock)
    gate.check()
    clock.ms += 1_000
    state["load"] = calm(unread=0, dispatched_total=19_900)    # 19,900/s seen; smoothed with 100/s: 10,000/s
    gate.check()
    state["load"] = calm(unread=30_000)
    with pytest.raises(Overloaded) as refused:
        gate.check()
    # (30,000 unread - half the bound) at 10,000/s: 2.5 s
    assert refused.value.retry_after_ms == 2_500


def test_the_hint_is_bounded():
    with pytest.raises(Overloaded) as long_wait:
        admission(calm(oldest_due_wait_ms=600_000)).check()
    assert long_wait.value.retry_after_ms == MAX_RETRY_AFTER_MS


def test_a_backlog_of_low_tasks_refuses_low_submits_and_admits_higher_ones():
    gate = admission(low_backlog())
    gate.check(HIGH)
    gate.check(NORMAL)
    gate.check(0)   # unspecified is normal
    with pytest.raises(Overloaded) as refused:
        gate.check(LOW)
    assert "600 tasks of low priority or above, 540 or more (90% of the 60% of its heap's capacity of 1000" \
        in str(refused.value)


@pytest.mark.parametrize("sign, says", [
    ({"oldest_due_wait_ms": 1_001}, "the oldest due task of normal priority or above has waited 1001 ms"),
    ({"unread": 10_001}, "10001 messages of normal priority or above of owned partitions are unread"),
])
def test_each_class_is_judged_by_what_it_waits_behind(sign, says):
    quiet = Backlog(held=0, oldest_due_wait_ms=0, unread=0)
    behind_normal = Backlog(**{"held": 0, "oldest_due_wait_ms": 0, "unread": 0, **sign})
    load = Load(capacity=1_000, dispatched_total=0, shares=INTAKE_SHARES,
                ahead={HIGH: quiet, NORMAL: behind_normal, LOW: behind_normal})
    admission(load).check(HIGH)
    for cls, name in ((NORMAL, "normal"), (LOW, "low")):
        with pytest.raises(Overloaded, match=says.replace("normal", name)):
            admission(load).check(cls)
