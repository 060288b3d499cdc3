"""Who should own each slot: a consistent-hash ring over the live members.

Pure: members and a slot count in, desired ownership out. The same function
drives a node's handoff decisions and the admin view, so both always agree.

The ring is uhashring's `HashRing` (md5 points, `vnodes` virtual nodes per
member); slot s is looked up by the key f"slot-{s}". Adding or removing one of N
members moves about 1/N of the slots, and only to/from that member.

This only says who *should* own a slot. Who *does* is decided by claims with
epochs (cluster/ claims and handoff); the ring never grants ownership by itself.

Every node must compute the same map from the same member set: the result does
not depend on the order members are given in, and uhashring is pinned (its
hashing is part of this contract; tests/unit/test_ring.py pins a vector so an
upgrade that changes placement is noticed).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from uhashring import HashRing


def slot_ring_key(slot: int) -> str:
    return f"slot-{slot}"


def desired_owners(members: Iterable[str], slot_count: int, vnodes: int = 160) -> dict[int, str]:
    """{slot: member} for every slot in range(slot_count); {} when there are no members."""
    if slot_count < 1:
        raise ValueError(f"slot_count must be >= 1, got {slot_count}")
    if vnodes < 1:
        raise ValueError(f"vnodes must be >= 1, got {vnodes}")
    unique = set(members)
    if not unique:
        return {}
    if not all(isinstance(n, str) and n for n in unique):
        raise ValueError(f"members must be non-empty strings, got {sorted(map(repr, unique))}")
    nodes = sorted(unique)
    ring = HashRing(nodes=nodes, vnodes=vnodes)
    return {slot: ring.get_node(slot_ring_key(slot)) for slot in range(slot_count)}


def moved_slots(
    before: Mapping[int, str], after: Mapping[int, str]
) -> dict[int, tuple[str | None, str | None]]:
    """{slot: (old owner, new owner)} for every slot whose owner differs (None = unowned)."""
    moved: dict[int, tuple[str | None, str | None]] = {}
    for slot in sorted(set(before) | set(after)):
        old, new = before.get(slot), after.get(slot)
        if old != new:
            moved[slot] = (old, new)
    return moved
