"""Concurrency limits per task type: declared beside the retry policies, counted at the slot's
owner (engine/limits.py), each place released exactly once, ghosts of an earlier owner counted
until their lease ends."""
from __future__ import annotations

import datetime as dt
import random

import pytest

from dispatcher.api.validation import Limits, validate_batch, validate_task
from dispatcher.base.errors import InvalidArgument
from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.limits import UNLIMITED, ConcurrencyGate
from dispatcher.engine.rates import RATE, RATE_PER_KEY, RateGate
from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
from dispatcher.policy.scheduling import Rate, TypeLimits
from taskring.wire import pb

KEY = ("shop", "export")
OTHER = ("shop", "email")


def due(task_id: str, key: tuple[str, str] = KEY, slot: int = 0, attempt: int = 1) -> Due:
    return Due(task=pb.Task(task_id=task_id, namespace=key[0], task_type=key[1]), slot=slot, attempt=attempt,
               due_ms=0, source=KAFKA, epoch=1)


# ---------------------------------------------------------------- declaring

def test_a_limit_is_declared_per_type_beside_its_retry_policy():
    policies = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 3}, "initial_backoff_ms": 5}}')
    assert policies.limits_by_type == {("a", "b"): TypeLimits(max_running=3)}
    capped = parse_retry_policies('{"a/b": {"retry_cap": 5}, "a/c": {"retry_cap": 2, "concurrency": {"per_type": 9}}}')
    assert capped.limits_by_type == {("a", "b"): TypeLimits(max_retrying=5), ("a", "c"): TypeLimits(9, 2)}
    assert policies.for_type("a", "b").initial_backoff_ms == 5


@pytest.mark.parametrize("text, says", [
    ('{"a/b": {"concurrency": {"per_type": 0}}}', "a/b.concurrency.per_type: must be a whole number >= 1, got 0"),
    ('{"a/b": {"concurrency": {"per_type": -2}}}', "a/b.concurrency.per_type: must be a whole number >= 1"),
    ('{"a/b": {"concurrency": {"per_type": 2.5}}}', "a/b.concurrency.per_type: must be a whole number"),
    ('{"a/b": {"concurrency": {"per_type": true}}}', "a/b.concurrency.per_type: must be a whole number"),
    ('{"a/b": {"concurrency": {}}}', "a/b.concurrency.per_type: is required"),
    ('{"a/b": {"concurrency": 3}}', "a/b.concurrency: must be a JSON object"),
    ('{"a/b": {"concurrency": {"per_type": 3, "max": 1}}}', "a/b.concurrency.max: is not a concurrency"),
    ('{"default": {"concurrency": {"per_type": 3}}}', "default.concurrency: is per task type"),
    ('{"a/b": {"retry_cap": 0}}', "a/b.retry_cap: must be a whole number >= 1, got 0"),
    ('{"a/b": {"retry_cap": "5"}}', "a/b.retry_cap: must be a whole number >= 1, got '5'"),
    ('{"default": {"retry_cap": 5}}', "default.retry_cap: is per task type"),
    ('{"a/b": {"concurrency": {"per_key": 3}}}', "a/b.concurrency.key: is required with per_key"),
    ('{"a/b": {"concurrency": {"per_key": 3, "key": "tenant"}}}', "a/b.concurrency.key: names no payload field"),
    ('{"a/b": {"concurrency": {"per_key": 0, "key": "t:{x}"}}}', "a/b.concurrency.per_key: must be a whole number"),
    ('{"a/b": {"concurrency": {"key": "t:{x}"}}}', "a/b.concurrency.per_type: is required (or per_key with key)"),
    ('{"a/b": {"rate": {"per_type": {"starts": 5}}}}', "a/b.rate.per_type.period_ms: is required"),
    ('{"a/b": {"rate": {"per_type": {"starts": 0, "period_ms": 1000}}}}',
     "a/b.rate.per_type.starts: must be a whole number >= 1, got 0"),
    ('{"a/b": {"rate": {"per_type": {"starts": 5, "period_ms": 1000, "burst": 0}}}}',
     "a/b.rate.per_type.burst: must be a whole number >= 1"),
    ('{"a/b": {"rate": {"per_type": {"starts": 5, "period_ms": -1}}}}', "a/b.rate.per_type.period_ms: must be"),
    ('{"a/b": {"rate": {"per_type": {"starts": 5, "period": 1000}}}}', "a/b.rate.per_type.period: is not a rate"),
    ('{"a/b": {"rate": {"per_key": {"starts": 5, "period_ms": 1000}}}}', "a/b.rate.key: is required with per_key"),
    ('{"a/b": {"rate": {"per_type": 5}}}', "a/b.rate.per_type: must be a JSON object"),
    ('{"a/b": {"rate": {}}}', "a/b.rate.per_type: is required"),
    ('{"a/b": {"concurrency": {"per_key": 1, "key": "t:{x}"}, "rate": {"per_key": {"starts": 1, "period_ms": 9},'
     ' "key": "t:{y}"}}}', "a/b.rate.key: must be the same template as concurrency.key"),
    ('{"default": {"rate": {"per_type": {"starts": 5, "period_ms": 1000}}}}', "default.rate: is per task type"),
])
def test_a_bad_limit_is_refused_naming_the_field(text, says):
    with pytest.raises(InvalidRetryPolicy) as refused:
        parse_retry_policies(text)
    assert says in str(refused.value)


def test_a_rate_is_declared_per_type_and_per_key_with_a_burst_that_defaults_to_its_starts():
    policies = parse_retry_policies('{"a/b": {"rate": {"per_type": {"starts": 100, "period_ms": 1000, "burst": 300},'
                                    ' "per_key": {"starts": 5, "period_ms": 60000}, "key": "t:{tenant}"}},'
                                    ' "a/c": {"concurrency": {"per_key": 2, "key": "t:{x}"},'
                                    ' "rate": {"per_key": {"starts": 1, "period_ms": 10}}}}')
    assert policies.limits_by_type[("a", "b")] == TypeLimits(rate=Rate(100, 1000, 300), rate_per_key=Rate(5, 60_000, 5),
                                                             key="t:{tenant}")
    assert policies.limits_by_type[("a", "c")] == TypeLimits(max_running_per_key=2, key="t:{x}",
                                                             rate_per_key=Rate(1, 10, 1))


def test_a_token_bucket_starts_full_refills_at_its_rate_and_never_past_its_burst():
    gate = RateGate({KEY: TypeLimits(rate=Rate(2, 1000, 3))})
    assert [gate.try_start(KEY, None, 0) for _ in range(4)] == [None, None, None, RATE]
    assert gate.next_token_ms(KEY, None, 0) == 500
    assert gate.room(KEY, None, 499) == 0 and gate.room(KEY, None, 500) == 1
    assert gate.room(KEY, None, 100_000) == 3                     # a quiet spell refills to the burst only
    gate.give_back(KEY, [due("x")])                               # a start not made gives its token back
    assert gate.room(KEY, None, 100_000) == 3


def test_a_key_rate_takes_from_both_buckets_or_neither():
    gate = RateGate({KEY: TypeLimits(rate=Rate(3, 1000, 3), rate_per_key=Rate(1, 1000, 1), key="t:{x}")})
    assert gate.try_start(KEY, "t:a", 0) is None
    assert gate.try_start(KEY, "t:a", 0) == RATE_PER_KEY         # the key's bucket is empty...
    assert gate.room(KEY, None, 0) == 2                           # ...and the type's token was not taken
    assert gate.try_start(KEY, "t:b", 0) is None and gate.try_start(KEY, "t:c", 0) is None
    assert gate.try_start(KEY, "t:d", 0) == RATE                  # the type's bucket is empty
    assert gate.next_token_ms(KEY, "t:a", 0) == 1000


# ---------------------------------------------------------------- counting

def test_places_are_taken_and_each_released_once():
    gate = ConcurrencyGate({KEY: TypeLimits(2)})
    assert gate.limits_of(KEY) == TypeLimits(2) and gate.limits_of(OTHER) is None
    assert gate.room(OTHER, now_ms=0) == UNLIMITED and gate.retry_room(KEY, now_ms=0) == UNLIMITED
    a, b, c = due("a"), due("b"), due("c")
    assert gate.room(KEY, now_ms=0) == 2
    gate.take(KEY, [a, b])
    assert gate.room(KEY, now_ms=0) == 0 and a.limit_held and not c.limit_held
    assert gate.release([a, c]) == {KEY: 1}        # c held nothing
    assert gate.release([a]) == {}                 # a second release of a changes nothing
    assert gate.room(KEY, now_ms=0) == 1 and gate.running() == {KEY: 1}
    gate.release([b])
    assert gate.running() == {} and gate.held() == {}


def test_a_retry_takes_a_place_under_the_retry_cap_too():
    gate = ConcurrencyGate({KEY: TypeLimits(max_running=5, max_retrying=1)})
    first, retry = due("first"), due("retry", attempt=3)
    gate.take(KEY, [first, retry])
    assert (gate.room(KEY, now_ms=0), gate.retry_room(KEY, now_ms=0)) == (3, 0)
    assert gate.held() == {(*KEY, "concurrency"): 2, (*KEY, "retry_cap"): 1}
    gate.release([retry])
    assert (gate.room(KEY, now_ms=0), gate.retry_room(KEY, now_ms=0)) == (4, 1)


def test_an_earlier_owners_attempts_count_until_their_lease_ends():
    gate = ConcurrencyGate({KEY: TypeLimits(3, max_retrying=2)})
    gate.add_ghosts(slot=5, ghosts=[(KEY, 1_000, False, None), (KEY, 2_000, True, None),
                                    (OTHER, 1_500, False, None)])   # OTHER has no limit
    assert gate.room(KEY, now_ms=500) == 1 and gate.retry_room(KEY, now_ms=500) == 1
    assert gate.next_ghost_expiry_ms() == 1_000
    assert gate.room(KEY, now_ms=1_000) == 2
    assert gate.running() == {KEY: 1}
    assert gate.room(KEY, now_ms=2_000) == 3 and gate.retry_room(KEY, now_ms=2_000) == 2
    assert gate.next_ghost_expiry_ms() is None


def test_the_ghosts_of_a_slot_that_leaves_go_with_it():
    gate = ConcurrencyGate({KEY: TypeLimits(3)})
    gate.add_ghosts(slot=5, ghosts=[(KEY, 9_000, False, None)])
    gate.add_ghosts(slot=6, ghosts=[(KEY, 9_000, False, None), (KEY, 9_000, True, None)])
    gate.drop_slots({6})
    assert gate.room(KEY, now_ms=0) == 2


def test_a_keys_places_are_counted_apart_from_other_keys_and_its_ghosts_too():
    gate = ConcurrencyGate({KEY: TypeLimits(max_running_per_key=2, key="shop:{shop}")})
    a1, a2, b1 = (Due(task=pb.Task(task_id=t, namespace=KEY[0], task_type=KEY[1], payload_json=f'{{"shop": "{s}"}}'),
                      slot=0, attempt=1, due_ms=0, source=KAFKA, epoch=1) for t, s in (("a1", "a"), ("a2", "a"),
                                                                                     ("b1", "b")))
    assert [gate.key_of(KEY, d) for d in (a1, a2, b1)] == ["shop:a", "shop:a", "shop:b"]
    gate.take(KEY, [a1, a2, b1])
    assert (gate.key_room(KEY, "shop:a", now_ms=0), gate.key_room(KEY, "shop:b", now_ms=0)) == (0, 1)
    gate.release([a1])
    assert gate.key_room(KEY, "shop:a", now_ms=0) == 1
    gate.add_ghosts(slot=3, ghosts=[(KEY, 1_000, False, "shop:b")])
    assert gate.key_room(KEY, "shop:b", now_ms=500) == 0 and gate.key_room(KEY, "shop:b", now_ms=1_000) == 1
    no_shop = due("x")
    assert gate.key_of(KEY, no_shop) == ""     # a payload without the field: the key ""


def test_random_takes_and_releases_never_hold_more_than_either_limit():
    rng = random.Random(21)
    gate = ConcurrencyGate({KEY: TypeLimits(max_running=4, max_retrying=2)})
    holding: list[Due] = []
    for step in range(5_000):
        if rng.random() < 0.55:
            room, retry_room = gate.room(KEY, now_ms=0), gate.retry_room(KEY, now_ms=0)
            admitted = []
            for i in range(rng.randint(1, 6)):
                d = due(f"t{step}-{i}", attempt=rng.choice([1, 1, 2, 3]))
                if room > 0 and (d.attempt == 1 or retry_room > 0):
                    room -= 1
                    retry_room -= d.attempt >= 2
                    admitted.append(d)
            gate.take(KEY, admitted)
            holding += admitted
        elif holding:
            gone = rng.sample(holding, rng.randint(1, len(holding)))
            # Released once, sometimes twice (the call's end after each outcome's release).
            gate.release(gone + (gone[:1] if rng.random() < 0.3 else []))
            holding = [d for d in holding if d not in gone]
        retries = sum(d.attempt >= 2 for d in holding)
        assert gate.running().get(KEY, 0) == len(holding) <= 4
        assert gate.held().get((*KEY, "retry_cap"), 0) == retries <= 2


# ---------------------------------------------------------------- at submit

def _limited() -> Limits:
    return Limits(retry_policies=parse_retry_policies(
        '{"shop/export": {"concurrency": {"per_key": 2, "key": "shop:{shop.id}"}}}'))


def test_a_payload_without_the_limit_keys_field_is_refused_at_submit_naming_it():
    now = dt.datetime.now(dt.UTC)
    ok = pb.Task(namespace="shop", task_type="export", payload_json='{"shop": {"id": 7}}')
    assert validate_task(ok, now=now, limits=_limited()).task_type == "export"
    for payload, says in (('{"shop": {}}', "has no field 'shop.id', which its task type's limit key"),
                          ('{"shop": {"id": [1]}}', "field 'shop.id' must be a string or an integer")):
        bad = pb.Task(namespace="shop", task_type="export", payload_json=payload)
        with pytest.raises(InvalidArgument) as refused:
            validate_task(bad, now=now, limits=_limited())
        assert refused.value.field == "task.payload_json" and says in str(refused.value)
    with pytest.raises(InvalidArgument) as in_batch:
        validate_batch([ok, pb.Task(namespace="shop", task_type="export", payload_json="{}")], now=now,
                       limits=_limited())
    assert in_batch.value.field == "tasks[1].payload_json"
