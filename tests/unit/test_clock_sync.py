"""ClockSync: a node follows the store's clock, whatever its own says."""
from __future__ import annotations

import itertools

from dispatcher.base.clock_sync import ClockSync, SyncedClock


class Wall:
    """A local clock 30 s ahead of the store, read with a scripted delay per call."""

    def __init__(self, steps_ms):
        self.t = 1_900_000_030_000.0
        self._steps = itertools.cycle(steps_ms)

    def __call__(self) -> float:
        self.t += next(self._steps)
        return self.t


def test_the_offset_comes_from_the_sample_with_the_shortest_round_trip():
    # Round trips alternate 40 ms (the store answers 20 ms in) and 2 ms (1 ms in).
    wall = Wall([20, 20, 1, 1])
    server_at = []

    def server_ms() -> int:
        server_at.append(wall.t - 30_000)   # the store is 30 s behind this machine
        return int(wall.t - 30_000)

    clock = SyncedClock(wall_ms=wall)
    offsets: list[float] = []
    sync = ClockSync(clock, server_ms, samples=4, on_offset=offsets.append, wall_ms=wall)
    assert sync.measure() == -30_000
    assert clock.offset_ms == -30_000 and offsets == [-30.0]
    # A corrected clock reads the store's time, not this machine's.
    assert abs(clock.now_ms() - (wall.t - 30_000)) <= 1


def test_an_uncorrected_clock_is_the_wall_clock():
    clock = SyncedClock(wall_ms=lambda: 1234.9)
    assert clock.now_ms() == 1234
