"""Has the ring settled: the one check, for tests, benchmarks and the demo.

Settled on `members` = exactly those nodes are registered, and every slot is owned
(with its epoch written: the claim is complete) by its desired owner, one of them.
The check reads a ring view in the shape of a node's `/ring` (members, and per slot
desired_owner, actual_owner, epoch); `zk_ring_view` builds the same shape from what
ZooKeeper itself holds, for observers that read the claim znodes directly.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from cluster.ring import desired_owners


def ring_problems(ring: Mapping, members: set[str]) -> list[str]:
    """Why this view of the ring is not settled on `members` (empty: settled)."""
    problems = []
    seen = set(ring.get("members", ()))
    if seen != members:
        problems.append(f"members {sorted(seen)} (expected {sorted(members)})")
    unsettled = [s for s in ring["slots"] if s["actual_owner"] is None or s["actual_owner"] != s["desired_owner"]
                 or s["actual_owner"] not in members or s.get("epoch") is None]
    if unsettled:
        problems.append(f"{len(unsettled)} slots not owned by their desired owner: "
                        + ", ".join(f"{s['slot']} ({s['desired_owner']} wanted, {s['actual_owner']} has)"
                                    for s in unsettled[:6]) + (" ..." if len(unsettled) > 6 else ""))
    return problems


def settled_owners(ring: Mapping, members: set[str]) -> dict[int, str] | None:
    """The owner map once the view is settled on `members`, else None."""
    if ring_problems(ring, members):
        return None
    return {s["slot"]: s["actual_owner"] for s in ring["slots"]}


def views_agree(rings: Iterable[Mapping]) -> bool:
    """Every node's view has the same desired owners."""
    desired = [{s["slot"]: s["desired_owner"] for s in r["slots"]} for r in rings]
    return all(d == desired[0] for d in desired)


def zk_ring_view(members: Iterable[str], claims: Mapping[int, tuple], slot_count: int) -> dict:
    """A `/ring`-shaped view from ZooKeeper: the registered node ids, and the claim of each
    slot as (node, epoch, ...) (missing: unowned); the desired owners are the ring's."""
    members = sorted(members)
    desired = desired_owners(set(members), slot_count) if members else {}
    slots = []
    for slot in range(slot_count):
        node, epoch = (claims.get(slot) or (None, None))[:2]
        slots.append({"slot": slot, "desired_owner": desired.get(slot), "actual_owner": node, "epoch": epoch})
    return {"members": members, "slots": slots}
