"""taskring_executors: how many executor instances are registered per task type.

The directory (membership/executors.py) has no event for "a type lost its last
executor" that is cheap to hook, so the node's observer refreshes the gauge from
what the directory knows every few seconds. A type seen once stays in the gauge
at 0 after its last executor leaves (until the node restarts): that drop to 0 is
what TaskringExecutorsGone alerts on, and a series that vanished would say nothing.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from prometheus_client import Gauge

# An instance that announces no task types handles any (executor_pool._handlers_of).
ANY_TYPE = "*"


class _Instance(Protocol):
    @property
    def task_types(self) -> Sequence[str]: ...


class ExecutorCount:
    def __init__(self, gauge: Gauge, known: Callable[[], Mapping[str, Sequence[_Instance]]]):
        self._gauge = gauge
        self._known = known
        self._seen: set[tuple[str, str]] = set()   # (namespace, task_type) ever counted

    def refresh(self) -> None:
        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        for namespace, instances in self._known().items():
            for inst in instances:
                for task_type in inst.task_types or (ANY_TYPE,):
                    counts[(namespace, task_type)] += 1
        self._seen.update(counts)
        for key in self._seen:
            self._gauge.labels(*key).set(counts.get(key, 0))
