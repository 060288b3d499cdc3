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

import binascii
import os
import threading
import time
import uuid
from collections.abc import Callable

_COUNTER_BITS = 12
_COUNTER_MAX = (1 << _COUNTER_BITS) - 1
_TS_MAX = (1 << 48) - 1

# An id is made of three pieces of text, so that making one is a few string joins:
#   "tttttttt-tttt-7"   unix_ts_ms and the version nibble: once per millisecond
#   "ccc-"              rand_a (the counter): from this table
#   "vrrr-rrrrrrrrrrrr" var=0b10 and rand_b (8 random bytes): made for many ids at once
# Formatting the 128-bit integer of each id cost more than the rest of a task's checks.
_COUNTER_TEXT = [f"{counter:03x}-" for counter in range(_COUNTER_MAX + 1)]
_TAIL_CHARS = 17
_TAILS_PER_DRAW = 256
_COUNTER_HEX = b"".join(b"%03x" % counter for counter in range(_COUNTER_MAX + 1))
_ID_TAIL_TEMPLATE = "000-0000-000000000000,"   # after the head: counter, tail, and a comma to split on
_ID_TAIL_CHARS = len(_ID_TAIL_TEMPLATE)
_VARIANT = bytes((byte & 0x3F) | 0x80 for byte in range(256))
"""A tail's first byte with its top two bits made the variant, 0b10."""


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class UuidV7Generator:
    """Makes monotonic UUIDv7 strings; thread-safe.

    `clock_ms` returns unix epoch milliseconds and `randbytes(n)` returns n random
    bytes; both are injected so tests can drive them. The random bits are drawn in
    blocks: 2 bytes to seed the counter of each new millisecond, and 8 bytes per id
    (rand_b), for _TAILS_PER_DRAW ids at a time.
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
        self._head = ""       # "tttttttt-tttt-7" of _last_ms; "" when it does not fit in 48 bits
        self._tails: list[str] = []

    def new(self) -> str:
        with self._lock:
            self._step(self._clock_ms())
            tails = self._tails or self._draw_tails()
            return self._head + _COUNTER_TEXT[self._counter] + tails.pop()

    def new_many(self, n: int) -> list[str]:
        """`n` ids, as n calls of new() would make them if the clock read the same for all
        of them: under one lock and one clock reading, each millisecond's run of counters
        made in one go (a batch's ids, for a fraction of n calls)."""
        ids: list[str] = []
        with self._lock:
            now_ms = self._clock_ms()
            while len(ids) < n:
                self._step(now_ms)
                first = self._counter
                self._counter = last = min(_COUNTER_MAX, first + n - len(ids) - 1)
                ids += self._run(first, last - first + 1)
        return ids

    def forget_drawn(self) -> None:
        """Drop the random bits drawn ahead (in a child after fork: the parent has them too)."""
        self._lock = threading.Lock()
        self._tails = []

    def _step(self, now_ms: int) -> None:
        """Move to the next id's millisecond and counter (the lock held)."""
        if now_ms > self._last_ms:
            self._start(now_ms)
        elif self._counter < _COUNTER_MAX:
            # Same millisecond, or the clock stepped back: count on.
            self._counter += 1
        else:
            # Counter exhausted: move into the next millisecond ourselves.
            self._start(self._last_ms + 1)
        if not self._head:
            raise ValueError(f"timestamp {self._last_ms} ms does not fit in 48 bits")

    def _start(self, ms: int) -> None:
        """Make `ms` the current millisecond; seed the counter with 11 bits (room to count)."""
        self._last_ms = ms
        self._counter = int.from_bytes(self._randbytes(2), "big") & (_COUNTER_MAX >> 1)
        if 0 <= ms <= _TS_MAX:
            h = f"{ms:012x}"
            self._head = f"{h[:8]}-{h[8:]}-7"
        else:
            self._head = ""

    def _run(self, first: int, n: int) -> list[str]:
        """The ids of the current millisecond with counters first..first+n-1, made in bulk.

        A join per id still cost more than the rest of a task's checks. Instead the ids
        are written into one ASCII buffer, "head ccc-vrrr-rrrrrrrrrrrr," after another:
        the fixed characters from a template repeated n times, and each variable
        character position of all n ids at once, by a strided slice assignment (19 of
        them, whatever n); then one decode and one split make the strings.
        """
        unit = len(self._head) + _ID_TAIL_CHARS
        buffer = bytearray((self._head + _ID_TAIL_TEMPLATE).encode("ascii") * n)
        counters = _COUNTER_HEX[3 * first:3 * (first + n)]
        for k in range(3):
            buffer[unit - 22 + k::unit] = counters[k::3]
        random = bytearray(self._randbytes(8 * n))
        random[0::8] = random[0::8].translate(_VARIANT)
        digits = binascii.hexlify(random)
        for k in range(16):
            buffer[unit - 18 + k + (k >= 4)::unit] = digits[k::16]
        ids = buffer.decode("ascii").split(",")
        ids.pop()   # after the last comma
        return ids

    def _tails_text(self, n: int) -> str:
        """`n` tails ("vrrr-rrrrrrrrrrrr"), one after the other, from 8 random bytes each.

        In a few C calls: the variant set on every 8th byte by a strided translate; the hex
        text with a '-' every 8 bytes, counted from 6 bytes of padding in front, puts the
        dash after the first 2 bytes of each tail."""
        data = bytearray(6) + self._randbytes(8 * n)
        data[6::8] = data[6::8].translate(_VARIANT)
        return data.hex("-", -8)[12:]

    def _draw_tails(self) -> list[str]:
        text = self._tails_text(_TAILS_PER_DRAW)
        self._tails = [text[at:at + _TAIL_CHARS] for at in range(0, len(text), _TAIL_CHARS)]
        return self._tails


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
# A forked child must not hand out the random bits its parent drew (nor wait on a lock
# that a thread of the parent held at the fork).
os.register_at_fork(after_in_child=_default.forget_drawn)


def new_task_id() -> str:
    """A new UUIDv7 in its canonical 36-character string form."""
    return _default.new()


def new_task_ids(n: int) -> list[str]:
    """`n` new ids at once (UuidV7Generator.new_many), in the order new_task_id would make them."""
    return _default.new_many(n)


def uuid7_unix_ms(task_id: str) -> int:
    """The unix-ms timestamp inside a UUIDv7 string (raises ValueError otherwise)."""
    u = uuid.UUID(task_id)
    if u.version != 7:
        raise ValueError(f"{task_id!r} is not a UUIDv7")
    return u.int >> 80
