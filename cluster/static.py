"""Ownership without a cluster: one node owns every slot.

Used by a single dispatcher (`taskring node --single`) and by tests of the core
path. It still claims each slot in the store, so the epoch fences a previous
incarnation of the node that was killed and is still writing.
"""
from __future__ import annotations

import asyncio
import logging
import math

from cluster.interface import Clock, SlotLeased, SlotListener, SlotRecords

log = logging.getLogger(__name__)


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
            epoch = await self._claim(slot)
            self._owned[slot] = epoch
            await self._listener.slot_assigned(slot, epoch)

    async def _claim(self, slot: int) -> int:
        """Claim the slot; a cluster node that held it until just now may still have a
        lease on it (a cluster turned into one node): wait that out."""
        while True:
            try:
                return await asyncio.to_thread(self._records.claim_slot, slot, self._node_id, self._clock.now())
            except SlotLeased as leased:
                log.warning("slot %d: %s; waiting for it to run out", slot, leased)
                await asyncio.sleep(leased.remaining_ms / 1000)

    async def stop(self) -> None:
        owned, self._owned = self._owned, {}
        for slot in owned:
            await self._listener.slot_revoked(slot, clean=True)

    def slot_lost(self, slot: int) -> None:
        """The store refused our epoch (another incarnation claimed it)."""
        self._owned.pop(slot, None)

    def owned(self) -> dict[int, int]:
        return dict(self._owned)

    def lease_remaining_s(self) -> float:
        return math.inf

    def snapshot(self) -> dict:
        owned = dict(self._owned)
        return {"node": self._node_id, "session": "n/a (single node)", "members": {self._node_id: {}},
                "desired": {s: self._node_id for s in range(self._slot_count)},
                "claims": {s: {"node": self._node_id, "epoch": e} for s, e in owned.items()}, "owned": owned}
