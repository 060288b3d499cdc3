"""slot = crc32-IEEE(UTF-8 "namespace/task_type") mod slot_count: a contract every SDK shares."""
from __future__ import annotations

import zlib
from collections import Counter

import pytest

from cluster.slots import slot_key, slot_of


def reference_crc32(data: bytes) -> int:
    """Bit-by-bit CRC-32/IEEE (reflected 0xEDB88320, init and xorout 0xFFFFFFFF): the spec for other SDKs."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


# Computed once and pinned: changing any of these re-routes live tasks.
VECTORS = [
    # namespace, task_type, crc32, slot of 16, slot of 64
    ("billing", "invoice.send", 0x6EA7A6A6, 6, 38),
    ("orders", "OrderPaid:v2", 0x4DE9E34C, 12, 12),
    ("a", "b", 0x07F4401C, 12, 28),
    ("支付", "退款", 0xD30C091E, 14, 30),  # UTF-8 bytes are hashed
]


@pytest.mark.parametrize("namespace, task_type, crc, slot16, slot64", VECTORS)
def test_pinned_vectors(namespace, task_type, crc, slot16, slot64):
    # Given / When / Then
    assert zlib.crc32(slot_key(namespace, task_type)) == crc
    assert slot_of(namespace, task_type, 16) == slot16 == crc % 16
    assert slot_of(namespace, task_type, 64) == slot64 == crc % 64


def test_crc_is_the_ieee_variant():
    # The standard check value of CRC-32/IEEE ("CRC-32/ISO-HDLC").
    assert zlib.crc32(b"123456789") == 0xCBF43926 == reference_crc32(b"123456789")


@pytest.mark.parametrize("namespace, task_type, crc, slot16, slot64", VECTORS)
def test_a_from_scratch_implementation_agrees(namespace, task_type, crc, slot16, slot64):
    assert reference_crc32(f"{namespace}/{task_type}".encode()) == crc


def test_the_hashed_key_is_namespace_slash_task_type():
    assert slot_key("billing", "invoice.send") == b"billing/invoice.send"


def test_slot_is_stable_across_calls_and_in_range():
    for count in (1, 7, 16, 64, 1024):
        slots = {slot_of("billing", f"type-{i}", count) for i in range(200)}
        assert all(0 <= s < count for s in slots)
        assert slot_of("billing", "invoice.send", count) == slot_of("billing", "invoice.send", count)


def test_a_thousand_task_types_spread_over_sixteen_slots():
    # Given
    types = [f"type.{i}" for i in range(1000)]

    # When
    counts = Counter(slot_of("billing", t, 16) for t in types)

    # Then: every slot used, none far from the expected 62.5
    assert set(counts) == set(range(16))
    assert all(35 <= c <= 95 for c in counts.values()), counts


def test_slot_count_must_be_positive():
    with pytest.raises(ValueError):
        slot_of("a", "b", 0)
