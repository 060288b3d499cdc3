"""Conformance of slot ownership (claim_slot, release_slot, ensure_slots, leases: the
fencing record) and of Kafka progress (commit_offsets, load_offsets), interface.py's.
"""
from __future__ import annotations

import pytest

from cluster.interface import LOST, RENEWED, WANTED, SlotLeased
from dispatcher.store.records import CANCELLED, CLAIMED, DEAD_LETTERED, DISPATCHED, ENQUEUED, PENDING, SUCCEEDED
from tests.conformance.world import (
    BUILD_AT,
    NODE,
    T0,
    TOPIC,
    Area,
    Case,
    Row,
    T,
    World,
    case_test,
    equal,
    mysql_claim,
)

# ---- claim_slot, release_slot, ensure_slots


def _check_reclaimed(w: World, epoch: int) -> None:
    assert epoch == w.epochs[0] + 1
    assert w.store.slot_owners()[0] == (epoch, "n2")
    assert w.row("claimed").epoch == epoch and w.row("disp").epoch == epoch
    assert w.history("disp")[-1].state == "dispatched"   # no event for the reset


CLAIM_SLOT = (
    Case("after an owner that never released: claimed, dispatched and enqueued rows go back to pending",
         given=(Row("claimed", CLAIMED, attempts=1), Row("disp", DISPATCHED, attempts=2), Row("pend", PENDING),
                Row("enq", ENQUEUED), Row("done", SUCCEEDED), Row("dead", DEAD_LETTERED), Row("gone", CANCELLED),
                Row("other-claimed", CLAIMED, slot=1), Row("other-disp", DISPATCHED, slot=1),
                Row("other-enq", ENQUEUED, slot=1)),
         when=lambda w: w.store.claim_slot(0, "n2", T0),
         then={"claimed": (PENDING, 1), "disp": (PENDING, 2), "enq": (PENDING, 0)}, check=_check_reclaimed),
    Case("after a clean release, enqueued rows stay enqueued (their messages are in Kafka)",
         given=(Row("enq", ENQUEUED), Row("claimed", CLAIMED)),
         when=lambda w: (w.store.release_slot(0, w.epochs[0], T0), w.store.claim_slot(0, "n2", T0))[1],
         then={"claimed": (PENDING, 0)},
         check=lambda w, epoch: equal(w.store.slot_owners()[0], (w.epochs[0] + 1, "n2"))),
    Case("the first claim of a slot without a record is epoch 1",
         given=(), when=lambda w: w.store.claim_slot(40, "n2", T0), returns=1,
         check=lambda w, _: equal(w.store.slot_owners()[40], (1, "n2"))),
    Case("ensure_slots adds records at epoch 0 and changes no existing one",
         given=(), when=lambda w: w.store.ensure_slots(6),
         check=lambda w, _: equal(w.store.slot_owners(), {0: (1, NODE), 1: (1, NODE), 2: (1, NODE), 3: (1, NODE),
                                                          4: (0, ""), 5: (0, "")})),
)


def _claim_and_read_doubt(w: World, *, release_first: bool = False, redispatch: bool = False,
                          claim_twice: bool = False):
    if release_first:
        assert w.store.release_slot(0, w.epochs[0], T0)
    epoch = w.store.claim_slot(0, "n2", T0)
    if claim_twice:   # n2 claims the row into its heap, then crashes
        _, rows = w.store.claim_due(0, epoch, T0, 10, T0)
        assert [row.task_id for row in rows] == ["disp"]
        epoch = w.store.claim_slot(0, "n3", T0)
    if redispatch:
        _, rows = w.store.claim_due(0, epoch, T0, 10, T0)
        assert [row.task_id for row in rows] == ["disp"]
        done, _ = w.store.begin_dispatch([mysql_claim("disp", 3)], {0: epoch}, "n2", T0)
        assert done == {"disp"}
    return sorted((d.task_id, d.namespace, d.task_type, d.attempt, d.dispatched_at.replace(tzinfo=None))
                  for d in w.store.attempts_in_doubt(0, epoch, T0))


ATTEMPTS_IN_DOUBT = (
    Case("after a crash, the attempts taken back from dispatched, with when they were dispatched",
         given=(Row("disp", DISPATCHED, attempts=2), Row("claimed", CLAIMED, attempts=1), Row("pend", PENDING),
                Row("enq", ENQUEUED), Row("other-disp", DISPATCHED, slot=1)),
         when=_claim_and_read_doubt, then={"disp": (PENDING, 2), "claimed": (PENDING, 1), "enq": (PENDING, 0)},
         returns=[("disp", "ns", "send", 2, BUILD_AT)]),
    Case("after a clean release whose drain ran out, a dispatched attempt is in doubt too",
         given=(Row("disp", DISPATCHED, attempts=2),),
         when=lambda w: _claim_and_read_doubt(w, release_first=True), then={"disp": (PENDING, 2)},
         returns=[("disp", "ns", "send", 2, BUILD_AT)]),
    Case("an attempt in doubt still in the next owner's heap when it crashes too stays in doubt",
         given=(Row("disp", DISPATCHED, attempts=2),),
         when=lambda w: _claim_and_read_doubt(w, claim_twice=True), then={"disp": (PENDING, 2)},
         returns=[("disp", "ns", "send", 2, BUILD_AT)]),
    Case("an attempt dispatched again is no longer in doubt",
         given=(Row("disp", DISPATCHED, attempts=2),),
         when=lambda w: _claim_and_read_doubt(w, redispatch=True), then={"disp": (DISPATCHED, 3)}, returns=[]),
)


def _check_released(w: World, result) -> None:
    assert w.store.slot_owners()[0] == (w.epochs[0], "")
    assert w.store.slot_owners()[1] == (w.epochs[1], NODE)


RELEASE_SLOT = (
    Case("gives claimed rows back, clears the owner, keeps the epoch; dispatched rows stay",
         given=(Row("claimed", CLAIMED, attempts=1), Row("disp", DISPATCHED), Row("pend", PENDING),
                Row("other-claimed", CLAIMED, slot=1)),
         when=lambda w: w.store.release_slot(0, w.epochs[0], T0),
         returns=True, then={"claimed": (PENDING, 1)}, check=_check_released),
    Case("a stale epoch releases nothing",
         given=(Row("claimed", CLAIMED),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.release_slot(0, w.epochs[0], T0))[1],
         returns=False, then={"claimed": (PENDING, 0)},   # by the claim_slot, not the release
         check=lambda w, _: equal(w.store.slot_owners()[0], (w.epochs[0] + 1, "n2"))),
)

# ---- slot leases (claim_slot's lease_ms, renew_leases, release_slot)

LEASE_MS = 60_000   # live for the whole case, by either store's clock


def _refused_claim(store, slot: int, node: str) -> tuple[str, bool]:
    with pytest.raises(SlotLeased) as info:
        store.claim_slot(slot, node, T0)
    return info.value.owner, info.value.remaining_ms > 0


def _leased_then_wanted(w: World) -> tuple:
    epoch = w.store.claim_slot(0, NODE, T0, LEASE_MS)
    refused = _refused_claim(w.store, 0, "n2")
    return refused, epoch, w.store.renew_leases(NODE, {0: epoch}, LEASE_MS, T0)


def _check_wanted(w: World, result: tuple) -> None:
    refused, epoch, renewal = result
    assert refused == (NODE, True)   # by NODE's live lease
    assert renewal == {0: WANTED}    # NODE's renewal hears of it
    assert w.store.slot_owners()[0] == (epoch, NODE)   # and nothing else changed


def _renewals(w: World) -> dict[int, str]:
    epoch = w.store.claim_slot(0, NODE, T0, LEASE_MS)
    w.store.claim_slot(1, "n2", T0)   # NODE's lease on slot 1 (from `given`, lease_ms 0) has run out
    return w.store.renew_leases(NODE, {0: epoch, 1: w.epochs[1], 2: w.epochs[2] - 1, 3: w.epochs[3]}, LEASE_MS, T0)


def _released_then_claimed(w: World) -> tuple:
    epoch = w.store.claim_slot(0, NODE, T0, LEASE_MS)
    w.store.release_slot(0, epoch, T0)
    return w.store.claim_slot(0, "n2", T0, LEASE_MS) - epoch, w.store.renew_leases(NODE, {0: epoch}, LEASE_MS, T0)


LEASES = (
    Case("a claim is refused while another node's lease is live, and marks the slot wanted",
         given=(), when=_leased_then_wanted,
         check=_check_wanted),
    Case("renew_leases: renewed under the epoch held; lost when another claimed it or under an older epoch",
         given=(), when=_renewals, returns={0: RENEWED, 1: LOST, 2: LOST, 3: RENEWED}),
    Case("a release ends the lease: another node claims at once, and the old owner's renewal says lost",
         given=(), when=_released_then_claimed, returns=(1, {0: LOST})),
    Case("an owner's own lease does not refuse its own claim",
         given=(), when=lambda w: w.store.claim_slot(0, NODE, T0, LEASE_MS) and w.store.claim_slot(0, NODE, T0),
         returns=3),
)

# ---- Kafka offsets

OFFSETS = (
    Case("commit then load",
         given=(),
         when=lambda w: (w.store.commit_offsets([(TOPIC, 0, 17), ("tasks.high", 0, 3), (TOPIC, 1, 5)], w.epochs, T0),
                         w.store.load_offsets([(TOPIC, 0), ("tasks.high", 0), (TOPIC, 2)])),
         returns=(set(), {(TOPIC, 0): 17, ("tasks.high", 0): 3}),
         check=lambda w, _: equal(w.store.committed_offsets(), {(TOPIC, 0): 17, ("tasks.high", 0): 3, (TOPIC, 1): 5})),
    Case("a later commit replaces the offset",
         given=(),
         when=lambda w: (w.store.commit_offsets([(TOPIC, 0, 17)], w.epochs, T0),
                         w.store.commit_offsets([(TOPIC, 0, 20)], w.epochs, T(1)),
                         w.store.load_offsets([(TOPIC, 0)]))[2],
         returns={(TOPIC, 0): 20}),
    Case("a stale slot's commit is refused and named; a live slot's is stored",
         given=(),
         when=lambda w: (w.store.commit_offsets([(TOPIC, 0, 17)], w.epochs, T0),
                         w.store.claim_slot(0, "n2", T0),
                         w.store.commit_offsets([(TOPIC, 0, 99), (TOPIC, 1, 4)], w.epochs, T0),
                         w.store.committed_offsets())[2:],
         returns=({0}, {(TOPIC, 0): 17, (TOPIC, 1): 4})),
    Case("load of nothing", given=(), when=lambda w: w.store.load_offsets([]), returns={}),
)


class SlotsAndOffsetsConformance(Area):
    test_claim_slot = case_test(*CLAIM_SLOT)
    test_attempts_in_doubt = case_test(*ATTEMPTS_IN_DOUBT)
    test_slot_leases = case_test(*LEASES)
    test_release_slot = case_test(*RELEASE_SLOT)
    test_offsets = case_test(*OFFSETS)
