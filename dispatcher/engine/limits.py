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
import json
from collections.abc import Iterable, Mapping

from dispatcher.base.errors import InvalidArgument
from dispatcher.engine.due import Due
from dispatcher.policy.key_template import render_key
from dispatcher.policy.scheduling import TypeLimits
from taskring.wire import pb

TypeKey = tuple[str, str]
"""(namespace, task_type)."""
CONCURRENCY, RETRY_CAP, PER_KEY = "concurrency", "retry_cap", "per_key"
"""The limits a task can wait on (the `limit` label of the metrics; no key is a label)."""
TYPE_PLACE, RETRY_PLACE, KEY_PLACE = 1, 2, 4
"""The bits of `Due.limit_held`: a place under the type's concurrency limit, under its retry cap,
under its key's limit."""
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
        # Per (type, limit key): attempts holding a place of the key, and ghosts of the key.
        self._running_key: dict[tuple[TypeKey, str], int] = {}
        self._key_ghosts: dict[tuple[TypeKey, str], list[tuple[int, int]]] = {}

    def set_limits(self, limits: Mapping[TypeKey, TypeLimits]) -> None:
        """New limits (the policies file changed). The places held stay held and are released
        as before; a type without limits now lets what waited at them go (dispatch.py)."""
        self._limits = dict(limits)

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

    def key_room(self, key: TypeKey, limit_key: str, now_ms: int) -> int:
        """How many more attempts of the type with this limit key may start now."""
        limits = self._limits.get(key)
        if limits is None or limits.max_running_per_key is None:
            return UNLIMITED
        both = (key, limit_key)
        return max(0, limits.max_running_per_key - self._running_key.get(both, 0)
                   - _live(self._key_ghosts, both, now_ms))

    def key_of(self, key: TypeKey, due: Due) -> str | None:
        """The due task's key under its type's per-key limit (None: the type has none); worked
        out from its payload once and kept on it. A payload without the template's fields
        (submitted before the template was declared) has the key "", shared by all such."""
        if due.limit_key is None:
            due.limit_key = self.key_of_task(key, due.task)
        return due.limit_key

    def key_of_task(self, key: TypeKey, task: pb.Task) -> str | None:
        """key_of, for a task (its payload parsed: only types with a per-key limit pay this)."""
        limits = self._limits.get(key)
        if limits is None or limits.key is None:
            return None
        try:
            return render_key(limits.key, json.loads(task.payload_json or "{}"), "payload_json", "limit key")
        except (InvalidArgument, ValueError):
            return ""

    def take(self, key: TypeKey, dues: Iterable[Due]) -> None:
        """Each of `dues` starts holding its places: one under the type's limit, one under its
        retry cap if it is a retry and the type has one, one under its key's limit if the type
        has per-key limits (key_of has worked its key out)."""
        limits = self._limits[key]
        capped = limits.max_retrying is not None
        keyed = limits.max_running_per_key is not None
        n = retries = 0
        for d in dues:
            held = TYPE_PLACE
            if capped and d.attempt >= 2:
                held |= RETRY_PLACE
                retries += 1
            if keyed and d.limit_key is not None:
                held |= KEY_PLACE
                both = (key, d.limit_key)
                self._running_key[both] = self._running_key.get(both, 0) + 1
            d.limit_held = held
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
                if held & KEY_PLACE and d.limit_key is not None:
                    both = (key, d.limit_key)
                    left = self._running_key[both] - 1
                    if left:
                        self._running_key[both] = left
                    else:
                        del self._running_key[both]
        _subtract(self._running, freed)
        _subtract(self._retrying, retries)
        return freed

    def add_ghosts(self, slot: int, ghosts: Iterable[tuple[TypeKey, int, bool, str | None]]) -> None:
        """Attempts of `slot` an earlier owner started, each (type, until_ms, was a retry, its
        limit key or None): counted as running until then. Only types with limits are kept."""
        for key, until_ms, retry, limit_key in ghosts:
            if key in self._limits:
                heapq.heappush(self._ghosts.setdefault(key, []), (until_ms, slot))
                if retry:
                    heapq.heappush(self._retry_ghosts.setdefault(key, []), (until_ms, slot))
                if limit_key is not None:
                    heapq.heappush(self._key_ghosts.setdefault((key, limit_key), []), (until_ms, slot))

    def drop_slots(self, slots: set[int]) -> None:
        """The ghosts of slots that left this node: their next owner counts them."""
        tables: tuple[dict, ...] = (self._ghosts, self._retry_ghosts, self._key_ghosts)
        for table in tables:
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
        for (key, _), n in self._running_key.items():
            out[(*key, PER_KEY)] = out.get((*key, PER_KEY), 0) + n
        for (key, _), of_key in self._key_ghosts.items():
            out[(*key, PER_KEY)] = out.get((*key, PER_KEY), 0) + len(of_key)
        return out

    def running(self) -> dict[TypeKey, int]:
        """Attempts holding a place under their type's limits, and live ghosts, per type."""
        out = dict(self._running)
        for key, ghosts in self._ghosts.items():
            out[key] = out.get(key, 0) + len(ghosts)
        return out


def _live(table: dict, key: object, now_ms: int) -> int:
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
