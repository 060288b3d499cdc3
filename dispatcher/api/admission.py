"""Admission control: a node that cannot keep up says so instead of accepting more.

Accepting faster than a node can dispatch only moves the queue from the caller to
the node, where it grows into lateness for every task behind it and, past the
heap's capacity, into memory. So before a submit writes anything, the API asks
`Admission.check()`, which looks at three signs that this node is behind:

- its heap (and the overflow behind it) is nearly full;
- the oldest task due in its heap has waited longer than `max_wait_ms` (executors
  saturated, the store slow, or ownership in doubt);
- its owned Kafka partitions hold more than `max_unread` messages it has not read.

Any of them answers RESOURCE_EXHAUSTED with a retry-after hint (how long the
backlog takes to clear at the rate this node has been dispatching), in the
message and as `retry-after-ms` trailing metadata. Nothing is written for a
refused request, so it may be retried as is; the SDK does so with backoff when
every task carries a task_id (a retried submit is then idempotent anyway).

The signs are this node's own: in a cluster, a node refuses when it is behind on
the slots it owns, whichever slots the refused tasks belong to (each node is
usually the entry point of a share of the traffic proportional to its slots).
"""
from __future__ import annotations

from collections.abc import Callable

from dispatcher.base.clock import Clock
from dispatcher.base.errors import Overloaded
from dispatcher.engine.load import Load

HEAP_FILL = 0.9
"""Refuse once the heap and its overflow hold this share of the heap's capacity."""
MIN_RETRY_AFTER_MS, MAX_RETRY_AFTER_MS = 100, 10_000
_RATE_FLOOR_PER_S = 100.0     # never promise a drain faster than the rate seen, nor divide by 0


class Admission:
    def __init__(self, *, load: Callable[[], Load], max_wait_ms: int, max_unread: int, clock: Clock | None = None):
        self._load = load
        self._max_wait_ms = max_wait_ms
        self._max_unread = max_unread
        self._clock = clock or Clock()
        self._rate_per_s = _RATE_FLOOR_PER_S
        self._sample: tuple[int, int] | None = None   # (ms, dispatched_total) of the last rate sample

    def check(self) -> None:
        """Raise Overloaded (RESOURCE_EXHAUSTED) when this node is behind; else return."""
        load = self._load()
        rate = self._update_rate(load)
        if load.held >= HEAP_FILL * load.capacity:
            excess = load.held - HEAP_FILL * load.capacity / 2
            raise Overloaded(f"the node holds {load.held} tasks, {HEAP_FILL:.0%} or more of its heap's capacity"
                             f" ({load.capacity})", self._retry_after_ms(excess / rate * 1000))
        if load.oldest_due_wait_ms > self._max_wait_ms:
            raise Overloaded(f"dispatch is behind: the oldest due task has waited {load.oldest_due_wait_ms} ms"
                             f" (bound {self._max_wait_ms} ms)", self._retry_after_ms(load.oldest_due_wait_ms))
        if load.unread > self._max_unread:
            raise Overloaded(f"intake is behind: {load.unread} messages of owned partitions are unread"
                             f" (bound {self._max_unread})",
                             self._retry_after_ms((load.unread - self._max_unread / 2) / rate * 1000))

    def _update_rate(self, load: Load) -> float:
        """Dispatches per second, smoothed over samples at least a second apart."""
        now = self._clock.now_ms()
        if self._sample is None:
            self._sample = (now, load.dispatched_total)
        elif now - self._sample[0] >= 1000:
            seen = (load.dispatched_total - self._sample[1]) * 1000 / (now - self._sample[0])
            self._rate_per_s = max(_RATE_FLOOR_PER_S, (self._rate_per_s + seen) / 2)
            self._sample = (now, load.dispatched_total)
        return self._rate_per_s

    @staticmethod
    def _retry_after_ms(estimate_ms: float) -> int:
        return int(min(MAX_RETRY_AFTER_MS, max(MIN_RETRY_AFTER_MS, estimate_ms)))
