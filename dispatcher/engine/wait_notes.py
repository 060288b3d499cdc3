"""Why a due task waits, and under what name it is parked.

The dispatch loop parks a task held back by a limit under the limit's name (due_queue.py
`park`): the type's concurrency limit, its retry cap or rate (limits.py, rates.py), or, for
limits per key and fair shares, a name carrying the key or the flow. `metric_limit` folds the
per-key names into one label. `WaitNotes` writes, once per attempt and limit, the reason a
task waits (`concurrency limit per_key tenant:7 (at most 3 running)`), a few times a second in
the background, so that GetTask and the console can show it without a write on the hot path.
"""
from __future__ import annotations

import asyncio
import logging

from dispatcher.engine.due import Due
from dispatcher.engine.fair_share import FAIR_SHARE
from dispatcher.engine.limits import CONCURRENCY, PER_KEY, RETRY_CAP
from dispatcher.engine.rates import RATE, RATE_PER_KEY
from dispatcher.policy.scheduling import TypeLimits
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol

log = logging.getLogger(__name__)

KEY_PREFIX = "key:"
"""A task waiting on its key's limit is parked under the limit "key:<its key>"."""
RATE_KEY_PREFIX = "rate_key:"
"""A task waiting on its key's rate is parked under the limit "rate_key:<its key>"."""
FAIR_PREFIX = "fair:"
"""A task of a fair type waiting for its flow's turn is parked under the limit "fair:<its flow>"."""

NOTE_EVERY_S = 0.5
"""How often the wait notes of tasks newly held at a limit are written."""


def metric_limit(parked_under: str) -> str:
    """The `limit` label of a parking limit: per-key limits are one label, whatever the key."""
    if parked_under.startswith(KEY_PREFIX):
        return PER_KEY
    if parked_under.startswith(RATE_KEY_PREFIX):
        return RATE_PER_KEY
    if parked_under.startswith(FAIR_PREFIX):
        return FAIR_SHARE
    return parked_under


def wait_reason(limits: TypeLimits | None, limit: str) -> str:
    """What GetTask shows of a task waiting at `limit` (a parking limit)."""
    if limits is None:
        return limit
    if limit == CONCURRENCY:
        return f"concurrency limit per_type (at most {limits.max_running} running)"
    if limit == RETRY_CAP:
        return f"retry cap (at most {limits.max_retrying} retries running)"
    if limit.startswith(KEY_PREFIX):
        return f"concurrency limit per_key {limit[len(KEY_PREFIX):]} (at most {limits.max_running_per_key} running)"
    if limit == RATE and limits.rate is not None:
        return f"rate limit per_type ({limits.rate.starts} starts per {limits.rate.period_ms} ms)"
    if limit.startswith(RATE_KEY_PREFIX) and limits.rate_per_key is not None:
        rate = limits.rate_per_key
        return f"rate limit per_key {limit[len(RATE_KEY_PREFIX):]} ({rate.starts} starts per {rate.period_ms} ms)"
    return limit


class WaitNotes:
    """The notes of why tasks wait, gathered on the event loop and written in the background."""

    def __init__(self, store: TaskStoreProtocol):
        self._store = store
        self._notes: list[r.WaitNote] = []
        self._due = False

    def note(self, limits: TypeLimits | None, limit: str, dues: list[Due]) -> None:
        """Note, once per attempt and limit, why these tasks wait (written within NOTE_EVERY_S)."""
        fresh = [d for d in dues if d.wait_noted != limit]
        if not fresh:
            return
        reason = wait_reason(limits, limit)
        for d in fresh:
            d.wait_noted = limit
            self._notes.append(r.WaitNote(d.task_id, d.slot, d.attempt, reason))
        if not self._due:
            self._due = True
            asyncio.get_running_loop().call_later(NOTE_EVERY_S, self._write)

    def _write(self) -> None:
        notes, self._notes, self._due = self._notes, [], False
        task = asyncio.ensure_future(asyncio.to_thread(self._store.note_waiting, notes))
        task.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("wait notes not written (GetTask will not show why those tasks wait): %s", task.exception())
