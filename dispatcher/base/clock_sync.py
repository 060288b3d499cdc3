"""One time for the whole cluster: the store's.

Every due time is an absolute instant, and the node that holds a task compares it
with its own clock. A node whose clock runs 30 s ahead would start every task 30 s
early (and one 30 s behind, 30 s late), and the API of such a node would stamp
wrong due times on what it accepts. So a node does not trust its own wall clock:
`SyncedClock` is the local clock plus an offset, and `ClockSync` measures that
offset against the store's clock (MariaDB's NOW(6)) when the node starts and
every `interval_s` after, taking the sample with the shortest round trip (its
error is at most half that trip). Every node measures against the same server,
so the cluster agrees on what "now" is even when the machines do not.

The offset is exported (taskring_clock_offset_seconds) and logged when it passes
`warn_ms`: a machine that far off has a broken time service, which is worth
fixing even though the node is not fooled by it.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

from dispatcher.base.clock import Clock
from dispatcher.base.periodic_thread import PeriodicThread

log = logging.getLogger(__name__)


class SyncedClock(Clock):
    """The local wall clock corrected by `offset_ms` (set by ClockSync)."""

    def __init__(self, wall_ms: Callable[[], float] = lambda: time.time() * 1000) -> None:
        self._wall_ms = wall_ms
        self.offset_ms = 0

    def now_ms(self) -> int:
        return int(self._wall_ms()) + self.offset_ms


class ClockSync:
    def __init__(self, clock: SyncedClock, server_time_ms: Callable[[], int], *, interval_s: float = 30.0,
                 samples: int = 5, warn_ms: int = 500, on_offset: Callable[[float], None] = lambda s: None,
                 wall_ms: Callable[[], float] = lambda: time.time() * 1000):
        self._clock = clock
        self._server_time_ms = server_time_ms
        self._interval_s = interval_s
        self._samples = samples
        self._warn_ms = warn_ms
        self._on_offset = on_offset
        self._wall_ms = wall_ms
        self._follower = PeriodicThread("taskring-clock-sync", interval_s, self._measure_again)
        self._started = False

    def start(self) -> None:
        """Measure once now (a node must not act on a wrong clock even briefly), then
        keep measuring on a thread of its own."""
        if self._started:
            return
        self.measure()
        self._started = True
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def measure(self) -> int:
        """Set and return the offset (store minus local, ms) from the best of a few samples."""
        best: tuple[float, float] | None = None  # (round trip, offset)
        for _ in range(self._samples):
            sent = self._wall_ms()
            server = self._server_time_ms()
            back = self._wall_ms()
            sample = (back - sent, server - (sent + back) / 2)
            if best is None or sample[0] < best[0]:
                best = sample
        assert best is not None  # samples >= 1
        offset = round(best[1])
        if abs(offset) > self._warn_ms:
            log.warning("this machine's clock is %+d ms off the store's (round trip %.1f ms): following the store's",
                        -offset, best[0])
        self._clock.offset_ms = offset
        self._on_offset(offset / 1000)
        return offset

    def _measure_again(self) -> None:
        try:
            self.measure()
        except Exception:
            log.exception("measuring the clock offset failed; keeping %d ms", self._clock.offset_ms)
