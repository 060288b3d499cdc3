"""The engine's table of the slots it owns: each slot's epoch, whether it is still
active (not draining for a handoff), and its attempts in flight. Shared by the engine,
which changes it as ownership moves, and the dispatch loop, which counts in flight."""
from __future__ import annotations

import dataclasses
from typing import Protocol


@dataclasses.dataclass
class SlotState:
    epoch: int
    active: bool = True          # False while draining for a clean handoff
    in_flight: int = 0


class OwnedSlots(Protocol):
    """What a per-slot loop of the owner (the sweeper, the cron materializer) needs from the
    engine: the slots it owns now with their epochs, whether it is held, and a poke for the poller."""

    def owned(self) -> dict[int, int]: ...

    @property
    def held(self) -> bool: ...

    def poll_soon(self) -> None: ...
