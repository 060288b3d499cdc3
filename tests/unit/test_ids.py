"""UUIDv7 task ids (RFC 9562): layout, time prefix, monotonicity."""
from __future__ import annotations

import random
import time
import uuid

import pytest

from dispatcher.base.ids import UuidV7Generator, new_task_id, uuid7_unix_ms


def _fixed_clock(values):
    it = iter(values)
    return lambda: next(it)


def _seeded_bytes(seed: int):
    rng = random.Random(seed)
    return rng.randbytes


def test_id_is_canonical_uuid_string_with_version_7_and_rfc_variant():
    # Given / When
    ids = [new_task_id() for _ in range(1000)]

    # Then
    for s in ids:
        u = uuid.UUID(s)
        assert str(u) == s and len(s) == 36
        assert u.version == 7
        assert u.variant == uuid.RFC_4122
        assert (u.int >> 76) & 0xF == 0x7
        assert (u.int >> 62) & 0b11 == 0b10
    assert len(set(ids)) == len(ids)


def test_time_prefix_is_the_wall_clock_in_unix_ms():
    # Given
    before = time.time_ns() // 1_000_000

    # When
    s = new_task_id()

    # Then
    after = time.time_ns() // 1_000_000
    assert before <= uuid7_unix_ms(s) <= after + 1  # +1: a counter rollover may borrow a ms


def test_time_prefix_is_the_injected_clock():
    # Given
    gen = UuidV7Generator(clock_ms=lambda: 1_700_000_000_123, randbytes=_seeded_bytes(1))

    # When
    s = gen.new()

    # Then
    assert uuid7_unix_ms(s) == 1_700_000_000_123
    assert s.startswith("018bcfe5-")  # 1_700_000_000_123 == 0x018bcfe5_683b


def test_ten_thousand_ids_sort_in_creation_order():
    # Given / When
    ids = [new_task_id() for _ in range(10_000)]

    # Then: as strings and as integers, strictly increasing
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    ints = [uuid.UUID(s).int for s in ids]
    assert all(a < b for a, b in zip(ints, ints[1:]))


def test_ids_within_one_millisecond_count_up_in_rand_a():
    # Given: a clock stuck on one millisecond
    gen = UuidV7Generator(clock_ms=lambda: 5_000, randbytes=_seeded_bytes(2))

    # When
    ids = [uuid.UUID(gen.new()).int for _ in range(100)]

    # Then: same timestamp, rand_a increments by one each time
    assert {i >> 80 for i in ids} == {5_000}
    counters = [(i >> 64) & 0xFFF for i in ids]
    assert counters == list(range(counters[0], counters[0] + 100))
    assert counters[0] < 2048  # seeded with 11 bits: room for >= 2048 ids per ms


def test_counter_overflow_borrows_the_next_millisecond_and_stays_sorted():
    # Given: more ids in one millisecond than the 12-bit counter holds
    gen = UuidV7Generator(clock_ms=lambda: 5_000, randbytes=_seeded_bytes(3))

    # When
    ids = [gen.new() for _ in range(10_000)]

    # Then
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert uuid7_unix_ms(ids[-1]) > 5_000


def test_clock_stepping_back_never_makes_ids_go_backwards():
    # Given: the wall clock jumps back by a second
    gen = UuidV7Generator(clock_ms=_fixed_clock([10_000, 10_001, 9_001, 9_002, 10_002]), randbytes=_seeded_bytes(4))

    # When
    ids = [gen.new() for _ in range(5)]

    # Then
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [uuid7_unix_ms(s) for s in ids] == [10_000, 10_001, 10_001, 10_001, 10_002]


def test_same_clock_and_randomness_give_the_same_ids():
    # Given
    def make():
        return UuidV7Generator(clock_ms=_fixed_clock(range(1, 100)), randbytes=_seeded_bytes(5))

    # When / Then
    a, b = make(), make()
    assert [a.new() for _ in range(10)] == [b.new() for _ in range(10)]


def test_uuid7_unix_ms_rejects_other_versions():
    with pytest.raises(ValueError):
        uuid7_unix_ms(str(uuid.uuid4()))
