"""The engine's table of the slots it owns: each slot's epoch, whether it is still active
(not draining for a handoff), and the attempts it has in flight.

The engine changes it as ownership moves (assign, revoke); everything else reads it:
intake and dispatch act only on a task whose slot `is_current` under the task's epoch,
the completer records outcomes while the slot is still `held` under that epoch
(draining included), and the recovery guard asks what is in flight.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from dispatcher.engine.due import Due


@dataclasses.dataclass
class SlotState:
    epoch: int
    active: bool = True          # False while draining for a clean handoff
    in_flight: int = 0


class SlotTable:
    def __init__(self) -> None:
        self._slots: dict[int, SlotState] = {}
        self._in_flight_ids: set[str] = set()   # popped, dispatching, or awaiting an outcome

    # ---- ownership (the engine) ----

    def assign(self, slot: int, epoch: int) -> SlotState:
        state = self._slots[slot] = SlotState(epoch=epoch)
        return state

    def get(self, slot: int) -> SlotState | None:
        return self._slots.get(slot)

    def remove(self, slot: int, state: SlotState) -> bool:
        """Forget `slot` if `state` is still its entry (not re-assigned meanwhile)."""
        if self._slots.get(slot) is not state:
            return False
        del self._slots[slot]
        return True

    def slots(self) -> list[int]:
        return list(self._slots)

    # ---- what the loops read ----

    def is_current(self, slot: int, epoch: int) -> bool:
        """Owned and active under `epoch`: new work for it may start."""
        state = self._slots.get(slot)
        return state is not None and state.active and state.epoch == epoch

    def holds(self, slot: int, epoch: int) -> bool:
        """Still in the table under `epoch`, active or draining: work of that epoch may finish."""
        state = self._slots.get(slot)
        return state is not None and state.epoch == epoch

    def owned(self) -> dict[int, int]:
        """slot -> epoch of the active slots."""
        return {s: st.epoch for s, st in self._slots.items() if st.active}

    def epochs(self) -> dict[int, int]:
        """slot -> epoch of every slot in the table, draining ones included."""
        return {s: st.epoch for s, st in self._slots.items()}

    # ---- attempts in flight (the dispatch loop) ----

    def begin(self, dues: Sequence[Due]) -> None:
        """These attempts are in flight (until end() of the same dues)."""
        for d in dues:
            self._in_flight_ids.add(d.task_id)
            state = self._slots.get(d.slot)
            if state is not None:
                state.in_flight += 1

    def end(self, dues: Sequence[Due]) -> None:
        self._in_flight_ids.difference_update(d.task_id for d in dues)
        for d in dues:
            state = self._slots.get(d.slot)
            if state is not None:
                state.in_flight -= 1

    def in_flight_ids(self) -> set[str]:
        return set(self._in_flight_ids)

    def in_flight_count(self) -> int:
        """For the admin threads: len() of the set reads it whole, where copying it from
        another thread while the loop changes it could fail."""
        return len(self._in_flight_ids)


class OwnedSlots(Protocol):
    """What a per-slot loop of the owner (the sweeper, the cron materializer) needs from the
    engine: the slots it owns now with their epochs, whether it is held, and a poke for the poller."""

    def owned(self) -> dict[int, int]: ...

    @property
    def held(self) -> bool: ...

    def poll_soon(self) -> None: ...
