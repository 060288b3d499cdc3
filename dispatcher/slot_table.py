"""The engine's table of the slots it owns: each slot's epoch, whether it is still
active (not draining for a handoff), and its attempts in flight. Shared by the engine,
which changes it as ownership moves, and the dispatch loop, which counts in flight."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class SlotState:
    epoch: int
    active: bool = True          # False while draining for a clean handoff
    in_flight: int = 0
