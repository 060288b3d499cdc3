"""membership.SlotClaims against the real ZooKeeper: the claim znodes the ownership
protocol (cluster/coordinator.py) stands on. Exactly one of two racing claims wins,
a claim is deleted only by the session that made it, and a change of the claims
reaches the callback on a thread of ours."""
from __future__ import annotations

import threading

import pytest

from membership import SessionState, SlotClaims, ZkSession

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SESSION_MS = 3000
WAIT_S = 15.0


@pytest.fixture
def sessions(hosts: str):
    made: list[ZkSession] = []

    def make() -> ZkSession:
        session = ZkSession(hosts, session_timeout_ms=SESSION_MS)
        session.start()
        made.append(session)
        return session

    yield make
    for session in reversed(made):
        if session.state is not SessionState.STOPPED:
            session.stop()


def test_of_two_racing_claims_exactly_one_wins_and_both_read_it(sessions):
    a, b = SlotClaims(sessions(), "node-a"), SlotClaims(sessions(), "node-b")
    changed = threading.Event()
    callback_threads: list[str] = []

    def on_change() -> None:
        callback_threads.append(threading.current_thread().name)
        changed.set()

    a.start(on_change)
    b.start(lambda: None)
    try:
        changed.clear()
        results: dict[str, bool] = {}
        threads = [threading.Thread(target=lambda c=c, n=n: results.__setitem__(n, c.create(3, {"node": n})))
                   for c, n in ((a, "node-a"), (b, "node-b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT_S)
        assert sorted(results.values()) == [False, True]
        winner = next(n for n, won in results.items() if won)
        assert a.read_all() == b.read_all() == {3: {"node": winner}}
        assert changed.wait(WAIT_S), "the claim did not reach a's callback"
        assert callback_threads[-1].startswith("taskring-claims-"), callback_threads  # not kazoo's thread
    finally:
        a.stop()
        b.stop()


def test_a_claim_is_deleted_only_by_the_session_that_made_it(sessions):
    first = sessions()
    ours = SlotClaims(first, "node-a")
    ours.start(lambda: None)
    assert ours.create(5, {"node": "node-a", "epoch": None})
    ours.update(5, {"node": "node-a", "epoch": 7})
    # The same node id on another session (a restarted process) must not delete it:
    # the claim belongs to the old session until that session ends.
    restarted = SlotClaims(sessions(), "node-a")
    restarted.start(lambda: None)
    other = SlotClaims(sessions(), "node-b")
    other.start(lambda: None)
    try:
        restarted.delete_own(5)
        other.delete_own(5)
        assert other.read_all() == {5: {"node": "node-a", "epoch": 7}}
        ours.delete_own(5)
        assert other.read_all() == {}
        ours.delete_own(5)  # already gone: no error
    finally:
        for claims in (ours, restarted, other):
            claims.stop()


def test_a_claim_vanishes_with_its_session(sessions):
    session = sessions()
    claims = SlotClaims(session, "node-a")
    claims.start(lambda: None)
    watcher = SlotClaims(sessions(), "node-b")
    gone = threading.Event()
    watcher.start(gone.set)
    try:
        assert claims.create(1, {"node": "node-a"})
        gone.clear()
        claims.stop()
        session.stop()
        assert gone.wait(WAIT_S), "the watcher never heard of the change"
        assert watcher.read_all() == {}
        assert watcher.create(1, {"node": "node-b"})
    finally:
        watcher.stop()
