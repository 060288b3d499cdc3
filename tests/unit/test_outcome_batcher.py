"""OutcomeBatcher: outcomes that arrive while a store call runs share the next call."""
from __future__ import annotations

import asyncio
import datetime as dt
import threading

import pytest

from dispatcher.engine.outcome_batcher import OutcomeBatcher
from dispatcher.store import records as r

T0 = dt.datetime(2030, 1, 1)


def write(task_id: str, slot: int = 0) -> r.OutcomeWrite:
    return r.OutcomeWrite(task_id, slot, 1, result=r.SUCCEEDED, events=())


class GatedStore:
    """record_outcomes that blocks until released, and remembers each call."""

    def __init__(self, stale: set[int] | None = None, fail: int = 0):
        self.calls: list[tuple[list[str], dict[int, int], dt.datetime]] = []
        self.gate = threading.Event()
        self.stale = stale or set()
        self.fail = fail

    def record_outcomes(self, writes, epochs, now):
        self.calls.append(([w.task_id for w in writes], dict(epochs), now))
        assert self.gate.wait(5)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("store refused")
        return {s for s in self.stale if s in epochs}


async def until(condition, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_outcomes_arriving_during_a_call_share_the_next_one():
    async def main():
        store = GatedStore()
        batcher = OutcomeBatcher(store.record_outcomes, max_writes=100, max_calls_in_flight=1)
        first = asyncio.create_task(batcher.record([write("a")], {0: 1}, T0))
        await until(lambda: len(store.calls) == 1, "the first call")
        later = [asyncio.create_task(batcher.record([write(f"b{i}")], {0: 1}, T0 + dt.timedelta(seconds=i)))
                 for i in range(5)]
        await asyncio.sleep(0.05)
        assert len(store.calls) == 1          # the others wait for the call in flight
        store.gate.set()
        await asyncio.gather(first, *later)
        await batcher.stop()
        assert [c[0] for c in store.calls] == [["a"], [f"b{i}" for i in range(5)]]
        assert store.calls[1][2] == T0 + dt.timedelta(seconds=4)   # the latest `now` of the group
        assert (batcher.calls, batcher.writes) == (2, 6)
    asyncio.run(main())


def test_each_caller_learns_only_its_own_stale_slots():
    async def main():
        store = GatedStore(stale={1})
        store.gate.set()
        batcher = OutcomeBatcher(store.record_outcomes, max_writes=100, max_calls_in_flight=1)
        results = await asyncio.gather(batcher.record([write("a", 0)], {0: 1}, T0),
                                       batcher.record([write("b", 1)], {1: 3}, T0))
        assert results == [set(), {1}]
    asyncio.run(main())


def test_a_slot_under_two_epochs_is_never_in_one_call():
    async def main():
        store = GatedStore()
        batcher = OutcomeBatcher(store.record_outcomes, max_writes=100, max_calls_in_flight=1)
        blocker = asyncio.create_task(batcher.record([write("x", 5)], {5: 1}, T0))
        await until(lambda: len(store.calls) == 1, "the first call")
        old = asyncio.create_task(batcher.record([write("old", 0)], {0: 1}, T0))
        new = asyncio.create_task(batcher.record([write("new", 0)], {0: 2}, T0))
        other = asyncio.create_task(batcher.record([write("other", 1)], {1: 1}, T0))
        await asyncio.sleep(0.02)
        store.gate.set()
        await asyncio.gather(blocker, old, new, other)
        assert [(c[0], c[1]) for c in store.calls] == [
            (["x"], {5: 1}), (["old", "other"], {0: 1, 1: 1}), (["new"], {0: 2})]
    asyncio.run(main())


def test_a_call_is_bounded_by_max_writes_but_a_large_request_still_goes():
    async def main():
        store = GatedStore()
        store.gate.set()
        batcher = OutcomeBatcher(store.record_outcomes, max_writes=3, max_calls_in_flight=1)
        big = [write(f"big{i}") for i in range(5)]
        await asyncio.gather(batcher.record(big, {0: 1}, T0), batcher.record([write("s1")], {0: 1}, T0),
                             batcher.record([write("s2")], {0: 1}, T0))
        assert [len(c[0]) for c in store.calls] == [5, 2]
    asyncio.run(main())


def test_a_failed_call_fails_every_request_in_it_and_the_next_call_still_runs():
    async def main():
        store = GatedStore(fail=1)
        batcher = OutcomeBatcher(store.record_outcomes, max_writes=100, max_calls_in_flight=1)
        first = asyncio.create_task(batcher.record([write("a")], {0: 1}, T0))
        await until(lambda: len(store.calls) == 1, "the first call")
        second = asyncio.create_task(batcher.record([write("b")], {0: 1}, T0))
        store.gate.set()
        with pytest.raises(RuntimeError, match="store refused"):
            await first
        assert await second == set()
        assert [c[0] for c in store.calls] == [["a"], ["b"]]
    asyncio.run(main())
