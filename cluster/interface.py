"""What the ownership layer needs from the node above it, and what it offers.

cluster/ decides who owns which slot; dispatcher/ does the work of a slot. The
arrow points one way: dispatcher/ implements these protocols and hands them in,
and nothing in cluster/ imports dispatcher/.

    SlotListener   told when a slot becomes ours (with its epoch) or stops being
                   ours, and to hold all work while ownership is in doubt
    SlotRecords    the one store call ownership makes: bump a slot's epoch
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


class SlotRecords(Protocol):
    def claim_slot(self, slot: int, node: str, now: dt.datetime) -> int:
        """Take `slot` for `node` and return its new epoch (previous + 1). Every write
        for the slot under an older epoch is refused from then on."""


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

    def snapshot(self) -> dict:
        """Members, desired and actual owners, for the admin view."""


# (unix seconds, slot, "assigned" | "revoked" | "lost"), newest last: the admin view's recent moves.
Move = tuple[float, int, str]
