"""Which slot a task belongs to.

    slot = crc32("<namespace>/<task_type>" encoded as UTF-8) mod slot_count

crc32 is the IEEE 802.3 CRC-32 (zlib's, as in gzip and PNG: polynomial 0x04C11DB7,
reflected, init and final xor 0xFFFFFFFF; crc32(b"123456789") == 0xCBF43926),
taken as an unsigned 32-bit integer. Every SDK and every tool that computes a slot
(Go `hash/crc32.ChecksumIEEE`, Java `java.util.zip.CRC32`, Node `zlib.crc32`) must
use exactly this: the slot is the Kafka partition of every message and is stored on
every MySQL row, so two implementations that disagree would route one task type to
two owners. `slot_count` is the partition count fixed at cluster creation.

All tasks of one type share a slot, hence one owner and one partition.
"""
from __future__ import annotations

import zlib


def slot_key(namespace: str, task_type: str) -> bytes:
    """The bytes that are hashed: UTF-8 of "namespace/task_type"."""
    return f"{namespace}/{task_type}".encode()


def slot_of(namespace: str, task_type: str, slot_count: int) -> int:
    if slot_count < 1:
        raise ValueError(f"slot_count must be >= 1, got {slot_count}")
    return zlib.crc32(slot_key(namespace, task_type)) % slot_count
