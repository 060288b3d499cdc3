"""The outcomes of many deliveries, recorded in few transactions.

Each delivery ends with the outcomes of one executor call (one task type, often a
handful of tasks). A transaction per call paid its fixed cost, the fence check,
the row locks, the round trips and the commit's flush to disk, again and again
for a few rows: in profiles it was the node's largest single cost. The batcher
records, in one store call, everything that arrived while the previous call was
running: group commit without a timer, so an idle node records an outcome at once
and a busy one in large batches.

Requests of one call must agree on the epoch of every slot they share (a slot
that changed hands between two deliveries goes into a call of its own), and each
caller learns only the stale slots among its own. A failed call fails every
request in it; callers retry (engine._record), and the store's write is
conditional on (dispatched, attempt), so a repeat changes nothing.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence

from dispatcher.store import records as r

RecordOutcomes = Callable[[Sequence[r.OutcomeWrite], dict[int, int], dt.datetime], set[int]]


@dataclasses.dataclass
class _Request:
    writes: Sequence[r.OutcomeWrite]
    epochs: dict[int, int]
    now: dt.datetime
    done: asyncio.Future[set[int]]


class OutcomeBatcher:
    def __init__(self, record_outcomes: RecordOutcomes, *, max_writes: int, max_calls_in_flight: int = 2):
        self._record_outcomes = record_outcomes
        self._max_writes = max_writes
        self._max_calls = max_calls_in_flight
        self._pending: list[_Request] = []
        self._flushers: set[asyncio.Task] = set()
        self.calls = 0          # store calls made, for tests and the admin view
        self.writes = 0         # outcome writes sent in them

    async def record(self, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int], now: dt.datetime) -> set[int]:
        """Record `writes` (as TaskStore.record_outcomes does) together with whatever else
        is waiting; returns the stale slots among `epochs`. Raises what the store raised."""
        done: asyncio.Future[set[int]] = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(writes, epochs, now, done))
        if len(self._flushers) < self._max_calls:
            flusher = asyncio.create_task(self._flush_while_pending())
            self._flushers.add(flusher)
            flusher.add_done_callback(self._flushers.discard)
        return await done

    async def stop(self) -> None:
        """Wait for the calls in flight (their callers are waiting for them too)."""
        await asyncio.gather(*self._flushers, return_exceptions=True)

    async def _flush_while_pending(self) -> None:
        while self._pending:
            group = self._take_group()
            writes = [w for req in group for w in req.writes]
            epochs: dict[int, int] = {}
            for req in group:
                epochs.update(req.epochs)
            now = max(req.now for req in group)
            self.calls += 1
            self.writes += len(writes)
            try:
                stale = await asyncio.to_thread(self._record_outcomes, writes, epochs, now)
            except Exception as exc:
                for req in group:
                    if not req.done.done():
                        req.done.set_exception(exc)
                continue
            for req in group:
                if not req.done.done():
                    req.done.set_result({slot for slot in stale if slot in req.epochs})

    def _take_group(self) -> list[_Request]:
        """The oldest requests that fit in one call: at most max_writes writes (the first
        request always goes, whatever its size), one epoch per slot."""
        group: list[_Request] = []
        epochs: dict[int, int] = {}
        size = 0
        rest: list[_Request] = []
        for req in self._pending:
            fits = not group or size + len(req.writes) <= self._max_writes
            agrees = all(epochs.get(slot, epoch) == epoch for slot, epoch in req.epochs.items())
            if fits and agrees:
                group.append(req)
                epochs.update(req.epochs)
                size += len(req.writes)
            else:
                rest.append(req)
        self._pending = rest
        return group
