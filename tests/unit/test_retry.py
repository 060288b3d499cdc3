"""Retry backoff: full jitter bounds, the cap, tiered schedules, policy precedence."""
from __future__ import annotations

import random
import statistics

import pytest

from dispatcher.policy.retry import (
    MAX_SCHEDULE_ENTRIES,
    InvalidRetryPolicy,
    RetryPolicies,
    RetryPolicy,
    backoff_ceiling_ms,
    next_delay_ms,
)
from taskring.wire import pb

TIERED = RetryPolicy(schedule_ms=(30_000, 120_000, 600_000, 3_600_000))


def _draws(policy: RetryPolicy, retry_number: int, n: int = 20_000, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    return [next_delay_ms(policy, retry_number, rng) for _ in range(n)]


def test_defaults():
    p = RetryPolicy()
    assert (p.initial_backoff_ms, p.max_backoff_ms, p.multiplier, p.schedule_ms) == (1000, 300_000, 2.0, ())
    assert not p.tiered


def test_first_retry_is_a_uniform_draw_between_zero_and_initial_backoff():
    # Given
    policy = RetryPolicy(initial_backoff_ms=1000)

    # When
    delays = _draws(policy, 1)

    # Then: within bounds, covering the range, mean near the middle
    assert min(delays) >= 0 and max(delays) <= 1000
    assert min(delays) < 20 and max(delays) > 980
    assert statistics.fmean(delays) == pytest.approx(500, rel=0.03)
    # roughly uniform: each tenth of the range gets about 10%
    deciles = [0] * 10
    for d in delays:
        deciles[min(d // 100, 9)] += 1
    assert all(0.08 * len(delays) < c < 0.12 * len(delays) for c in deciles)


def test_upper_bound_grows_by_the_multiplier_per_retry():
    # Given
    policy = RetryPolicy(initial_backoff_ms=1000, multiplier=3.0, max_backoff_ms=1_000_000)

    # When
    ceilings = [backoff_ceiling_ms(policy, n) for n in range(1, 6)]
    third = _draws(policy, 3)

    # Then
    assert ceilings == [1000, 3000, 9000, 27000, 81000]
    assert max(third) <= 9000 and max(third) > 8800
    assert statistics.fmean(third) == pytest.approx(4500, rel=0.03)


def test_upper_bound_is_capped_at_max_backoff():
    # Given: 1 s * 2^(20-1) would be about six days
    policy = RetryPolicy(initial_backoff_ms=1000, multiplier=2.0, max_backoff_ms=300_000)

    # When
    delays = _draws(policy, 20)

    # Then
    assert backoff_ceiling_ms(policy, 20) == 300_000
    assert max(delays) <= 300_000 and max(delays) > 295_000
    assert statistics.fmean(delays) == pytest.approx(150_000, rel=0.03)


def test_a_huge_retry_number_does_not_overflow():
    # Given
    policy = RetryPolicy(multiplier=10.0)
    rng = random.Random(1)

    # When / Then
    assert backoff_ceiling_ms(policy, 10_000) == policy.max_backoff_ms
    assert 0 <= next_delay_ms(policy, 10_000, rng) <= policy.max_backoff_ms


def test_multiplier_one_keeps_a_constant_bound():
    policy = RetryPolicy(initial_backoff_ms=500, multiplier=1.0)
    assert [backoff_ceiling_ms(policy, n) for n in (1, 2, 50)] == [500, 500, 500]


def test_same_seed_gives_the_same_delays():
    assert _draws(RetryPolicy(), 4, n=100, seed=3) == _draws(RetryPolicy(), 4, n=100, seed=3)


def test_tiered_schedule_waits_exactly_each_tier_and_repeats_the_last():
    # Given: 30 s, 2 min, 10 min, 1 h
    rng = random.Random(1)
    state = rng.getstate()

    # When
    delays = [next_delay_ms(TIERED, n, rng) for n in range(1, 8)]

    # Then: no jitter, and no randomness consumed
    assert delays == [30_000, 120_000, 600_000, 3_600_000, 3_600_000, 3_600_000, 3_600_000]
    assert rng.getstate() == state
    assert TIERED.tiered


def test_retry_number_starts_at_one():
    with pytest.raises(ValueError):
        next_delay_ms(RetryPolicy(), 0, random.Random(1))
    with pytest.raises(ValueError):
        next_delay_ms(TIERED, 0, random.Random(1))


def test_from_pb_fills_unset_fields_from_the_default():
    # Given
    default = RetryPolicy(initial_backoff_ms=200, max_backoff_ms=60_000, multiplier=1.5, schedule_ms=())

    # When
    only_initial = RetryPolicy.from_pb(pb.RetryPolicy(initial_backoff_ms=500), default)
    empty = RetryPolicy.from_pb(pb.RetryPolicy(), default)
    tiered = RetryPolicy.from_pb(pb.RetryPolicy(schedule_ms=[1, 2]), default)

    # Then
    assert only_initial == RetryPolicy(500, 60_000, 1.5, ())
    assert empty == default
    assert tiered == RetryPolicy(200, 60_000, 1.5, (1, 2))


def test_to_pb_round_trips():
    for policy in (RetryPolicy(), TIERED, RetryPolicy(10, 20, 1.25, ())):
        assert RetryPolicy.from_pb(policy.to_pb(), RetryPolicy(1, 1, 1.0)) == policy


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(multiplier=0.5), "multiplier"),
        (dict(multiplier=-2.0), "multiplier"),
        (dict(multiplier=float("nan")), "multiplier"),
        (dict(multiplier=float("inf")), "multiplier"),
        (dict(initial_backoff_ms=5000, max_backoff_ms=1000), "initial_backoff_ms"),
        (dict(initial_backoff_ms=0), "initial_backoff_ms"),
        (dict(schedule_ms=(1000, 0)), "schedule_ms[1]"),
        (dict(schedule_ms=(1000,) * (MAX_SCHEDULE_ENTRIES + 1)), "schedule_ms"),
    ],
)
def test_unusable_policies_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(InvalidRetryPolicy) as e:
        RetryPolicy(**kwargs)
    assert e.value.field == field


def test_a_schedule_of_exactly_the_maximum_length_is_fine():
    # RetryPolicy takes any sequence (stored as a tuple); its field is annotated as the stored type.
    policy = RetryPolicy(schedule_ms=[1] * MAX_SCHEDULE_ENTRIES)  # type: ignore[arg-type]
    assert len(policy.schedule_ms) == MAX_SCHEDULE_ENTRIES


def test_registry_precedence_is_task_then_type_then_server_default():
    # Given
    server = RetryPolicy(initial_backoff_ms=100)
    billing = RetryPolicy(schedule_ms=(30_000, 120_000))
    registry = RetryPolicies(server_default=server, by_type={("billing", "invoice.send"): billing})
    own = RetryPolicy(initial_backoff_ms=7)

    # When / Then
    assert registry.resolve(own, "billing", "invoice.send") is own
    assert registry.resolve(None, "billing", "invoice.send") is billing
    assert registry.resolve(None, "billing", "other") is server
    assert registry.resolve(None, "other", "invoice.send") is server


def test_registry_does_not_see_later_changes_to_the_callers_dict():
    # Given
    by_type = {("a", "b"): RetryPolicy(initial_backoff_ms=5)}
    registry = RetryPolicies(by_type=by_type)

    # When
    by_type[("a", "b")] = RetryPolicy(initial_backoff_ms=9)

    # Then
    assert registry.for_type("a", "b").initial_backoff_ms == 5
    with pytest.raises(TypeError):
        registry.by_type[("x", "y")] = RetryPolicy()  # type: ignore[index]  # read-only is the point


def test_retry_policies_from_json_set_the_default_and_per_type_policies():
    from dispatcher.policy.retry import parse_retry_policies
    policies = parse_retry_policies(
        '{"default": {"initial_backoff_ms": 500}, "pay/charge": {"schedule_ms": [30000, 120000, 600000, 3600000]}}')
    assert policies.server_default == RetryPolicy(initial_backoff_ms=500)
    charge = policies.for_type("pay", "charge")
    assert charge.schedule_ms == (30000, 120000, 600000, 3600000) and charge.initial_backoff_ms == 500
    assert policies.for_type("pay", "other") == policies.server_default


@pytest.mark.parametrize("text,field", [
    ("[]", "retry_policies"),
    ("{nope", "retry_policies"),
    ('{"pay": {}}', "pay"),
    ('{"pay/x": {"bogus": 1}}', "pay/x.bogus"),
    ('{"pay/x": {"multiplier": 0.5}}', "pay/x.multiplier"),
    ('{"default": {"schedule_ms": [0]}}', "default.schedule_ms[0]"),
])
def test_bad_retry_policies_json_names_the_key_and_field(text, field):
    from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
    with pytest.raises(InvalidRetryPolicy) as err:
        parse_retry_policies(text)
    assert err.value.field == field
