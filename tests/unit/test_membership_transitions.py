"""The session state machine, table-driven: starting state, kazoo report, expected result."""
from __future__ import annotations

import math

import pytest

from membership.interface import SessionState as S
from membership.transitions import KAZOO_CONNECTED, KAZOO_LOST, KAZOO_SUSPENDED, SessionTracker


def tracker_in(state: str) -> SessionTracker:
    """A tracker driven into `state` through kazoo reports (session 7, generation 1)."""
    t = SessionTracker()
    by_state: dict[str, list[tuple[str, int | None]]] = {   # state -> (kazoo report, session id)
        "stopped": [],
        "connected": [(KAZOO_CONNECTED, 7)],
        "suspended": [(KAZOO_CONNECTED, 7), (KAZOO_SUSPENDED, 7)],
        "lost": [(KAZOO_CONNECTED, 7), (KAZOO_SUSPENDED, 7), (KAZOO_LOST, None)],
    }
    for i, (k, sid) in enumerate(by_state[state]):
        t.observe(k, sid, now=float(i))
    return t


# (given state, kazoo report, session id, expected new state or None for no event,
#  expected generation, expected new_session)
CASES = [
    ("stopped", KAZOO_CONNECTED, 7, S.CONNECTED, 1, True),
    ("connected", KAZOO_CONNECTED, 7, None, 1, False),
    ("connected", KAZOO_CONNECTED, 8, S.CONNECTED, 2, True),   # new id without LOST
    ("connected", KAZOO_SUSPENDED, 7, S.SUSPENDED, 1, False),
    ("connected", KAZOO_LOST, None, S.LOST, 1, False),
    ("suspended", KAZOO_CONNECTED, 7, S.CONNECTED, 1, False),  # same session came back
    ("suspended", KAZOO_CONNECTED, 9, S.CONNECTED, 2, True),   # different session
    ("suspended", KAZOO_SUSPENDED, 7, None, 1, False),
    ("suspended", KAZOO_LOST, None, S.LOST, 1, False),
    ("lost", KAZOO_CONNECTED, 9, S.CONNECTED, 2, True),
    ("lost", KAZOO_SUSPENDED, None, None, 1, False),
    ("lost", KAZOO_LOST, None, None, 1, False),
]


@pytest.mark.parametrize("given,report,sid,expected,generation,new_session", CASES)
def test_transition(given, report, sid, expected, generation, new_session):
    t = tracker_in(given)
    old = t.state

    event = t.observe(report, sid, now=100.0)

    if expected is None:
        assert event is None
        assert t.state == old
    else:
        assert event is not None
        assert (event.old_state, event.new_state) == (old, expected)
        assert event.generation == generation == t.generation
        assert event.new_session is new_session
        assert event.at_monotonic == 100.0
        assert t.state == expected


def test_suspended_since_is_kept_through_lost_and_cleared_on_connect():
    t = tracker_in("connected")
    t.observe(KAZOO_SUSPENDED, 7, now=10.0)
    assert t.suspended_since == 10.0 and t.session_id == 7
    assert t.suspended_for_s(now=12.5) == 2.5

    t.observe(KAZOO_LOST, None, now=15.0)
    assert t.suspended_since == 10.0 and t.session_id is None
    assert t.suspended_for_s(now=16.0) == 6.0

    t.observe(KAZOO_CONNECTED, 8, now=17.0)
    assert t.suspended_since is None and t.session_id == 8
    assert t.suspended_for_s(now=18.0) == 0.0


def test_lost_without_suspended_starts_the_clock():
    t = tracker_in("connected")
    t.observe(KAZOO_LOST, None, now=5.0)
    assert t.suspended_since == 5.0


def test_stop_from_any_state_and_stopped_is_infinitely_suspended():
    for given in ("connected", "suspended", "lost"):
        t = tracker_in(given)
        event = t.stop(now=50.0)
        assert event is not None and event.new_state is S.STOPPED and event.old_state == given
        assert t.session_id is None and t.suspended_since is None
        assert math.isinf(t.suspended_for_s(now=51.0))
        assert t.stop(now=52.0) is None  # twice: nothing new


def test_unknown_kazoo_state_is_rejected():
    with pytest.raises(ValueError, match="kazoo_state"):
        SessionTracker().observe("CONNECTED_RO", 1, now=0.0)


def test_states_compare_equal_to_their_strings():
    assert S.CONNECTED == "connected" and S.SUSPENDED == "suspended"
    assert S.LOST == "lost" and S.STOPPED == "stopped"
