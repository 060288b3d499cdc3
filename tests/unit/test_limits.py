"""Concurrency limits per task type: declared beside the retry policies, counted at the slot's
owner (engine/limits.py), each place released exactly once, ghosts of an earlier owner counted
until their lease ends."""
from __future__ import annotations

import random

import pytest

from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.limits import ConcurrencyGate
from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
from dispatcher.policy.scheduling import TypeLimits
from taskring.wire import pb

KEY = ("shop", "export")
OTHER = ("shop", "email")


def due(task_id: str, key: tuple[str, str] = KEY, slot: int = 0) -> Due:
    return Due(task=pb.Task(task_id=task_id, namespace=key[0], task_type=key[1]), slot=slot, attempt=1,
               due_ms=0, source=KAFKA, epoch=1)


# ---------------------------------------------------------------- declaring

def test_a_limit_is_declared_per_type_beside_its_retry_policy():
    policies = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 3}, "initial_backoff_ms": 5}}')
    assert policies.limits_by_type == {("a", "b"): TypeLimits(max_running=3)}
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
])
def test_a_bad_limit_is_refused_naming_the_field(text, says):
    with pytest.raises(InvalidRetryPolicy) as refused:
        parse_retry_policies(text)
    assert says in str(refused.value)


# ---------------------------------------------------------------- counting

def test_places_are_taken_and_each_released_once():
    gate = ConcurrencyGate({KEY: TypeLimits(2)})
    assert gate.limit_of(KEY) == 2 and gate.limit_of(OTHER) is None
    a, b, c = due("a"), due("b"), due("c")
    assert gate.room(KEY, 2, now_ms=0) == 2
    gate.take(KEY, [a, b])
    assert gate.room(KEY, 2, now_ms=0) == 0 and a.limit_held and not c.limit_held
    assert gate.release([a, c]) == {KEY: 1}        # c held nothing
    assert gate.release([a]) == {}                 # a second release of a changes nothing
    assert gate.room(KEY, 2, now_ms=0) == 1 and gate.running() == {KEY: 1}
    gate.release([b])
    assert gate.running() == {}


def test_an_earlier_owners_attempts_count_until_their_lease_ends():
    gate = ConcurrencyGate({KEY: TypeLimits(3)})
    gate.add_ghosts(slot=5, ghosts=[(KEY, 1_000), (KEY, 2_000), (OTHER, 1_500)])   # OTHER has no limit
    assert gate.room(KEY, 3, now_ms=500) == 1 and gate.next_ghost_expiry_ms() == 1_000
    assert gate.room(KEY, 3, now_ms=1_000) == 2
    assert gate.running() == {KEY: 1}
    assert gate.room(KEY, 3, now_ms=2_000) == 3 and gate.next_ghost_expiry_ms() is None


def test_the_ghosts_of_a_slot_that_leaves_go_with_it():
    gate = ConcurrencyGate({KEY: TypeLimits(3)})
    gate.add_ghosts(slot=5, ghosts=[(KEY, 9_000)])
    gate.add_ghosts(slot=6, ghosts=[(KEY, 9_000), (KEY, 9_000)])
    gate.drop_slots({6})
    assert gate.room(KEY, 3, now_ms=0) == 2


def test_random_takes_and_releases_never_hold_more_than_the_limit():
    rng = random.Random(21)
    limit = 4
    gate = ConcurrencyGate({KEY: TypeLimits(limit)})
    holding: list[Due] = []
    for step in range(5_000):
        if rng.random() < 0.55:
            wanted = [due(f"t{step}-{i}") for i in range(rng.randint(1, 6))]
            admitted = wanted[:gate.room(KEY, limit, now_ms=0)]
            gate.take(KEY, admitted)
            holding += admitted
        elif holding:
            gone = rng.sample(holding, rng.randint(1, len(holding)))
            # Released once, sometimes twice (a batch's finally after an early release).
            gate.release(gone + (gone[:1] if rng.random() < 0.3 else []))
            holding = [d for d in holding if d not in gone]
        assert gate.running().get(KEY, 0) == len(holding) <= limit
