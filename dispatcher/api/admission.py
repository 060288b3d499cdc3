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

Each sign is read for the priority class of what is submitted, over what a task of that
class would wait behind: the tasks of its class and of the classes above it (a batch is
judged by its lowest class). So a backlog of low tasks refuses low submits, and high ones
are still taken: dispatch picks them first (engine/ready.py), and so they are not behind.
The heap-fill sign uses the share of the heap the class's intake may fill (60% for low).

The signs are this node's own: in a cluster, a node refuses when it is behind on
the slots it owns, whichever slots the refused tasks belong to (each node is
usually the entry point of a share of the traffic proportional to its slots).
"""
from __future__ import annotations

from collections.abc import Callable

from dispatcher.base.clock import Clock
from dispatcher.base.errors import Overloaded
from dispatcher.engine.load import Load
from dispatcher.engine.ready import HIGH, LOW, NORMAL, priority_class

_CLASS_NAMES = {HIGH: "high", NORMAL: "normal", LOW: "low"}

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

    def check(self, priority: int = NORMAL) -> None:
        """Raise Overloaded (RESOURCE_EXHAUSTED) when this node is behind for tasks of
        `priority` (pb.Priority; unspecified is normal); else return."""
        load = self._load()
        rate = self._update_rate(load)
        cls = priority_class(priority)
        behind, name = load.ahead[cls], _CLASS_NAMES[cls]
        bound = HEAP_FILL * load.shares[cls] * load.capacity
        if behind.held >= bound:
            raise Overloaded(f"the node holds {behind.held} tasks of {name} priority or above, {bound:.0f} or more"
                             f" ({HEAP_FILL:.0%} of the {load.shares[cls]:.0%} of its heap's capacity of"
                             f" {load.capacity} that {name} tasks may fill)",
                             self._retry_after_ms((behind.held - bound / 2) / rate * 1000))
        if behind.oldest_due_wait_ms > self._max_wait_ms:
            raise Overloaded(f"dispatch is behind: the oldest due task of {name} priority or above has waited"
                             f" {behind.oldest_due_wait_ms} ms (bound {self._max_wait_ms} ms)",
                             self._retry_after_ms(behind.oldest_due_wait_ms))
        if behind.unread > self._max_unread:
            raise Overloaded(f"intake is behind: {behind.unread} messages of {name} priority or above of owned"
                             f" partitions are unread (bound {self._max_unread})",
                             self._retry_after_ms((behind.unread - self._max_unread / 2) / rate * 1000))

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
