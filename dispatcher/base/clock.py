"""Time, injected: the node asks a Clock, so tests can hold time still."""
from __future__ import annotations

import datetime as dt
import functools
import threading
import time


class Clock:
    movable = False
    """Whether a test moves this clock (MovableClock): then the node's timers that usually run on
    the monotonic clock (heartbeat leases) run on this one, so that they move with it."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def now(self) -> dt.datetime:
        return ms_to_datetime(self.now_ms())


class MovableClock(Clock):
    """The wall clock moved by an offset that only grows: `taskring dev`'s clock, moved by a test so
    that a delay, a retry backoff, a cron rule or a heartbeat timeout comes due at once. It may
    start at any time (`start_ms`) and then runs at the wall clock's pace between moves."""

    movable = True

    def __init__(self, start_ms: int | None = None):
        self._offset_ms = 0 if start_ms is None else start_ms - super().now_ms()
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return super().now_ms() + self._offset_ms

    def advance(self, ms: int) -> int:
        """Move forward by `ms` (>= 0: time never goes back, as the stored rows assume); returns the new now."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ValueError(f"advance: must be a whole number of milliseconds >= 0, got {ms!r}")
        with self._lock:
            self._offset_ms += ms
        return self.now_ms()


def ms_to_aware(ms: int) -> dt.datetime:
    """Unix ms as an aware UTC datetime (what validation takes as `now`)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


_EPOCH = dt.datetime(1970, 1, 1)


@functools.lru_cache(maxsize=8192)
def ms_to_datetime(ms: int) -> dt.datetime:
    """UTC, naive (as stored in DATETIME(3) columns), millisecond precision. Cached: the
    hot path converts every task's times, and a batch's tasks share a few milliseconds."""
    return _EPOCH + dt.timedelta(milliseconds=ms)


def datetime_to_ms(value: dt.datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


def rfc3339(value: dt.datetime) -> str:
    """A stored (naive UTC) or aware time as RFC 3339 UTC with milliseconds."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
