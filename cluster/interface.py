"""What the ownership layer needs from the node above it, and what it offers.

cluster/ decides who owns which slot; dispatcher/ does the work of a slot. The
arrow points one way: dispatcher/ implements these protocols and hands them in,
and nothing in cluster/ imports dispatcher/.

    SlotListener   told when a slot becomes ours (with its epoch) or stops being
                   ours, and to hold all work while ownership is in doubt
    SlotRecords    the store calls ownership makes: bump a slot's epoch, renew leases
    Clock          the cluster's time (the node follows its database's clock)
    Ownership      what the node calls: start, stop, the owned slots, a slot the
                   store refused, and a snapshot for the admin view
"""
from __future__ import annotations

import datetime as dt
from typing import Protocol


class SlotListener(Protocol):
    async def slot_assigned(self, slot: int, epoch: int) -> None:
        """The slot is ours under `epoch`: start reading and dispatching it."""

    async def slot_revoked(self, slot: int, *, clean: bool) -> None:
        """The slot is no longer ours. clean: hand off (finish in-flight work, commit
        progress, give rows back); not clean: stop at once and write nothing more."""

    def hold(self, held: bool) -> None:
        """True: take no new work (ownership in doubt); False: carry on."""


class SlotLeased(Exception):
    """claim_slot refused: another node's lease on the slot is live. The slot is now
    marked wanted, which tells its owner (at its next renewal) to hand it over."""

    def __init__(self, slot: int, owner: str, remaining_ms: int):
        self.slot = slot
        self.owner = owner
        self.remaining_ms = remaining_ms
        super().__init__(f"slot {slot} is leased by {owner!r} for {remaining_ms} ms more")


RENEWED, WANTED, LOST = "renewed", "wanted", "lost"
"""What renew_leases says of each slot: renewed; renewed, but another node waits for it
(hand it over); not ours under that epoch any more (stop at once, write nothing)."""


class SlotRecords(Protocol):
    def claim_slot(self, slot: int, node: str, now: dt.datetime, lease_ms: int = 0) -> int:
        """Take `slot` for `node` and return its new epoch (previous + 1). Every write
        for the slot under an older epoch is refused from then on. The claim leases the
        slot to `node` for `lease_ms` (by the store's clock). Raises SlotLeased, having
        marked the slot wanted by `node`, while another node's lease on it is live."""

    def renew_leases(self, node: str, epochs: dict[int, int], lease_ms: int, now: dt.datetime) -> dict[int, str]:
        """Extend `node`'s lease on each slot it holds under the epoch given, to `lease_ms`
        from now by the store's clock; {slot: RENEWED | WANTED | LOST} for every slot of
        `epochs`. One round trip per store shard, whatever the number of slots."""


class Clock(Protocol):
    def now(self) -> dt.datetime: ...

    def now_ms(self) -> int: ...


class Ownership(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def owned(self) -> dict[int, int]:
        """slot -> epoch of every slot this node owns now."""

    def slot_lost(self, slot: int) -> None:
        """The store refused our epoch for `slot`: someone claimed it after us."""

    def lease_remaining_s(self) -> float:
        """Seconds this node may still dispatch the slots it owns (the store leases;
        math.inf for a single node, whose slots nobody else can take)."""

    def snapshot(self) -> dict:
        """Members, desired and actual owners, for the admin view."""


# (unix seconds, slot, "assigned" | "revoked" | "lost"), newest last: the admin view's recent moves.
Move = tuple[float, int, str]
