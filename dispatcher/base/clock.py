"""Time, injected: the node asks a Clock, so tests can hold time still."""
from __future__ import annotations

import datetime as dt
import functools
import time


class Clock:
    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def now(self) -> dt.datetime:
        return ms_to_datetime(self.now_ms())


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
