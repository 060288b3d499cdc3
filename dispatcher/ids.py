"""Task ids: UUIDv7 (RFC 9562), monotonic within one process.

Layout of the 128 bits (RFC 9562, section 5.7)::

    unix_ts_ms (48) | ver=0b0111 (4) | rand_a (12) | var=0b10 (2) | rand_b (62)

rand_a is used as a counter (RFC 9562, section 6.2, method 1): the first id of a
millisecond seeds it with 11 random bits (the top bit left clear so at least 2,048
more ids fit in that millisecond), and every further id in the same millisecond
adds one. When it would overflow, or the wall clock steps back, the generator keeps
going from the last timestamp it used plus the counter, borrowing from the future
rather than ever going backwards. rand_b is fresh random bits on every id, so two
processes that hit the same millisecond and counter still differ.

Ids therefore sort (as strings or as integers) in the order one process made them,
and roughly by creation time across processes, which keeps the `tasks` primary key
append-mostly in InnoDB.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable

_COUNTER_BITS = 12
_COUNTER_MAX = (1 << _COUNTER_BITS) - 1
_TS_MAX = (1 << 48) - 1


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class UuidV7Generator:
    """Makes monotonic UUIDv7 strings; thread-safe.

    `clock_ms` returns unix epoch milliseconds and `randbytes(n)` returns n random
    bytes; both are injected so tests can drive them.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        randbytes: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._clock_ms = clock_ms
        self._randbytes = randbytes
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0

    def new(self) -> str:
        rand = int.from_bytes(self._randbytes(10), "big")
        rand_b = rand & ((1 << 62) - 1)
        seed = (rand >> 62) & (_COUNTER_MAX >> 1)  # 11 bits: leaves room to count
        with self._lock:
            now_ms = self._clock_ms()
            if now_ms > self._last_ms:
                self._last_ms = now_ms
                self._counter = seed
            elif self._counter < _COUNTER_MAX:
                # Same millisecond, or the clock stepped back: count on.
                self._counter += 1
            else:
                # Counter exhausted: move into the next millisecond ourselves.
                self._last_ms += 1
                self._counter = seed
            ts, counter = self._last_ms, self._counter
        if not 0 <= ts <= _TS_MAX:
            raise ValueError(f"timestamp {ts} ms does not fit in 48 bits")
        value = (ts << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand_b
        # str(uuid.UUID(int=value)), without building the UUID object on the hot path.
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _BufferedRandom:
    """os.urandom, read 4 KiB at a time: a call per id released the GIL on every id
    and, next to busy threads, cost 25 times as much as the slice."""

    def __init__(self, chunk: int = 4096):
        self._chunk = chunk
        self._buffer = b""
        self._at = 0     # next unread byte: slicing the rest off instead copied it on every id
        self._lock = threading.Lock()

    def __call__(self, n: int) -> bytes:
        with self._lock:
            if len(self._buffer) - self._at < n:
                self._buffer, self._at = os.urandom(max(self._chunk, n)), 0
            out = self._buffer[self._at:self._at + n]
            self._at += n
            return out


_default = UuidV7Generator(randbytes=_BufferedRandom())


def new_task_id() -> str:
    """A new UUIDv7 in its canonical 36-character string form."""
    return _default.new()


def uuid7_unix_ms(task_id: str) -> int:
    """The unix-ms timestamp inside a UUIDv7 string (raises ValueError otherwise)."""
    u = uuid.UUID(task_id)
    if u.version != 7:
        raise ValueError(f"{task_id!r} is not a UUIDv7")
    return u.int >> 80
