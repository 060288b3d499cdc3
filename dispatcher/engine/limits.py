"""Concurrency limits at the slot's owner: at most N attempts of a task type running at once.

A task type lives in one slot and a slot has one owner under an epoch, so the owner can count
a type's running attempts in memory and say no at dispatch, before any executor capacity is
reserved: an over-limit task waits (parked in the due queue, due_queue.py), is not failed, not
retried and costs no executor slot. No hold is stored anywhere: it is carried by the `Due`
that took it (`Due.limit_held`), and released exactly once, when that attempt leaves the
dispatch loop's batch (its outcome recorded, it was given back, the store did not dispatch
it, or it went back to the queue for want of executor room).

What the owner cannot see is an attempt another owner started: after a crash, the new owner's
claim puts the crashed owner's `dispatched` rows back to `pending` while their executors may
still run them. Those come in as ghosts (`add_ghosts`): counted as running until their lease
(dispatch time + timeout + grace) has passed, then dropped; so a limit is conservative in
doubt, never over-admitting. A clean handoff needs none: the old owner drains its attempts
before it lets the slot go (engine.py `slot_revoked`).
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from dispatcher.engine.due import Due
from dispatcher.policy.scheduling import TypeLimits

TypeKey = tuple[str, str]
"""(namespace, task_type)."""


class ConcurrencyGate:
    def __init__(self, limits: Mapping[TypeKey, TypeLimits] | None = None):
        self._limits: Mapping[TypeKey, TypeLimits] = dict(limits or {})
        self._running: dict[TypeKey, int] = {}
        # Per type, a heap of (until_ms, slot): attempts of an earlier owner that may still run.
        self._ghosts: dict[TypeKey, list[tuple[int, int]]] = {}

    def limit_of(self, key: TypeKey) -> int | None:
        """The type's limit, or None: no limit (the common case, one dict lookup per type per batch)."""
        limits = self._limits.get(key)
        return None if limits is None else limits.max_running

    def limited_types(self) -> list[TypeKey]:
        return list(self._limits)

    def room(self, key: TypeKey, limit: int, now_ms: int) -> int:
        """How many more attempts of the type may start now."""
        return max(0, limit - self._running.get(key, 0) - self._live_ghosts(key, now_ms))

    def take(self, key: TypeKey, dues: Iterable[Due]) -> None:
        """Each of `dues` starts holding one of the type's places."""
        n = 0
        for d in dues:
            d.limit_held = True
            n += 1
        if n:
            self._running[key] = self._running.get(key, 0) + n

    def release(self, dues: Iterable[Due]) -> dict[TypeKey, int]:
        """The holds of `dues` that still hold one (any other is skipped: a hold is released
        once); returns the places freed per type."""
        freed: dict[TypeKey, int] = {}
        for d in dues:
            if d.limit_held:
                d.limit_held = False
                task = d.task
                key = (task.namespace, task.task_type)
                freed[key] = freed.get(key, 0) + 1
        for key, n in freed.items():
            left = self._running[key] - n
            if left:
                self._running[key] = left
            else:
                del self._running[key]
        return freed

    def add_ghosts(self, slot: int, ghosts: Iterable[tuple[TypeKey, int]]) -> None:
        """Attempts of `slot` an earlier owner started, each (type, until_ms): counted as
        running until then. Only types with a limit are kept."""
        for key, until_ms in ghosts:
            if key in self._limits:
                heapq.heappush(self._ghosts.setdefault(key, []), (until_ms, slot))

    def drop_slots(self, slots: set[int]) -> None:
        """The ghosts of slots that left this node: their next owner counts them."""
        for key, ghosts in list(self._ghosts.items()):
            kept = [g for g in ghosts if g[1] not in slots]
            if len(kept) != len(ghosts):
                heapq.heapify(kept)
                if kept:
                    self._ghosts[key] = kept
                else:
                    del self._ghosts[key]

    def next_ghost_expiry_ms(self) -> int | None:
        """When the earliest ghost stops counting (the dispatch loop wakes then)."""
        heads = [ghosts[0][0] for ghosts in self._ghosts.values() if ghosts]
        return min(heads) if heads else None

    def _live_ghosts(self, key: TypeKey, now_ms: int) -> int:
        ghosts = self._ghosts.get(key)
        if not ghosts:
            return 0
        while ghosts and ghosts[0][0] <= now_ms:
            heapq.heappop(ghosts)
        if not ghosts:
            del self._ghosts[key]
            return 0
        return len(ghosts)

    def running(self) -> dict[TypeKey, int]:
        """Held places per limited type: this owner's attempts and live ghosts (for metrics)."""
        out = dict(self._running)
        for key, ghosts in self._ghosts.items():
            out[key] = out.get(key, 0) + len(ghosts)
        return out
