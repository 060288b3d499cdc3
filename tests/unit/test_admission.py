"""Admission control: which load is refused, with what message and retry-after hint."""
from __future__ import annotations

import grpc
import pytest

from dispatcher.api.admission import MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, Admission
from dispatcher.base.clock import Clock
from dispatcher.base.errors import Overloaded
from dispatcher.engine.load import Load


class FixedClock(Clock):
    def __init__(self) -> None:
        self.ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms


def admission(load: Load, clock: FixedClock | None = None) -> Admission:
    return Admission(load=lambda: load, max_wait_ms=1_000, max_unread=10_000, clock=clock or FixedClock())


def calm(**changes) -> Load:
    values = dict(held=100, capacity=1_000, oldest_due_wait_ms=0, unread=0, dispatched_total=0)
    values.update(changes)
    return Load(**values)


def test_a_node_keeping_up_admits():
    admission(calm()).check()
    admission(calm(held=899, oldest_due_wait_ms=1_000, unread=10_000)).check()   # bounds are inclusive


@pytest.mark.parametrize("load, says", [
    (calm(held=900), "the node holds 900 tasks, 90% or more of its heap's capacity (1000)"),
    (calm(oldest_due_wait_ms=1_001), "dispatch is behind: the oldest due task has waited 1001 ms (bound 1000 ms)"),
    (calm(unread=10_001), "intake is behind: 10001 messages of owned partitions are unread (bound 10000)"),
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
