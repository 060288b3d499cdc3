"""Ownership without a cluster: one node owns every slot.

Used by a single dispatcher (`taskring node --single`) and by tests of the core
path. It still claims each slot in the store, so the epoch fences a previous
incarnation of the node that was killed and is still writing.
"""
from __future__ import annotations

import asyncio

from cluster.interface import Clock, SlotListener, SlotRecords


class StaticOwnership:
    def __init__(self, *, node_id: str, slot_count: int, records: SlotRecords, listener: SlotListener,
                 clock: Clock):
        self._records = records
        self._listener = listener
        self._node_id = node_id
        self._slot_count = slot_count
        self._clock = clock
        self._owned: dict[int, int] = {}

    async def start(self) -> None:
        for slot in range(self._slot_count):
            if slot in self._owned:
                continue
            epoch = await asyncio.to_thread(self._records.claim_slot, slot, self._node_id, self._clock.now())
            self._owned[slot] = epoch
            await self._listener.slot_assigned(slot, epoch)

    async def stop(self) -> None:
        owned, self._owned = self._owned, {}
        for slot in owned:
            await self._listener.slot_revoked(slot, clean=True)

    def slot_lost(self, slot: int) -> None:
        """The store refused our epoch (another incarnation claimed it)."""
        self._owned.pop(slot, None)

    def owned(self) -> dict[int, int]:
        return dict(self._owned)

    def snapshot(self) -> dict:
        owned = dict(self._owned)
        return {"node": self._node_id, "session": "n/a (single node)", "members": {self._node_id: {}},
                "desired": {s: self._node_id for s in range(self._slot_count)},
                "claims": {s: {"node": self._node_id, "epoch": e} for s, e in owned.items()}, "owned": owned}
