"""The session state machine: what kazoo reported in, taskring's state and events out.

Pure (no I/O, no threads, time passed in), so the rules are tested table-driven
and shared by ZkSession and its in-memory twin. See session.py for why the
states mean what they mean.

kazoo's three states go in as strings ("CONNECTED", "SUSPENDED", "LOST", the
values of kazoo.protocol.states.KazooState) together with the session id kazoo
holds at that moment.
"""
from __future__ import annotations

from .interface import SessionEvent, SessionState

KAZOO_CONNECTED = "CONNECTED"
KAZOO_SUSPENDED = "SUSPENDED"
KAZOO_LOST = "LOST"


class SessionTracker:
    """Turns kazoo state reports into SessionState changes and SessionEvents.

    Rules:
    - CONNECTED establishes a new session (generation + 1, new_session=True) when
      we were LOST, or when the session id differs from the last one we saw
      (this includes the very first connect). Otherwise it is the same session
      coming back from SUSPENDED.
    - SUSPENDED keeps the session id; suspended_since is when the connection
      dropped.
    - LOST clears the session id; suspended_since stays (we have been without a
      trusted session since the connection dropped), or is set now if LOST came
      without a SUSPENDED first.
    - stop() ends in STOPPED from any state.
    A report that changes nothing yields no event.
    """

    def __init__(self) -> None:
        self.state = SessionState.STOPPED
        self.generation = 0
        self.session_id: int | None = None
        self.suspended_since: float | None = None
        self._last_session_id: int | None = None

    def observe(self, kazoo_state: str, session_id: int | None, now: float) -> SessionEvent | None:
        old = self.state
        new_session = False
        if kazoo_state == KAZOO_CONNECTED:
            new_session = old is SessionState.LOST or session_id != self._last_session_id
            if new_session:
                self.generation += 1
            elif old is SessionState.CONNECTED:
                return None
            self.state = SessionState.CONNECTED
            self.session_id = session_id
            self._last_session_id = session_id
            self.suspended_since = None
        elif kazoo_state == KAZOO_SUSPENDED:
            if old in (SessionState.SUSPENDED, SessionState.LOST, SessionState.STOPPED):
                # kazoo never reports SUSPENDED after LOST (it reconnects with a
                # new session first); nothing to learn from it if it did.
                return None
            self.state = SessionState.SUSPENDED
            self.suspended_since = now
        elif kazoo_state == KAZOO_LOST:
            if old in (SessionState.LOST, SessionState.STOPPED):
                return None
            self.state = SessionState.LOST
            self.session_id = None
            if self.suspended_since is None:
                self.suspended_since = now
        else:
            raise ValueError(f"kazoo_state: unknown state {kazoo_state!r}")
        return SessionEvent(old, self.state, self.generation, now, new_session)

    def stop(self, now: float) -> SessionEvent | None:
        old = self.state
        if old is SessionState.STOPPED:
            return None
        self.state = SessionState.STOPPED
        self.session_id = None
        self.suspended_since = None
        return SessionEvent(old, self.state, self.generation, now, False)

    def suspended_for_s(self, now: float) -> float:
        """0.0 while connected; inf when stopped; else seconds since the connection dropped."""
        if self.state is SessionState.CONNECTED:
            return 0.0
        if self.state is SessionState.STOPPED or self.suspended_since is None:
            return float("inf")
        return max(0.0, now - self.suspended_since)
