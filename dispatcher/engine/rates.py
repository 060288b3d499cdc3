"""Rate limits at the slot's owner: at most so many starts of a task type, and of one key of
it, per period (policy/scheduling.py `Rate`), as token buckets in memory.

The type lives in one slot with one owner, so its buckets are this node's alone. A bucket
starts full (a new owner may start `burst` at once: over a handoff a type can run up to one
burst above its rate, never more). A start takes a token from the type's bucket and, with a
per-key rate, from its key's, both or neither; a task taken at a limit but then not dispatched
(no executor room) gives its tokens back. What finds no token waits, parked in the due queue
under the limit `rate` (or `rate_key:<key>`), and the dispatch loop wakes when the next token
comes.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from dispatcher.engine.due import Due
from dispatcher.policy.scheduling import Rate, TypeLimits

TypeKey = tuple[str, str]
RATE, RATE_PER_KEY = "rate", "rate_per_key"
"""The limits a start can wait on (the `limit` label of the metrics)."""
KEY_BUCKETS_KEPT = 10_000
"""Per-key buckets kept at most; full ones (no different from new) are dropped past this."""


class TokenBucket:
    __slots__ = ("_per_ms", "_burst", "_tokens", "_at_ms")

    def __init__(self, rate: Rate, now_ms: int):
        self._per_ms = rate.starts / rate.period_ms
        self._burst = float(rate.burst)
        self._tokens = float(rate.burst)
        self._at_ms = now_ms

    def _fill(self, now_ms: int) -> float:
        if now_ms > self._at_ms:
            self._tokens = min(self._burst, self._tokens + (now_ms - self._at_ms) * self._per_ms)
            self._at_ms = now_ms
        return self._tokens

    def available(self, now_ms: int) -> int:
        return int(self._fill(now_ms))

    def take(self) -> None:
        """One token (after `available` said there is one)."""
        self._tokens -= 1

    def give_back(self) -> None:
        self._tokens = min(self._burst, self._tokens + 1)

    def next_token_ms(self, now_ms: int) -> int:
        tokens = self._fill(now_ms)
        return now_ms if tokens >= 1 else now_ms + max(1, math.ceil((1 - tokens) / self._per_ms))

    def full(self, now_ms: int) -> bool:
        return self._fill(now_ms) >= self._burst


class RateGate:
    def __init__(self, limits: Mapping[TypeKey, TypeLimits] | None = None):
        self._rates = {key: (lim.rate, lim.rate_per_key) for key, lim in (limits or {}).items()
                       if lim.rate is not None or lim.rate_per_key is not None}
        self._types: dict[TypeKey, TokenBucket] = {}
        self._keys: dict[tuple[TypeKey, str], TokenBucket] = {}

    def rated(self, key: TypeKey) -> bool:
        return key in self._rates

    def set_limits(self, limits: Mapping[TypeKey, TypeLimits]) -> None:
        """New rates (the policies file changed): the buckets of a rate that changed start
        again, full; those of an unchanged one go on."""
        before = self._rates
        self._rates = {key: (lim.rate, lim.rate_per_key) for key, lim in limits.items()
                       if lim.rate is not None or lim.rate_per_key is not None}
        changed = {key for key in set(before) | set(self._rates) if before.get(key) != self._rates.get(key)}
        for key in [k for k in self._types if k in changed]:
            del self._types[key]
        for both in [b for b in self._keys if b[0] in changed]:
            del self._keys[both]

    def _type_bucket(self, key: TypeKey, now_ms: int) -> TokenBucket | None:
        rate = self._rates.get(key, (None, None))[0]   # a type whose rate is gone: no bucket
        if rate is None:
            return None
        bucket = self._types.get(key)
        if bucket is None:
            bucket = self._types[key] = TokenBucket(rate, now_ms)
        return bucket

    def _key_bucket(self, key: TypeKey, limit_key: str | None, now_ms: int) -> TokenBucket | None:
        rate = self._rates.get(key, (None, None))[1]
        if rate is None or limit_key is None:
            return None
        bucket = self._keys.get((key, limit_key))
        if bucket is None:
            if len(self._keys) >= KEY_BUCKETS_KEPT:
                self._forget_full(now_ms)
            bucket = self._keys[(key, limit_key)] = TokenBucket(rate, now_ms)
        return bucket

    def _forget_full(self, now_ms: int) -> None:
        for both in [both for both, bucket in self._keys.items() if bucket.full(now_ms)]:
            del self._keys[both]

    def try_start(self, key: TypeKey, limit_key: str | None, now_ms: int) -> str | None:
        """Take a start's tokens (the type's and its key's, both or neither); None when taken,
        else the limit it must wait for: RATE or RATE_PER_KEY."""
        of_type = self._type_bucket(key, now_ms)
        if of_type is not None and of_type.available(now_ms) < 1:
            return RATE
        of_key = self._key_bucket(key, limit_key, now_ms)
        if of_key is not None and of_key.available(now_ms) < 1:
            return RATE_PER_KEY
        if of_type is not None:
            of_type.take()
        if of_key is not None:
            of_key.take()
        return None

    def give_back(self, key: TypeKey, dues: Iterable[Due]) -> None:
        """Tokens of starts taken but not made (the tasks went back to the queue)."""
        if key not in self._rates:
            return
        for d in dues:
            of_type = self._types.get(key)
            if of_type is not None:
                of_type.give_back()
            if d.limit_key is not None and (of_key := self._keys.get((key, d.limit_key))) is not None:
                of_key.give_back()

    def room(self, key: TypeKey, limit_key: str | None, now_ms: int) -> int:
        """Starts the type (and the key, given one) may make now."""
        room = 1 << 62
        of_type = self._type_bucket(key, now_ms)
        if of_type is not None:
            room = of_type.available(now_ms)
        of_key = self._key_bucket(key, limit_key, now_ms)
        if of_key is not None:
            room = min(room, of_key.available(now_ms))
        return room

    def next_token_ms(self, key: TypeKey, limit_key: str | None, now_ms: int) -> int:
        """When a start of the type (of the key, given one) may be made."""
        at = now_ms
        of_type = self._type_bucket(key, now_ms)
        if of_type is not None:
            at = of_type.next_token_ms(now_ms)
        of_key = self._key_bucket(key, limit_key, now_ms)
        if of_key is not None:
            at = max(at, of_key.next_token_ms(now_ms))
        return at
