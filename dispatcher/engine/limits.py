"""Limits at the slot's owner: at most N attempts of a task type running at once, at most M
of them retries.

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
CONCURRENCY, RETRY_CAP = "concurrency", "retry_cap"
"""The limits a task can wait on (the `limit` label of the metrics)."""
TYPE_PLACE, RETRY_PLACE = 1, 2
"""The bits of `Due.limit_held`: a place under the type's concurrency limit, under its retry cap."""
UNLIMITED = 1 << 62


class ConcurrencyGate:
    def __init__(self, limits: Mapping[TypeKey, TypeLimits] | None = None):
        self._limits: Mapping[TypeKey, TypeLimits] = dict(limits or {})
        self._running: dict[TypeKey, int] = {}
        self._retrying: dict[TypeKey, int] = {}
        # Per type, heaps of (until_ms, slot): attempts of an earlier owner that may still run,
        # all of them, and those that were retries.
        self._ghosts: dict[TypeKey, list[tuple[int, int]]] = {}
        self._retry_ghosts: dict[TypeKey, list[tuple[int, int]]] = {}

    def limits_of(self, key: TypeKey) -> TypeLimits | None:
        """The type's limits, or None (the common case: one dict lookup per type per batch)."""
        return self._limits.get(key)

    def limited_types(self) -> list[TypeKey]:
        return list(self._limits)

    def room(self, key: TypeKey, now_ms: int) -> int:
        """How many more attempts of the type may start now (UNLIMITED without a concurrency limit)."""
        limits = self._limits.get(key)
        if limits is None or limits.max_running is None:
            return UNLIMITED
        return max(0, limits.max_running - self._running.get(key, 0) - _live(self._ghosts, key, now_ms))

    def retry_room(self, key: TypeKey, now_ms: int) -> int:
        """How many more retries of the type may start now (UNLIMITED without a retry cap)."""
        limits = self._limits.get(key)
        if limits is None or limits.max_retrying is None:
            return UNLIMITED
        return max(0, limits.max_retrying - self._retrying.get(key, 0) - _live(self._retry_ghosts, key, now_ms))

    def take(self, key: TypeKey, dues: Iterable[Due]) -> None:
        """Each of `dues` starts holding its places: one under the type's limit, and one under
        its retry cap if it is a retry and the type has one."""
        limits = self._limits[key]
        capped = limits.max_retrying is not None
        n = retries = 0
        for d in dues:
            if capped and d.attempt >= 2:
                d.limit_held = TYPE_PLACE | RETRY_PLACE
                retries += 1
            else:
                d.limit_held = TYPE_PLACE
            n += 1
        if n:
            self._running[key] = self._running.get(key, 0) + n
        if retries:
            self._retrying[key] = self._retrying.get(key, 0) + retries

    def release(self, dues: Iterable[Due]) -> dict[TypeKey, int]:
        """The places `dues` still hold (any other is skipped: a place is released once);
        returns the attempts whose places were freed, per type."""
        freed: dict[TypeKey, int] = {}
        retries: dict[TypeKey, int] = {}
        for d in dues:
            held = d.limit_held
            if held:
                d.limit_held = 0
                task = d.task
                key = (task.namespace, task.task_type)
                freed[key] = freed.get(key, 0) + 1
                if held & RETRY_PLACE:
                    retries[key] = retries.get(key, 0) + 1
        _subtract(self._running, freed)
        _subtract(self._retrying, retries)
        return freed

    def add_ghosts(self, slot: int, ghosts: Iterable[tuple[TypeKey, int, bool]]) -> None:
        """Attempts of `slot` an earlier owner started, each (type, until_ms, was a retry):
        counted as running until then. Only types with limits are kept."""
        for key, until_ms, retry in ghosts:
            if key in self._limits:
                heapq.heappush(self._ghosts.setdefault(key, []), (until_ms, slot))
                if retry:
                    heapq.heappush(self._retry_ghosts.setdefault(key, []), (until_ms, slot))

    def drop_slots(self, slots: set[int]) -> None:
        """The ghosts of slots that left this node: their next owner counts them."""
        for table in (self._ghosts, self._retry_ghosts):
            for key, ghosts in list(table.items()):
                kept = [g for g in ghosts if g[1] not in slots]
                if len(kept) != len(ghosts):
                    heapq.heapify(kept)
                    if kept:
                        table[key] = kept
                    else:
                        del table[key]

    def next_ghost_expiry_ms(self) -> int | None:
        """When the earliest ghost stops counting (the dispatch loop wakes then)."""
        heads = [ghosts[0][0] for ghosts in self._ghosts.values() if ghosts]
        return min(heads) if heads else None

    def held(self) -> dict[tuple[str, str, str], int]:
        """Places held per (namespace, task_type, limit): this owner's attempts and live ghosts
        (for the metrics)."""
        out: dict[tuple[str, str, str], int] = {}
        for limit, counts, ghosts in ((CONCURRENCY, self._running, self._ghosts),
                                      (RETRY_CAP, self._retrying, self._retry_ghosts)):
            for key in set(counts) | set(ghosts):
                out[(*key, limit)] = counts.get(key, 0) + len(ghosts.get(key, ()))
        return out

    def running(self) -> dict[TypeKey, int]:
        """Attempts holding a place under their type's limits, and live ghosts, per type."""
        out = dict(self._running)
        for key, ghosts in self._ghosts.items():
            out[key] = out.get(key, 0) + len(ghosts)
        return out


def _live(table: dict[TypeKey, list[tuple[int, int]]], key: TypeKey, now_ms: int) -> int:
    """The ghosts of `key` whose lease has not run out, dropping the others."""
    ghosts = table.get(key)
    if not ghosts:
        return 0
    while ghosts and ghosts[0][0] <= now_ms:
        heapq.heappop(ghosts)
    if not ghosts:
        del table[key]
        return 0
    return len(ghosts)


def _subtract(counts: dict[TypeKey, int], freed: dict[TypeKey, int]) -> None:
    for key, n in freed.items():
        left = counts[key] - n
        if left:
            counts[key] = left
        else:
            del counts[key]
