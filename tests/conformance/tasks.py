"""Conformance of the task store's rows (dispatcher/store/interface.py): the API's writes,
the owner's claims, dispatches and outcomes, the guard, reads and observation. Slot
ownership and Kafka offsets are slots_and_offsets.py's.
"""
from __future__ import annotations

import datetime as dt
import threading

import pytest

from dispatcher.base.errors import TaskAlreadyFinished, TaskIdTaken, TaskNotFound
from dispatcher.store import records as r
from dispatcher.store.records import CANCELLED, CLAIMED, DEAD_LETTERED, DISPATCHED, ENQUEUED, PENDING, SUCCEEDED
from taskring.task import TaskState
from tests.conformance.world import (
    BUILD_AT,
    NODE,
    T0,
    Area,
    Case,
    Row,
    T,
    World,
    case_test,
    changed_updated_at,
    equal,
    given,
    kafka_claim,
    mysql_claim,
    new_task,
    outcome,
)

# ---- insert_tasks

def _check_fresh_insert(w: World, _result) -> None:
    a, b = w.row("a"), w.row("b")
    assert (a.status, a.attempts, a.epoch, a.slot, a.trigger_at) == (PENDING, 0, 0, 1, T(60))
    assert (b.status, b.trigger_at, b.envelope) == (ENQUEUED, T(5), b"envelope of b")
    assert (a.created_at, a.updated_at, a.last_error) == (T0, T0, None)
    assert w.history("a") == [r.Event("a", TaskState.ACCEPTED, T0, NODE, 0),
                              r.Event("a", TaskState.QUEUED, T0, NODE, 0, "mysql")]
    assert w.history("b")[-1] == r.Event("b", TaskState.QUEUED, T0, NODE, 0, "kafka")
    assert w.store.task_types_by_slot() == {1: ["billing/charge", "ns/send"]}
    assert w.store.pending_by_slot() == {0: 0, 1: 2, 2: 0, 3: 0}


def _check_duplicate(w: World, _result) -> None:
    assert w.row("a").envelope == b"envelope of a"  # the first submit's, not the retry's
    assert w.row("new").status == PENDING


INSERT = (
    Case("fresh rows with their accepted and queued events",
         given=(),
         when=lambda w: w.store.insert_tasks(
             [new_task("a", slot=1, status=PENDING, due_s=60, created_at=T0),
              new_task("b", slot=1, status=ENQUEUED, due_s=5, namespace="billing", task_type="charge",
                       created_at=T0)], NODE),
         returns={}, then={"a": (PENDING, 0), "b": (ENQUEUED, 0)}, check=_check_fresh_insert),
    Case("an existing id is returned with its status and nothing is written for it",
         given=(Row("a", PENDING),),
         when=lambda w: w.store.insert_tasks(
             [new_task("a", status=ENQUEUED, envelope=b"retried submit", created_at=T0),
              new_task("new", created_at=T0)], NODE),
         returns={"a": PENDING}, then={"new": (PENDING, 0)}, check=_check_duplicate),
    Case("existing ids report their current status, whatever it is",
         given=(Row("d", DISPATCHED), Row("s", SUCCEEDED), Row("c", CANCELLED)),
         when=lambda w: w.store.insert_tasks([new_task(t, created_at=T0) for t in ("d", "s", "c")], NODE),
         returns={"d": DISPATCHED, "s": SUCCEEDED, "c": CANCELLED}),
    Case("task ids are case-sensitive: Order-1 and order-1 are two tasks",
         given=(Row("Order-1", PENDING),),
         when=lambda w: w.store.insert_tasks([new_task("order-1", status=ENQUEUED, created_at=T0)], NODE),
         returns={}, then={"order-1": (ENQUEUED, 0)},
         check=lambda w, _: equal((w.row("order-1").envelope, w.row("Order-1").envelope),
                                  (b"envelope of order-1", b"envelope of Order-1"))),
    Case("an empty batch writes nothing and returns {}",
         given=(), when=lambda w: w.store.insert_tasks([], NODE), returns={},
         check=lambda w, _: equal(w.store.pending_by_slot(), {0: 0, 1: 0, 2: 0, 3: 0})),
    Case("an id repeated in one batch is inserted once, from its first occurrence",
         given=(),
         when=lambda w: w.store.insert_tasks([new_task("a", envelope=b"first", created_at=T0),
                                              new_task("a", envelope=b"second", created_at=T0)], NODE),
         then={"a": (PENDING, 0)},
         check=lambda w, _: equal((w.row("a").envelope, w.states("a")), (b"first", ["accepted", "queued"]))),
    Case("an id that is a task of another namespace is refused, and nothing of the batch is written",
         given=(Row("a", DEAD_LETTERED, namespace="other"),),
         when=lambda w: w.store.insert_tasks([new_task("new", created_at=T0),
                                              new_task("a", namespace="ns", created_at=T0)], NODE),
         raises=(TaskIdTaken, "'a'"), check=lambda w, _: _absent(w, "new")),
    Case("an id of another namespace is refused though an earlier occurrence in the batch is of it",
         given=(Row("a", PENDING, namespace="ns"),),
         when=lambda w: w.store.insert_tasks([new_task("a", namespace="other", created_at=T0),
                                              new_task("a", namespace="ns", created_at=T0)], NODE),
         raises=(TaskIdTaken, "'a'")),
    Case("types with a different case are two types",
         given=(Row("a", PENDING, slot=2, task_type="Charge"),),
         when=lambda w: w.store.insert_tasks([new_task("b", slot=2, task_type="charge", created_at=T0)], NODE),
         check=lambda w, _: equal(w.store.task_types_by_slot(), {2: ["ns/Charge", "ns/charge"]})),
)

# ---- insert_tasks with unique keys

def _absent(w: World, *task_ids: str) -> None:
    for task_id in task_ids:
        with pytest.raises(TaskNotFound):
            w.store.get_task(task_id)


def _insert_keyed(w: World, *specs: tuple[str, str], slot: int = 1, namespace: str = "ns",
                  created_at: dt.datetime = T0, unique_ttl_s: float | None = None):
    """insert_tasks of new tasks (task_id, unique_key) at `created_at`."""
    return w.store.insert_tasks([new_task(t, slot=slot, namespace=namespace, created_at=created_at, unique_key=k,
                                          unique_ttl_s=unique_ttl_s) for t, k in specs], NODE)


UNIQUE = (
    Case("a live holder keeps its key: a second task is answered Held by it and not inserted",
         given=(Row("a", PENDING, unique_key="order:1"), Row("d", DISPATCHED, unique_key="order:2"),
                Row("q", CLAIMED, unique_key="order:3")),
         when=lambda w: _insert_keyed(w, ("b", "order:1"), ("e", "order:2"), ("r", "order:3")),
         returns={"b": r.Held("a", PENDING, 0), "e": r.Held("d", DISPATCHED, 0), "r": r.Held("q", CLAIMED, 0)},
         check=lambda w, _: _absent(w, "b", "e", "r")),
    Case("a terminal holder's key is free again: the new task takes it",
         given=(Row("s", SUCCEEDED, unique_key="k1"), Row("c", CANCELLED, unique_key="k2"),
                Row("x", DEAD_LETTERED, unique_key="k3")),
         when=lambda w: _insert_keyed(w, ("n1", "k1"), ("n2", "k2"), ("n3", "k3")),
         returns={}, then={"n1": (PENDING, 0), "n2": (PENDING, 0), "n3": (PENDING, 0)}),
    Case("a key taken over from a finished holder is held by its new holder",
         given=(Row("s", SUCCEEDED, unique_key="k"),),
         when=lambda w: (_insert_keyed(w, ("n1", "k")), _insert_keyed(w, ("n2", "k")))[1],
         returns={"n2": r.Held("n1", PENDING, 1)}, then={"n1": (PENDING, 0)},
         check=lambda w, _: _absent(w, "n2")),
    Case("keys are per namespace and case-sensitive",
         given=(Row("a", PENDING, unique_key="k"),),
         when=lambda w: (_insert_keyed(w, ("b", "k"), namespace="other"), _insert_keyed(w, ("c", "K")))[1],
         returns={}, then={"b": (PENDING, 0), "c": (PENDING, 0)}),
    Case("within one batch the first task with a key takes it and later ones are held by it",
         given=(),
         when=lambda w: _insert_keyed(w, ("a", "k"), ("b", "k"), ("c", "k2"), ("d", "k")),
         returns={"b": r.Held("a", PENDING, 1), "d": r.Held("a", PENDING, 1)},
         then={"a": (PENDING, 0), "c": (PENDING, 0)}, check=lambda w, _: _absent(w, "b", "d")),
    Case("a batch whose key a live task holds: every task of the batch with it is held by that task",
         given=(Row("h", ENQUEUED, unique_key="k"),),
         when=lambda w: _insert_keyed(w, ("a", "k"), ("b", "k")),
         returns={"a": r.Held("h", ENQUEUED, 0), "b": r.Held("h", ENQUEUED, 0)},
         check=lambda w, _: _absent(w, "a", "b")),
    Case("a key with a TTL stays held past its holder's end, until the TTL",
         given=(Row("a", SUCCEEDED, unique_key="k", unique_ttl_s=60),),
         when=lambda w: (_insert_keyed(w, ("b", "k"), created_at=T(59)),
                         _insert_keyed(w, ("c", "k"), created_at=T(61))),
         returns=({"b": r.Held("a", SUCCEEDED, 0)}, {}), then={"c": (PENDING, 0)},
         check=lambda w, _: _absent(w, "b")),
    Case("past its TTL a key is free, even while its holder is live",
         given=(Row("a", PENDING, unique_key="k", unique_ttl_s=-1),),
         when=lambda w: _insert_keyed(w, ("b", "k")), returns={}, then={"b": (PENDING, 0)}),
    Case("a retried submit of the holder itself is a duplicate by task_id, not by key",
         given=(Row("a", PENDING, unique_key="k"),),
         when=lambda w: _insert_keyed(w, ("a", "k")), returns={"a": PENDING}),
    # take_key: an existing task (a dead letter being replayed) takes its key again.
    Case("take_key: a key a live task holds is not taken, and the holder is named",
         given=(Row("h", PENDING, unique_key="k"), Row("x", DEAD_LETTERED)),
         when=lambda w: w.store.take_key(new_task("x", unique_key="k", created_at=T0)),
         returns=r.Held("h", PENDING, 0)),
    Case("take_key: a key a finished task held is taken, and then holds against a new submit",
         given=(Row("s", SUCCEEDED, unique_key="k"), Row("x", PENDING)),
         when=lambda w: (w.store.take_key(new_task("x", unique_key="k", created_at=T0)),
                         _insert_keyed(w, ("n", "k"), slot=0)),
         returns=(None, {"n": r.Held("x", PENDING, 0)}), check=lambda w, _: _absent(w, "n")),
    Case("take_key: a key nobody has is taken; one the task already holds stays its",
         given=(Row("x", PENDING), Row("y", PENDING, unique_key="mine")),
         when=lambda w: (w.store.take_key(new_task("x", unique_key="fresh", created_at=T0)),
                         w.store.take_key(new_task("y", unique_key="mine", created_at=T0)),
                         _insert_keyed(w, ("n1", "fresh"), ("n2", "mine"), slot=0)),
         returns=(None, None, {"n1": r.Held("x", PENDING, 0), "n2": r.Held("y", PENDING, 0)})),
)

# ---- reroute_to_mysql

REROUTE = (
    Case("only enqueued rows move to pending, and are counted",
         given=(Row("e1", ENQUEUED), Row("e2", ENQUEUED, slot=1), Row("p", PENDING), Row("d", DISPATCHED),
                Row("e3", ENQUEUED)),
         when=lambda w: w.store.reroute_to_mysql(["e1", "e2", "p", "d", "unknown"], T0),
         returns=2, then={"e1": (PENDING, 0), "e2": (PENDING, 0)},
         check=lambda w, _: changed_updated_at(w, "e1", T0)),
    Case("an empty list is a no-op", given=(Row("e", ENQUEUED),),
         when=lambda w: w.store.reroute_to_mysql([], T0), returns=0),
)

# ---- cancel


def _check_cancelled(task_id: str, attempts: int):
    def check(w: World, _result) -> None:
        cancelled = r.Event(task_id, TaskState.CANCELLED, T0, NODE, attempts, "cancelled by request")
        assert w.history(task_id)[-1] == cancelled
    return check


CANCEL = (
    Case("pending", given=(Row("a", PENDING),), when=lambda w: w.store.cancel("a", NODE, T0),
         then={"a": (CANCELLED, 0)}, check=_check_cancelled("a", 0)),
    Case("enqueued", given=(Row("a", ENQUEUED),), when=lambda w: w.store.cancel("a", NODE, T0),
         then={"a": (CANCELLED, 0)}, check=_check_cancelled("a", 0)),
    Case("claimed", given=(Row("a", CLAIMED, attempts=2),), when=lambda w: w.store.cancel("a", NODE, T0),
         then={"a": (CANCELLED, 2)}, check=_check_cancelled("a", 2)),
    Case("a retry waiting in pending", given=(Row("a", PENDING, attempts=1),),
         when=lambda w: w.store.cancel("a", NODE, T0), then={"a": (CANCELLED, 1)}),
    Case("dispatched is refused as running", given=(Row("a", DISPATCHED),),
         when=lambda w: w.store.cancel("a", NODE, T0), raises=(TaskAlreadyFinished, "already running")),
    Case("succeeded is refused", given=(Row("a", SUCCEEDED),),
         when=lambda w: w.store.cancel("a", NODE, T0), raises=(TaskAlreadyFinished, "already succeeded")),
    Case("dead_lettered is refused", given=(Row("a", DEAD_LETTERED),),
         when=lambda w: w.store.cancel("a", NODE, T0), raises=(TaskAlreadyFinished, "already dead_lettered")),
    Case("cancelled is refused", given=(Row("a", CANCELLED),),
         when=lambda w: w.store.cancel("a", NODE, T0), raises=(TaskAlreadyFinished, "already cancelled")),
    Case("unknown id", given=(Row("a", PENDING),),
         when=lambda w: w.store.cancel("nope", NODE, T0), raises=(TaskNotFound, "'nope'")),
    Case("a cancelled claimed row is not dispatched by its owner",
         given=(Row("a", CLAIMED),),
         when=lambda w: (w.store.cancel("a", NODE, T0),
                         w.store.begin_dispatch([mysql_claim("a", 1)], w.epochs, NODE, T0))[1],
         returns=(set(), set()), then={"a": (CANCELLED, 0)}),
    Case("dispatched, of a type that heartbeats: cancelled, its dispatch kept in the history",
         given=(Row("a", DISPATCHED, attempts=2),),
         when=lambda w: w.store.cancel("a", NODE, T0, {("ns", "send")}), then={"a": (CANCELLED, 2)},
         check=lambda w, _: equal([e.state for e in w.history("a")][-2:], [TaskState.DISPATCHED,
                                                                            TaskState.CANCELLED])),
    Case("dispatched, of a type that does not heartbeat, is refused as running",
         given=(Row("a", DISPATCHED),), when=lambda w: w.store.cancel("a", NODE, T0, {("ns", "other")}),
         raises=(TaskAlreadyFinished, "already running")),
)

# ---- heartbeats


def _beat(w: World, task_id: str, attempt: int = 2, details: str | None = None, slot: int = 0,
          epoch: int | None = None) -> r.HeartbeatWrite:
    return r.HeartbeatWrite(task_id, slot, attempt, w.epochs[slot] if epoch is None else epoch, details)


def _beats_then_details(w: World) -> tuple:
    results = [w.store.record_heartbeats([_beat(w, "a", details='{"page": 1}')], T0),
               w.store.record_heartbeats([_beat(w, "a")], T(1)),   # None keeps the last details
               w.store.heartbeat_details(["a", "b"])]
    results.append(w.store.record_heartbeats([_beat(w, "a", details='{"page": 2}')], T(2)))
    return (*results, w.store.heartbeat_details(["a"]))


RECORDED, HB_CANCELLED, HB_LOST = r.HeartbeatResult.RECORDED, r.HeartbeatResult.CANCELLED, r.HeartbeatResult.LOST

HEARTBEATS = (
    Case("the running attempt's heartbeats are recorded, and its details kept for the next attempt",
         given=(Row("a", DISPATCHED, attempts=2), Row("b", DISPATCHED, attempts=1)), when=_beats_then_details,
         then={"a": (DISPATCHED, 2)},
         returns=([RECORDED], [RECORDED], {"a": '{"page": 1}'}, [RECORDED], {"a": '{"page": 2}'})),
    Case("each beat of a batch is answered in order: cancelled, another attempt, finished, unknown",
         given=(Row("a", DISPATCHED, attempts=2), Row("c", CANCELLED, attempts=2), Row("s", SUCCEEDED, attempts=2),
                Row("b", DISPATCHED, attempts=2, slot=1)),
         when=lambda w: (w.store.record_heartbeats([_beat(w, "c", details="1"), _beat(w, "a", attempt=1),
                                                    _beat(w, "s"), _beat(w, "nope"), _beat(w, "b", slot=1),
                                                    _beat(w, "a", details='"x"')], T0),
                         w.store.heartbeat_details(["a", "b", "c", "s"])),
         returns=([HB_CANCELLED, HB_LOST, HB_LOST, HB_LOST, RECORDED, RECORDED], {"a": '"x"'})),
    Case("a beat under an epoch the slot moved on from is lost, and writes nothing",
         given=(Row("a", DISPATCHED, attempts=2),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.claim_due(0, w.epochs[0] + 1, T0, 0, T0),
                         w.store.record_heartbeats([_beat(w, "a", details="1")], T0),
                         w.store.heartbeat_details(["a"]))[2:],
         then={"a": (PENDING, 2)},   # by the claim_slot
         returns=([HB_LOST], {})),
    Case("a beat of a row dispatched under another epoch is lost",
         given=(Row("a", DISPATCHED, attempts=2),),
         when=lambda w: w.store.record_heartbeats([_beat(w, "a", epoch=w.epochs[0] - 1)], T0), returns=[HB_LOST]),
    Case("no beats, no details", given=(),
         when=lambda w: (w.store.record_heartbeats([], T0), w.store.heartbeat_details([])), returns=([], {})),
)

# ---- claim_due


def _check_claimed_rows(w: World, result) -> None:
    ok, rows = result
    assert ok and [row.task_id for row in rows] == ["b", "c", "a"]
    assert {w.row(t).epoch for t in ("a", "b", "c")} == {w.epochs[0]}


CLAIM_DUE = (
    Case("claims due pending rows of the slot in trigger order, ties by id",
         given=(Row("a", PENDING, due_s=10), Row("c", PENDING, due_s=5), Row("b", PENDING, due_s=5),
                Row("late", PENDING, due_s=11), Row("other-slot", PENDING, slot=1, due_s=0),
                Row("enq", ENQUEUED, due_s=0), Row("claimed", CLAIMED, due_s=0), Row("disp", DISPATCHED, due_s=0),
                Row("retry", PENDING, due_s=1, attempts=2, slot=2)),
         when=lambda w: w.store.claim_due(0, w.epochs[0], T(10), 100, T0),
         then={"a": (CLAIMED, 0), "b": (CLAIMED, 0), "c": (CLAIMED, 0)}, check=_check_claimed_rows),
    Case("until is inclusive, to the millisecond",
         given=(Row("on-time", PENDING, due_s=10), Row("a-ms-later", PENDING, due_s=10.001)),
         when=lambda w: [row.task_id for row in w.store.claim_due(0, w.epochs[0], T(10), 100, T0)[1]],
         returns=["on-time"], then={"on-time": (CLAIMED, 0)}),
    Case("respects the limit, earliest first",
         given=(Row("a", PENDING, due_s=3), Row("b", PENDING, due_s=1), Row("c", PENDING, due_s=2)),
         when=lambda w: [row.task_id for row in w.store.claim_due(0, w.epochs[0], T(10), 2, T0)[1]],
         returns=["b", "c"], then={"b": (CLAIMED, 0), "c": (CLAIMED, 0)}),
    Case("a retry is claimed with the attempts made so far",
         given=(Row("a", PENDING, attempts=2),),
         when=lambda w: [(row.task_id, row.attempts) for row in w.store.claim_due(0, w.epochs[0], T(0), 9, T0)[1]],
         returns=[("a", 2)], then={"a": (CLAIMED, 2)}),
    Case("after another claim_slot the old epoch claims nothing",
         given=(Row("a", PENDING),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.claim_due(0, w.epochs[0], T(10), 100, T0))[1],
         returns=(False, []), then={"a": (PENDING, 0)}),
    Case("a slot never claimed is stale for any epoch",
         given=(), when=lambda w: w.store.claim_due(42, 1, T(10), 100, T0), returns=(False, [])),
    Case("an epoch from the future is stale too",
         given=(Row("a", PENDING),), when=lambda w: w.store.claim_due(0, w.epochs[0] + 1, T(10), 100, T0),
         returns=(False, [])),
    Case("returned rows are as claimed: status claimed, the claimer's epoch",
         given=(Row("a", PENDING),),
         when=lambda w: [(row.status, row.epoch, row.updated_at)
                         for row in w.store.claim_due(0, w.epochs[0], T(10), 100, T(1))[1]],
         returns=[(CLAIMED, 1, T(1))], then={"a": (CLAIMED, 0)}),
)
# ---- begin_dispatch


def _check_dispatch_events(w: World, _result) -> None:
    assert w.history("k")[-1] == r.Event("k", TaskState.DISPATCHED, T0, NODE, 1)
    assert w.row("k").epoch == w.epochs[0] and w.row("m").epoch == w.epochs[0]
    # A retry that fell due gets its queued event at its due time, then dispatched.
    assert w.history("retry")[-2:] == [r.Event("retry", TaskState.QUEUED, T(-5), NODE, 3),
                                        r.Event("retry", TaskState.DISPATCHED, T0, NODE, 3)]


BEGIN_DISPATCH = (
    Case("kafka claims need enqueued rows, mysql claims claimed rows, at attempt - 1",
         given=(Row("k", ENQUEUED), Row("m", CLAIMED), Row("retry", ENQUEUED, attempts=2, due_s=-5)),
         when=lambda w: w.store.begin_dispatch(
             [kafka_claim("k", 1), mysql_claim("m", 1), kafka_claim("retry", 3, due_s=-5)], w.epochs, NODE, T0),
         returns=({"k", "m", "retry"}, set()),
         then={"k": (DISPATCHED, 1), "m": (DISPATCHED, 1), "retry": (DISPATCHED, 3)}, check=_check_dispatch_events),
    Case("the queued event of a retry is never after the dispatch",
         given=(Row("retry", ENQUEUED, attempts=1, due_s=30),),
         when=lambda w: w.store.begin_dispatch([kafka_claim("retry", 2, due_s=30)], w.epochs, NODE, T0),
         then={"retry": (DISPATCHED, 2)},
         check=lambda w, _: equal(w.history("retry")[-2], r.Event("retry", TaskState.QUEUED, T0, NODE, 2))),
    Case("skips rows that do not expect this attempt on this path",
         given=(Row("enq", ENQUEUED), Row("claimed", CLAIMED), Row("pend", PENDING), Row("disp", DISPATCHED),
                Row("done", SUCCEEDED), Row("dead", DEAD_LETTERED), Row("gone", CANCELLED),
                Row("retry", ENQUEUED, attempts=1)),
         when=lambda w: w.store.begin_dispatch(
             [mysql_claim("enq", 1), kafka_claim("claimed", 1), kafka_claim("pend", 1), mysql_claim("pend", 1),
              kafka_claim("disp", 1), kafka_claim("disp", 2), kafka_claim("done", 2), kafka_claim("dead", 2),
              kafka_claim("gone", 1), kafka_claim("retry", 1), kafka_claim("retry", 3), kafka_claim("nope", 1)],
             w.epochs, NODE, T0),
         returns=(set(), set())),
    Case("a stale epoch dispatches nothing and names the slot",
         given=(Row("a", ENQUEUED), Row("b", ENQUEUED, slot=1)),
         when=lambda w: (w.store.claim_slot(0, "n2", T0),
                         w.store.begin_dispatch([kafka_claim("a", 1), kafka_claim("b", 1, slot=1)],
                                                w.epochs, NODE, T0))[1],
         returns=({"b"}, {0}), then={"b": (DISPATCHED, 1), "a": (PENDING, 0)}),  # "a": by n2's claim
    Case("a replayed claim of a task already dispatched is skipped",
         given=(Row("a", ENQUEUED),),
         when=lambda w: (w.store.begin_dispatch([kafka_claim("a", 1)], w.epochs, NODE, T0),
                         w.store.begin_dispatch([kafka_claim("a", 1)], w.epochs, NODE, T(1))),
         returns=(({"a"}, set()), (set(), set())), then={"a": (DISPATCHED, 1)},
         check=lambda w, _: equal(w.states("a"), ["accepted", "queued", "dispatched"])),
    Case("a task claimed twice in one call is dispatched once",
         given=(Row("a", ENQUEUED),),
         when=lambda w: w.store.begin_dispatch([kafka_claim("a", 1), kafka_claim("a", 1)], w.epochs, NODE, T0),
         returns=({"a"}, set()), then={"a": (DISPATCHED, 1)},
         check=lambda w, _: equal(w.states("a"), ["accepted", "queued", "dispatched"])),
    Case("a task claimed on both paths in one call is dispatched by the claim its row expects",
         given=(Row("swept", CLAIMED), Row("kept", ENQUEUED)),
         when=lambda w: w.store.begin_dispatch(
             [kafka_claim("swept", 1), mysql_claim("swept", 1), mysql_claim("kept", 1), kafka_claim("kept", 1)],
             w.epochs, NODE, T0),
         returns=({"swept", "kept"}, set()), then={"swept": (DISPATCHED, 1), "kept": (DISPATCHED, 1)},
         check=lambda w, _: equal([w.states(t) for t in ("swept", "kept")],
                                  [["accepted", "queued", "dispatched"]] * 2)),
    Case("first attempts with one row that does not expect them: the others are dispatched, once each",
         given=(Row("a", ENQUEUED), Row("b", ENQUEUED), Row("gone", CANCELLED), Row("m", CLAIMED)),
         when=lambda w: w.store.begin_dispatch(
             [kafka_claim("a", 1), kafka_claim("gone", 1), kafka_claim("b", 1), mysql_claim("m", 1),
              kafka_claim("nope", 1)], w.epochs, NODE, T0),
         returns=({"a", "b", "m"}, set()), then={"a": (DISPATCHED, 1), "b": (DISPATCHED, 1), "m": (DISPATCHED, 1)},
         check=lambda w, _: equal([w.states(t) for t in ("a", "b")],
                                  [["accepted", "queued", "dispatched"]] * 2)),
    Case("nothing to do", given=(), when=lambda w: w.store.begin_dispatch([], {}, NODE, T0), returns=(set(), set())),
)

# ---- the guard: return_undelivered, stranded, unclaim


def _check_given_back(w: World, _result) -> None:
    row = w.row("d")
    assert row.trigger_at == T(-3) and row.updated_at == T0
    unspent = "not run: the session lease ran out; attempt not spent"
    assert w.history("d")[-1] == r.Event("d", TaskState.QUEUED, T0, NODE, 1, unspent)


GUARD = (
    Case("return_undelivered puts a dispatched attempt back to pending, unspent, at its due time",
         given=(Row("d", DISPATCHED), Row("d2", DISPATCHED, attempts=2), Row("p", PENDING), Row("done", SUCCEEDED)),
         when=lambda w: w.store.return_undelivered(
             [kafka_claim("d", 1, due_s=-3), kafka_claim("d2", 1), mysql_claim("p", 1), kafka_claim("done", 1)],
             w.epochs, NODE, T0),
         returns=set(), then={"d": (PENDING, 0)}, check=_check_given_back),
    Case("return_undelivered under a stale epoch writes nothing and names the slot",
         given=(Row("d", DISPATCHED),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0),
                         w.store.return_undelivered([kafka_claim("d", 1)], w.epochs, NODE, T0))[1],
         returns={0}, then={"d": (PENDING, 1)}),  # by n2's claim, which keeps attempts
    Case("stranded finds old dispatched rows and claimed rows long past due, of the slot only",
         given=(Row("disp", DISPATCHED), Row("late-claim", CLAIMED, due_s=-700), Row("due-claim", CLAIMED, due_s=0),
                Row("pend", PENDING, due_s=-700), Row("other", DISPATCHED, slot=1)),
         when=lambda w: (lambda ok_rows: (ok_rows[0], sorted(row.task_id for row in ok_rows[1])))(
             w.store.stranded(0, w.epochs[0], T0, T(-300), 10)),
         returns=(True, ["disp", "late-claim"])),
    Case("stranded sees nothing of a dispatch newer than dispatched_before",
         given=(Row("disp", DISPATCHED),),
         when=lambda w: w.store.stranded(0, w.epochs[0], BUILD_AT, BUILD_AT, 10), returns=(True, [])),
    Case("stranded under a stale epoch",
         given=(Row("disp", DISPATCHED),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.stranded(0, w.epochs[0], T0, T0, 10))[1],
         returns=(False, []), then={"disp": (PENDING, 1)}),
    Case("unclaim gives claimed rows of the slot back to the poller, and only those",
         given=(Row("c", CLAIMED, due_s=-5), Row("d", DISPATCHED), Row("c1", CLAIMED, slot=1)),
         when=lambda w: w.store.unclaim(["c", "d", "c1", "nope"], 0, w.epochs[0], T0),
         returns=True, then={"c": (PENDING, 0)},
         check=lambda w, _: equal(w.row("c").trigger_at, T(-5))),
    Case("unclaim under a stale epoch writes nothing",
         given=(Row("c", CLAIMED),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.unclaim(["c"], 0, w.epochs[0], T0))[1],
         returns=False, then={"c": (PENDING, 0)}),  # by n2's claim
)

# ---- record_outcomes


def _check_retry(w: World, _result) -> None:
    p, e = w.row("p"), w.row("e")
    assert (p.trigger_at, p.last_error, p.last_stack_trace) == (T(30), "boom", "Traceback: boom")
    assert e.trigger_at == T(2)
    assert w.states("p")[-2:] == ["running", "retry_wait"]


def _check_dead_letter(w: World, _result) -> None:
    row = w.row("a")
    assert (row.last_error, row.last_stack_trace) == ("bad input", "Traceback: bad input")
    assert w.states("a")[-3:] == ["running", "failed", "dead_lettered"]
    dead = w.backend.dead_letters()
    assert set(dead) == {"a"}
    assert dead["a"] == dict(task_id="a", slot=0, namespace="ns", task_type="send", envelope=b"envelope of a",
                             attempts=3, last_error="bad input", last_stack_trace="Traceback: bad input",
                             first_attempt_at=BUILD_AT, dead_lettered_at=T0)


RECORD_OUTCOMES = (
    Case("succeeded",
         given=(Row("a", DISPATCHED),),
         when=lambda w: w.store.record_outcomes([outcome("a", 1, SUCCEEDED)], w.epochs, T0),
         returns=set(), then={"a": (SUCCEEDED, 1)},
         check=lambda w, _: equal(w.states("a")[-2:], ["running", "succeeded"])),
    Case("retry to pending (long backoff) or enqueued (short), attempts kept",
         given=(Row("p", DISPATCHED), Row("e", DISPATCHED, attempts=2)),
         when=lambda w: w.store.record_outcomes(
             [outcome("p", 1, "retry", retry_status=PENDING, retry_at=T(30)),
              outcome("e", 2, "retry", retry_status=ENQUEUED, retry_at=T(2))], w.epochs, T0),
         returns=set(), then={"p": (PENDING, 1), "e": (ENQUEUED, 2)}, check=_check_retry),
    Case("dead_lettered, with its dead letter",
         given=(Row("a", DISPATCHED, attempts=3),),
         when=lambda w: w.store.record_outcomes([outcome("a", 3, DEAD_LETTERED, error="bad input")], w.epochs, T0),
         returns=set(), then={"a": (DEAD_LETTERED, 3)}, check=_check_dead_letter),
    Case("only rows dispatched at that attempt: others are ignored, without events",
         given=(Row("old", DISPATCHED, attempts=2), Row("claimed", CLAIMED), Row("done", SUCCEEDED),
                Row("pend", PENDING, attempts=1), Row("gone", CANCELLED)),
         when=lambda w: w.store.record_outcomes(
             [outcome("old", 1, SUCCEEDED), outcome("claimed", 1, SUCCEEDED), outcome("done", 1, DEAD_LETTERED),
              outcome("pend", 1, SUCCEEDED), outcome("gone", 1, SUCCEEDED), outcome("nope", 1, SUCCEEDED)],
             w.epochs, T0),
         returns=set(), check=lambda w, _: equal(w.backend.dead_letters(), {})),
    Case("a stale slot's writes are refused and named; a live slot's are applied",
         given=(Row("a", DISPATCHED), Row("b", DISPATCHED, slot=1)),
         when=lambda w: (w.store.claim_slot(0, "n2", T0),
                         w.store.record_outcomes([outcome("a", 1, DEAD_LETTERED), outcome("b", 1, SUCCEEDED, slot=1)],
                                                 w.epochs, T0))[1],
         returns={0}, then={"a": (PENDING, 1), "b": (SUCCEEDED, 1)},   # a: reset by the claim, nothing more
         check=lambda w, _: equal((w.backend.dead_letters(), w.states("a")[-1]), ({}, "dispatched"))),
    Case("successes only: a stale slot's are refused and named; a live slot's are applied",
         given=(Row("a", DISPATCHED), Row("b", DISPATCHED, slot=1)),
         when=lambda w: (w.store.claim_slot(0, "n2", T0),
                         w.store.record_outcomes([outcome("a", 1, SUCCEEDED), outcome("b", 1, SUCCEEDED, slot=1)],
                                                 w.epochs, T0))[1],
         returns={0}, then={"a": (PENDING, 1), "b": (SUCCEEDED, 1)},   # a: reset by the claim, nothing more
         check=lambda w, _: equal(w.states("a")[-1], "dispatched")),
    Case("successes only, one row no longer dispatched: the others are recorded, no slot named",
         given=(Row("a", DISPATCHED), Row("gone", CANCELLED), Row("b", DISPATCHED, slot=1)),
         when=lambda w: w.store.record_outcomes(
             [outcome("a", 1, SUCCEEDED), outcome("gone", 1, SUCCEEDED), outcome("b", 1, SUCCEEDED, slot=1)],
             w.epochs, T0),
         returns=set(), then={"a": (SUCCEEDED, 1), "gone": (CANCELLED, 0), "b": (SUCCEEDED, 1)}),
Case("nothing to do", given=(), when=lambda w: w.store.record_outcomes([], {}, T0), returns=set()),
)

# ---- sweep_enqueued

SWEEP = (
    Case("moves only overdue enqueued rows of the slot, before older_than strictly",
         given=(Row("old", ENQUEUED, due_s=-60), Row("edge", ENQUEUED, due_s=-30), Row("fresh", ENQUEUED, due_s=0),
                Row("other-slot", ENQUEUED, slot=1, due_s=-60), Row("pend", PENDING, due_s=-60),
                Row("disp", DISPATCHED, due_s=-60)),
         when=lambda w: w.store.sweep_enqueued(0, w.epochs[0], T(-30), 100, T0),
         returns=1, then={"old": (PENDING, 0)}, check=lambda w, _: changed_updated_at(w, "old", T0)),
    Case("respects the limit, oldest first",
         given=(Row("a", ENQUEUED, due_s=-50), Row("b", ENQUEUED, due_s=-70), Row("c", ENQUEUED, due_s=-60)),
         when=lambda w: w.store.sweep_enqueued(0, w.epochs[0], T0, 2, T0),
         returns=2, then={"b": (PENDING, 0), "c": (PENDING, 0)}),
    Case("a stale epoch moves nothing",
         given=(Row("a", ENQUEUED, due_s=-60),),
         when=lambda w: (w.store.claim_slot(0, "n2", T0), w.store.sweep_enqueued(0, w.epochs[0], T0, 100, T0))[1],
         returns=0, then={"a": (PENDING, 0)}),  # by n2's claim after an owner that never released
)
# ---- get_task and observation


def _full_life(w: World):
    s, e = w.store, w.epochs
    s.insert_tasks([new_task("a", status=ENQUEUED, created_at=T(1))], NODE)
    s.begin_dispatch([kafka_claim("a", 1, due_s=1)], e, NODE, T(2))
    s.record_outcomes([outcome("a", 1, "retry", retry_status=PENDING, retry_at=T(60), at=T(3))], e, T(3))
    s.claim_due(0, e[0], T(60), 10, T(58))
    s.begin_dispatch([mysql_claim("a", 2, due_s=60)], e, NODE, T(60))
    s.record_outcomes([outcome("a", 2, DEAD_LETTERED, at=T(61))], e, T(61))
    return s.get_task("a")


def _check_full_life(w: World, result) -> None:
    row, events = result
    assert (row.status, row.attempts, row.trigger_at, row.updated_at) == (DEAD_LETTERED, 2, T(60), T(61))
    assert [(e.state, e.at, e.attempt) for e in events] == [
        ("accepted", T(1), 0), ("queued", T(1), 0), ("dispatched", T(2), 1), ("running", T(3), 1),
        ("retry_wait", T(3), 1), ("queued", T(60), 2), ("dispatched", T(60), 2), ("running", T(61), 2),
        ("failed", T(61), 2), ("dead_lettered", T(61), 2)]
    assert w.backend.dead_letters()["a"]["first_attempt_at"] == T(2)


def _happy_life(w: World):
    s, e = w.store, w.epochs
    s.insert_tasks([new_task("h", status=ENQUEUED, created_at=T(1))], NODE)
    s.begin_dispatch([kafka_claim("h", 1, due_s=1)], e, "n2", T(2))
    s.record_outcomes([outcome("h", 1, SUCCEEDED, at=T(3), node="n3")], e, T(4))
    return s.get_task("h")


def _check_happy_life(w: World, result) -> None:
    row, events = result
    assert (row.status, row.attempts) == (SUCCEEDED, 1)
    assert [(e.state, e.at, e.node, e.attempt, e.detail) for e in events] == [
        ("accepted", T(1), NODE, 0, None), ("queued", T(1), NODE, 0, "kafka"), ("dispatched", T(2), "n2", 1, None),
        ("running", T(3), "n3", 1, None), ("succeeded", T(3), "n3", 1, None)]


def _handed_back_life(w: World):
    """Attempts that end without an outcome (given back unspent; reset by a new owner's
    claim) keep their dispatched events, in order, before the attempt that succeeds."""
    s, e = w.store, w.epochs
    s.insert_tasks([new_task("b", status=PENDING, created_at=T(1))], NODE)
    s.claim_due(0, e[0], T(1), 10, T(1))
    s.begin_dispatch([mysql_claim("b", 1, due_s=1)], e, NODE, T(2))
    s.return_undelivered([mysql_claim("b", 1, due_s=1)], e, NODE, T(3))
    s.claim_due(0, e[0], T(3), 10, T(3))
    s.begin_dispatch([mysql_claim("b", 1, due_s=1)], e, NODE, T(4))
    epoch = s.claim_slot(0, "n2", T(5))        # the owner crashed mid-attempt
    s.claim_due(0, epoch, T(6), 10, T(6))
    s.begin_dispatch([mysql_claim("b", 2, due_s=1)], {0: epoch}, "n2", T(6))
    s.record_outcomes([outcome("b", 2, SUCCEEDED, at=T(7), node="n2")], {0: epoch}, T(7))
    return s.get_task("b")


def _check_handed_back_life(w: World, result) -> None:
    row, events = result
    assert (row.status, row.attempts) == (SUCCEEDED, 2)
    assert [(e.state, e.at, e.node, e.attempt) for e in events] == [
        ("accepted", T(1), NODE, 0), ("queued", T(1), NODE, 0), ("dispatched", T(2), NODE, 1),
        ("queued", T(3), NODE, 1), ("dispatched", T(4), NODE, 1), ("queued", T(1), "n2", 2),
        ("dispatched", T(6), "n2", 2), ("running", T(7), "n2", 2), ("succeeded", T(7), "n2", 2)]


GET_TASK = (
    Case("history in the order written", given=(), when=_full_life, check=_check_full_life),
    Case("a first-attempt success: its whole history", given=(), when=_happy_life, check=_check_happy_life),
    Case("attempts that ended without an outcome keep their events", given=(), when=_handed_back_life,
         check=_check_handed_back_life),
    Case("unknown id", given=(), when=lambda w: w.store.get_task("nope"), raises=(TaskNotFound, "'nope'")),
    Case("times keep milliseconds",
         given=(),
         when=lambda w: (w.store.insert_tasks([new_task("a", due_s=0.123, created_at=T(0.456))], NODE),
                         w.store.get_task("a")[0])[1],
         check=lambda w, row: equal((row.trigger_at, row.created_at), (T(0.123), T(0.456)))),
)

OBSERVATION = (
    Case("pending_by_slot counts rows not yet dispatched in every slot with a record",
         given=(Row("p", PENDING), Row("e", ENQUEUED), Row("c", CLAIMED, slot=1), Row("d", DISPATCHED, slot=2),
                Row("s", SUCCEEDED, slot=3), Row("x", CANCELLED, slot=3)),
         when=lambda w: w.store.pending_by_slot(), returns={0: 2, 1: 1, 2: 0, 3: 0}),
    Case("pending_by_slot of given slots: exactly those, zeros included",
         given=(Row("p", PENDING), Row("e", ENQUEUED, slot=1), Row("far", PENDING, slot=9)),
         when=lambda w: w.store.pending_by_slot([1, 2, 9, 12]), returns={1: 1, 2: 0, 9: 1, 12: 0}),
    Case("task_types_by_slot lists every type once, sorted",
         given=(Row("a", SUCCEEDED, slot=1, namespace="zz", task_type="t"), Row("b", PENDING, slot=1),
                Row("c", PENDING, slot=1), Row("d", PENDING, slot=3, namespace="billing", task_type="charge")),
         when=lambda w: w.store.task_types_by_slot(), returns={1: ["ns/send", "zz/t"], 3: ["billing/charge"]}),
    Case("slot_owners", given=(),
         when=lambda w: (w.store.claim_slot(2, "n2", T0), w.store.release_slot(3, w.epochs[3], T0),
                         w.store.slot_owners())[2],
         returns={0: (1, NODE), 1: (1, NODE), 2: (2, "n2"), 3: (1, "")}),
)


# ---- wait notes


def _notes(w: World) -> tuple:
    w.store.note_waiting([r.WaitNote("p", 0, 1, "concurrency limit per_type (at most 2 running)"),
                          r.WaitNote("e", 0, 3, "rate limit"), r.WaitNote("c", 0, 1, "retry cap"),
                          r.WaitNote("d", 0, 2, "late"), r.WaitNote("s", 0, 2, "late"),
                          r.WaitNote("nope", 0, 1, "x")])
    w.store.note_waiting([r.WaitNote("e", 0, 4, "x" * 300)])   # replaces, cut at 200 characters
    return tuple(w.store.wait_note(t) for t in ("p", "e", "c", "d", "s", "nope"))


WAIT_NOTES = (
    Case("a note is kept for tasks not handed out, replaced by the next, and not for others",
         given=(Row("p", PENDING), Row("e", ENQUEUED, attempts=2), Row("c", CLAIMED), Row("d", DISPATCHED, attempts=2),
                Row("s", SUCCEEDED, attempts=1)),
         when=_notes,
         returns=((1, "concurrency limit per_type (at most 2 running)"), (4, "x" * 200), (1, "retry cap"),
                  None, None, None)),
    Case("no notes", given=(), when=lambda w: w.store.note_waiting([]), returns=None),
)


class TaskConformance(Area):
    """The task store's rows: what the API writes, what an owner dispatches and records."""

    test_insert_tasks = case_test(*INSERT)
    test_insert_tasks_with_unique_keys = case_test(*UNIQUE)
    test_reroute_to_mysql = case_test(*REROUTE)
    test_cancel = case_test(*CANCEL)
    test_heartbeats = case_test(*HEARTBEATS)
    test_wait_notes = case_test(*WAIT_NOTES)
    test_claim_due = case_test(*CLAIM_DUE)
    test_begin_dispatch = case_test(*BEGIN_DISPATCH)
    test_record_outcomes = case_test(*RECORD_OUTCOMES)
    test_sweep_enqueued = case_test(*SWEEP)
    test_guard = case_test(*GUARD)
    test_get_task = case_test(*GET_TASK)
    test_observation = case_test(*OBSERVATION)

    def test_concurrent_claimers_take_disjoint_rows_covering_all(self, backend):
        # Given 200 due rows in one slot
        store = backend.store
        epochs = given(store, ())
        store.insert_tasks([new_task(f"t{i:03d}", due_s=i % 7) for i in range(200)], NODE)
        claimed: dict[str, list[str]] = {"x": [], "y": []}
        errors: list[BaseException] = []
        barrier = threading.Barrier(2, timeout=10)

        def claimer(name: str) -> None:
            try:
                barrier.wait()
                while True:
                    ok, rows = store.claim_due(0, epochs[0], T(10), 7, T0)
                    assert ok
                    if not rows:
                        return
                    claimed[name].extend(row.task_id for row in rows)
            except BaseException as exc:  # reported below, on the test's thread
                errors.append(exc)

        # When two claimers poll the slot at once
        threads = [threading.Thread(target=claimer, args=(n,)) for n in claimed]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        # Then every row is claimed exactly once
        assert not errors, errors
        assert not set(claimed["x"]) & set(claimed["y"])
        assert sorted(claimed["x"] + claimed["y"]) == [f"t{i:03d}" for i in range(200)]

    def test_stop_is_safe_twice(self, backend):
        backend.store.stop()
        backend.store.stop()
