"""The graph store on MariaDB, on one server and split over two: a graph is written whole and
waiting, its roots released only once it is complete, a release happens once however often
and in whatever order the ends are applied (also by threads racing), a failure skips and the
skip's own note carries it on, a cancel cascades, the outcome write leaves a note in its own
transaction, and a retried insert is idempotent while another graph under the id is refused."""
from __future__ import annotations

import datetime as dt
import threading
import uuid

import pytest

from dispatcher.base.config import MySQLConfig
from dispatcher.store import records as r
from dispatcher.store.errors import (
    AdderNotRunning,
    GraphCancelled,
    GraphExists,
    GraphNotFound,
    NotSkippable,
    NotWaiting,
)
from dispatcher.store.graph_rules import JoinRule, OnFailure
from dispatcher.store.graphs import GraphStore
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_graphs import NewEdge, NewGraph, NewNode
from dispatcher.store.mysql import TaskStore
from dispatcher.store.sharded import ShardedTaskStore
from dispatcher.store.shards import shards_of
from harness.world import create_database, drop_database
from taskring.task import TaskState
from tests.integration.test_store_sharded import ALTERNATE, TwoShards

pytestmark = pytest.mark.integration

T0 = dt.datetime(2030, 1, 1, 12, 0, 0)
NODE = "n1"


@pytest.fixture(params=["one server", "two shards"])
def stores(request, stack):
    if request.param == "one server":
        name = f"taskring_graph_{uuid.uuid4().hex[:12]}"
        create_database(stack, name)
        store: TaskStore | ShardedTaskStore = TaskStore(MySQLConfig(
            host=stack.host, port=stack.mysql_port, user=stack.mysql_user, password=stack.mysql_password,
            database=name))
        cleanup = lambda: drop_database(stack, name)  # noqa: E731
    else:
        shards = TwoShards(stack)
        store = ShardedTaskStore(shards.configs, ALTERNATE, node=NODE)
        cleanup = shards.drop
    store.start()
    store.ensure_slots(16)
    try:
        yield store, GraphStore(shards_of(store), route_threshold_ms=600_000)
    finally:
        store.stop()
        cleanup()


def _graph(graph_id: str, spec: dict[str, tuple[int, list[str], JoinRule]], *,
           ignore: frozenset[tuple[str, str]] = frozenset(), delays: dict[str, int] | None = None) -> NewGraph:
    """spec: key -> (slot, parent keys, join rule); the task id is "<graph>.<key>"."""
    parents_of = {key: parents for key, (_, parents, _) in spec.items()}
    with_dependents = {p for parents in parents_of.values() for p in parents}
    nodes = []
    for seq, (key, (slot, parents, rule)) in enumerate(spec.items()):
        task = r.NewTask(task_id=f"{graph_id}.{key}", slot=slot, namespace="ns", task_type=f"type-{slot}", priority=2,
                         status=r.WAITING, trigger_at=T0, envelope=b"\x0a\x01x", created_at=T0)
        nodes.append(NewNode(task=task, key=key, seq=seq, join_rule=rule, join_k=0,
                             delay_ms=(delays or {}).get(key, 0), has_dependents=key in with_dependents,
                             parents=tuple(NewEdge(f"{graph_id}.{p}", p, OnFailure.IGNORE if (p, key) in ignore
                                                   else OnFailure.SKIP) for p in parents)))
    return NewGraph("ns", graph_id, 0, f"digest-{graph_id}", tuple(nodes), T0)


ORDER = {"charge": (0, [], JoinRule.ALL_SUCCEEDED), "ship": (1, ["charge"], JoinRule.ALL_SUCCEEDED),
         "email": (2, ["charge"], JoinRule.ALL_SUCCEEDED), "close": (3, ["ship", "email"], JoinRule.ALL_SUCCEEDED)}


def _end(store, task_id: str, status: r.Status) -> None:
    """A task ended as the engine would have it (the store's write of the end is tested below)."""
    row, _ = store.get_task(task_id)
    shard = store.shard_of(row.slot) if isinstance(store, ShardedTaskStore) else store
    shard.run(lambda cur: cur.execute("UPDATE tasks SET status = %s WHERE task_id = %s", (status, task_id)))


def _states(graphs: GraphStore, graph_id: str) -> dict[str, r.Status]:
    return {n.key: n.status for n in graphs.graph("ns", graph_id).nodes}


def _history(store, task_id: str) -> list[str]:
    return [e.state.value for e in store.get_task(task_id)[1]]


def test_a_graph_is_written_waiting_and_only_its_complete_roots_are_released(stores):
    store, graphs = stores
    assert graphs.insert_graph(_graph("g1", ORDER), NODE, T0) is True
    assert set(_states(graphs, "g1").values()) == {r.WAITING}
    assert _history(store, "g1.ship") == ["accepted", "waiting"]
    [note] = graphs.notes(list(range(16)), T0 + dt.timedelta(seconds=1), 10)
    assert (note.kind, note.ref, note.slot) == ("graph", "ns/g1", 0)

    settled = graphs.release_roots("ns", "g1", NODE, T0)
    assert [t.task_id for t in settled.released] == ["g1.charge"]
    assert settled.released[0].status == r.ENQUEUED
    assert graphs.release_roots("ns", "g1", NODE, T0).released == ()     # once
    assert _states(graphs, "g1") == {"charge": r.ENQUEUED, "ship": r.WAITING, "email": r.WAITING,
                                     "close": r.WAITING}
    assert _history(store, "g1.charge") == ["accepted", "waiting", "queued"]

    # Idempotent by id and digest; another graph under the id is refused.
    assert graphs.insert_graph(_graph("g1", ORDER), NODE, T0) is False
    with pytest.raises(GraphExists):
        graphs.insert_graph(NewGraph("ns", "g1", 0, "other", _graph("g1", ORDER).nodes, T0), NODE, T0)
    with pytest.raises(GraphNotFound):
        graphs.graph("ns", "nope")


def test_an_incomplete_graph_releases_nothing_and_a_retried_insert_completes_it(stores):
    store, graphs = stores
    g = _graph("g2", ORDER)
    home = store.shard_of(0) if isinstance(store, ShardedTaskStore) else store
    home.run(lambda cur: cur.execute("INSERT INTO graphs (namespace, graph_id, home_slot, digest, node_count,"
                                     " complete, created_at) VALUES ('ns', 'g2', 0, %s, 4, 0, %s)", (g.digest, T0)))
    assert graphs.release_roots("ns", "g2", NODE, T0).released == ()
    assert graphs.insert_graph(g, NODE, T0) is True
    assert [t.task_id for t in graphs.release_roots("ns", "g2", NODE, T0).released] == ["g2.charge"]


def test_each_end_is_counted_once_whatever_the_order_and_repetition(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g3", ORDER), NODE, T0)
    graphs.release_roots("ns", "g3", NODE, T0)
    _end(store, "g3.charge", r.SUCCEEDED)
    for _ in range(3):
        settled = graphs.apply_ends(["g3.charge", "g3.ship"], NODE, T0)   # ship has not ended: counts nothing
    assert _states(graphs, "g3")["ship"] == r.ENQUEUED and _states(graphs, "g3")["email"] == r.ENQUEUED
    assert settled.released == ()
    _end(store, "g3.email", r.SUCCEEDED)
    assert graphs.apply_ends(["g3.email"], NODE, T0).released == ()         # close still waits for ship
    _end(store, "g3.ship", r.SUCCEEDED)
    released = [graphs.apply_ends(["g3.ship", "g3.email", "g3.charge"], NODE, T0) for _ in range(3)]
    assert [len(s.released) for s in released] == [1, 0, 0]
    assert _history(store, "g3.close") == ["accepted", "waiting", "queued"]
    close = next(n for n in graphs.graph("ns", "g3").nodes if n.key == "close")
    assert {(e.parent_key, e.outcome) for e in close.edges} == {("ship", "succeeded"), ("email", "succeeded")}


def test_racing_appliers_release_a_dependent_once(stores):
    store, graphs = stores
    fan_in: dict[str, tuple[int, list[str], JoinRule]] = {f"p{i}": (i % 16, [], JoinRule.ALL_SUCCEEDED)
                                                         for i in range(12)}
    fan_in["sink"] = (5, list(fan_in), JoinRule.ALL_SUCCEEDED)
    graphs.insert_graph(_graph("g4", fan_in), NODE, T0)
    graphs.release_roots("ns", "g4", NODE, T0)
    parents = [f"g4.p{i}" for i in range(12)]
    for p in parents:
        _end(store, p, r.SUCCEEDED)
    released: list[int] = []
    errors: list[BaseException] = []

    def apply(order):
        try:
            for p in order:
                released.append(len(graphs.apply_ends([p], NODE, T0).released))
        except BaseException as exc:
            errors.append(exc)
    threads = [threading.Thread(target=apply, args=(parents[k:] + parents[:k],)) for k in (0, 4, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sum(released) == 1
    assert _history(store, "g4.sink") == ["accepted", "waiting", "queued"]


def test_a_failure_skips_and_the_skip_travels_on_by_its_own_note(stores):
    store, graphs = stores
    chain = dict(ORDER, audit=(4, ["close"], JoinRule.ALL_DONE))
    graphs.insert_graph(_graph("g5", chain, ignore=frozenset({("charge", "email")})), NODE, T0)
    graphs.release_roots("ns", "g5", NODE, T0)
    _end(store, "g5.charge", r.DEAD_LETTERED)
    settled = graphs.apply_ends(["g5.charge"], NODE, T0)
    # ship skips (its edge counts the failure); email ignores it and runs.
    assert [t.task_id for t in settled.released] == ["g5.email"]
    assert (settled.skipped, settled.ended) == (1, ((1, "g5.ship"),))
    assert _history(store, "g5.ship") == ["accepted", "waiting", "skipped"]
    notes = graphs.notes(list(range(16)), T0 + dt.timedelta(seconds=1), 10)
    assert ("task", "g5.ship") in {(n.kind, n.ref) for n in notes}
    # The skip's note, applied: close is skipped in turn, and audit (all_done) is released.
    then = graphs.apply_ends(["g5.ship"], NODE, T0)
    assert then.skipped == 1 and then.ended == ((3, "g5.close"),)
    assert [t.task_id for t in graphs.apply_ends(["g5.close"], NODE, T0).released] == ["g5.audit"]
    close = next(n for n in graphs.graph("ns", "g5").nodes if n.key == "close")
    assert close.reason == "join all_succeeded: 0 parent(s) failed, 1 skipped"


def test_a_cancel_leaves_a_note_and_the_dependents_are_cancelled(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g6", ORDER), NODE, T0)
    graphs.release_roots("ns", "g6", NODE, T0)
    store.cancel("g6.charge", NODE, T0)
    notes = [n for n in graphs.notes(list(range(16)), T0 + dt.timedelta(seconds=1), 10) if n.kind == "task"]
    assert [(n.ref, n.slot) for n in notes] == [("g6.charge", 0)]
    settled = graphs.apply_ends(["g6.charge"], NODE, T0)
    assert settled.cancelled == 2 and settled.released == ()
    assert _states(graphs, "g6")["ship"] == r.CANCELLED
    assert _history(store, "g6.email") == ["accepted", "waiting", "cancelled"]
    graphs.apply_ends([tid for _, tid in settled.ended], NODE, T0)
    assert _states(graphs, "g6")["close"] == r.CANCELLED
    graphs.delete_notes(notes)
    assert [n for n in graphs.notes(list(range(16)), T0 + dt.timedelta(seconds=1), 10)
            if n.ref == "g6.charge"] == []


def test_the_outcome_of_a_task_with_dependents_leaves_its_note_in_the_same_write(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g7", ORDER, delays={"charge": 0}), NODE, T0)
    graphs.release_roots("ns", "g7", NODE, T0)
    epoch = store.claim_slot(0, NODE, T0)
    dispatched, _ = store.begin_dispatch([r.DispatchClaim("g7.charge", 0, 1, "kafka", T0)], {0: epoch}, NODE, T0)
    assert dispatched == {"g7.charge"}
    done = r.OutcomeWrite("g7.charge", 0, 1, r.SUCCEEDED, (r.Event("g7.charge", TaskState.SUCCEEDED, T0, NODE, 1),),
                          notify=True)
    assert store.record_outcomes([done], {0: epoch}, T0) == set()
    notes = [n for n in graphs.notes([0], T0 + dt.timedelta(seconds=1), 10) if n.kind == "task"]
    assert [n.ref for n in notes] == ["g7.charge"]
    # A stale owner's outcome is refused, and leaves no note.
    store.claim_slot(0, "n2", T0)
    again = r.OutcomeWrite("g7.charge", 0, 1, r.SUCCEEDED, done.events, notify=True)
    assert store.record_outcomes([again], {0: epoch}, T0) == {0}
    assert len([n for n in graphs.notes([0], T0 + dt.timedelta(seconds=1), 10) if n.kind == "task"]) == 1
    released = graphs.apply_ends(["g7.charge"], NODE, T0).released
    assert sorted(t.task_id for t in released) == ["g7.email", "g7.ship"]
    graphs.forget_ends([(0, "g7.charge")], T0)
    assert [n for n in graphs.notes([0], T0 + dt.timedelta(seconds=1), 10) if n.kind == "task"] == []


def test_a_long_delay_releases_to_the_mysql_path_counted_from_the_release(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g8", ORDER, delays={"ship": 3_600_000}), NODE, T0)
    graphs.release_roots("ns", "g8", NODE, T0)
    _end(store, "g8.charge", r.SUCCEEDED)
    later = T0 + dt.timedelta(minutes=5)
    released = {t.task_id: t for t in graphs.apply_ends(["g8.charge"], NODE, later).released}
    assert released["g8.ship"].status == r.PENDING
    assert released["g8.ship"].trigger_at == later + dt.timedelta(hours=1)
    assert released["g8.email"].status == r.ENQUEUED


def test_a_graph_cancel_marks_every_shard_first_and_leaves_running_tasks_to_finish(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g9", ORDER), NODE, T0)
    graphs.release_roots("ns", "g9", NODE, T0)
    epoch = store.claim_slot(0, NODE, T0)
    store.begin_dispatch([r.DispatchClaim("g9.charge", 0, 1, "kafka", T0)], {0: epoch}, NODE, T0)
    cancelled, running = graphs.cancel_graph("ns", "g9", "graceful", (), "order withdrawn", NODE, T0)
    assert (cancelled, running) == (3, ["charge"])
    assert _states(graphs, "g9") == {"charge": r.DISPATCHED, "ship": r.CANCELLED, "email": r.CANCELLED,
                                     "close": r.CANCELLED}
    assert _history(store, "g9.close") == ["accepted", "waiting", "cancelled"]
    # The running one fails: no retry, cancelled; its end releases nothing.
    failed = r.OutcomeWrite("g9.charge", 0, 1, r.RETRY, (r.Event("g9.charge", TaskState.RETRY_WAIT, T0, NODE, 1,
                                                                 "boom; retry in 10 ms"),),
                            retry_status=r.ENQUEUED, retry_at=T0, error="boom", notify=True, in_graph=True)
    assert store.record_outcomes([failed], {0: epoch}, T0) == set()
    assert _states(graphs, "g9")["charge"] == r.CANCELLED
    assert _history(store, "g9.charge")[-2:] == ["retry_wait", "cancelled"]
    assert graphs.cancel_graph("ns", "g9", "graceful", (), "again", NODE, T0) == (0, [])
    with pytest.raises(GraphNotFound):
        graphs.cancel_graph("ns", "nope", "graceful", (), "", NODE, T0)


def test_an_immediate_cancel_stops_running_tasks_that_heartbeat_and_a_marked_task_is_never_released(stores):
    store, graphs = stores
    graphs.insert_graph(_graph("g10", ORDER), NODE, T0)
    graphs.release_roots("ns", "g10", NODE, T0)
    epoch = store.claim_slot(0, NODE, T0)
    store.begin_dispatch([r.DispatchClaim("g10.charge", 0, 1, "kafka", T0)], {0: epoch}, NODE, T0)
    cancelled, running = graphs.cancel_graph("ns", "g10", "immediate", {("ns", "type-0")}, "stop", NODE, T0)
    assert (cancelled, running) == (4, [])
    assert set(_states(graphs, "g10").values()) == {r.CANCELLED}
    # A note applied after the cancel releases nothing.
    assert graphs.apply_ends(["g10.charge"], NODE, T0).released == ()


def test_an_operators_skip_reopens_what_its_rule_skipped_down_the_chain(stores):
    store, graphs = stores
    chain = {"a": (0, [], JoinRule.ALL_SUCCEEDED), "b": (1, ["a"], JoinRule.ALL_SUCCEEDED),
             "c": (2, ["b"], JoinRule.ALL_SUCCEEDED), "d": (3, ["b"], JoinRule.ALL_DONE)}
    graphs.insert_graph(_graph("g11", chain), NODE, T0)
    graphs.release_roots("ns", "g11", NODE, T0)
    _end(store, "g11.a", r.DEAD_LETTERED)
    first = graphs.apply_ends(["g11.a"], NODE, T0)
    second = graphs.apply_ends([tid for _, tid in first.ended], NODE, T0)
    assert _states(graphs, "g11") == {"a": r.DEAD_LETTERED, "b": r.SKIPPED, "c": r.SKIPPED, "d": r.ENQUEUED}
    assert second.skipped == 1

    records: list[str] = []

    def record(status_before: str) -> AuditRecord:
        records.append(status_before)
        return _audit(status_before)
    slot, before = graphs.skip_task("g11.a", "done by hand", record, NODE, T0)
    assert (slot, before, records) == (0, "dead_lettered", ["dead_lettered"])
    reopened = graphs.apply_reopened(["g11.a"], "a was skipped by an operator", NODE, T0)
    assert [t.task_id for t in reopened.released] == ["g11.b"] and reopened.reopened == ((1, "g11.b"),)
    assert _history(store, "g11.b") == ["accepted", "waiting", "skipped", "waiting", "queued"]
    # b re-opened: c waits for it again; d (all_done) ran already and is left alone.
    graphs.apply_reopened(["g11.b"], "b was re-opened", NODE, T0)
    assert _states(graphs, "g11") == {"a": r.SKIPPED, "b": r.ENQUEUED, "c": r.WAITING, "d": r.ENQUEUED}
    _end(store, "g11.b", r.SUCCEEDED)
    assert [t.task_id for t in graphs.apply_ends(["g11.b"], NODE, T0).released] == ["g11.c"]
    with pytest.raises(NotSkippable):
        graphs.skip_task("g11.c", "no", _audit, NODE, T0)


def _audit(before: str) -> AuditRecord:
    return AuditRecord(at=T0, actor="op", address="127.0.0.1", action="graph.skip", target="task:x", reason="r",
                       before={"status": before})


def test_the_watch_finds_a_finished_graph_a_stuck_one_and_a_lost_release(stores):
    store, graphs = stores
    # Finished: every task ended.
    graphs.insert_graph(_graph("w1", {"a": (0, [], JoinRule.ALL_SUCCEEDED)}), NODE, T0)
    graphs.release_roots("ns", "w1", NODE, T0)
    _end(store, "w1.a", r.SUCCEEDED)
    # Lost: b's parent ended long ago and its note was lost; c waits behind b.
    graphs.insert_graph(_graph("w2", {"a": (0, [], JoinRule.ALL_SUCCEEDED), "b": (1, ["a"], JoinRule.ALL_SUCCEEDED),
                                      "c": (2, ["b"], JoinRule.ALL_SUCCEEDED)}), NODE, T0)
    graphs.release_roots("ns", "w2", NODE, T0)
    _end(store, "w2.a", r.SUCCEEDED)
    later = T0 + dt.timedelta(minutes=20)
    assert sorted(graphs.open_graphs(list(range(16)), 10)) == [("ns", "w1"), ("ns", "w2")]

    done = graphs.check_graph("ns", "w1", 600_000, later)
    assert (done.finished, done.stuck, done.lost) == (True, False, ())
    lost = graphs.check_graph("ns", "w2", 600_000, later)
    assert (lost.finished, lost.lost) == (False, ("w2.a",))
    # Nothing runs, nothing is due, tasks wait and nothing changed for 20 minutes: stuck.
    assert lost.stuck
    counts = graphs.open_counts(list(range(16)), later)
    assert (counts.open, counts.stuck) == ({"ns": 1}, {"ns": 1})
    assert graphs.open_graphs(list(range(16)), 10) == [("ns", "w2")]   # w1 is finished: not looked at again

    # The lost end applied again releases b; the graph is no longer stuck.
    assert [t.task_id for t in graphs.apply_ends(list(lost.lost), NODE, later).released] == ["w2.b"]
    again = graphs.check_graph("ns", "w2", 600_000, later + dt.timedelta(seconds=1))
    assert (again.stuck, again.lost) == (False, ())
    assert graphs.open_counts(list(range(16)), later).stuck == {"ns": 0}


def _dispatch(store, task_id: str, attempt: int = 1) -> None:
    """A task running its attempt, as the engine would have it."""
    row, _ = store.get_task(task_id)
    shard = store.shard_of(row.slot) if isinstance(store, ShardedTaskStore) else store
    shard.run(lambda cur: cur.execute("UPDATE tasks SET status = %s, attempts = %s WHERE task_id = %s",
                                      (r.DISPATCHED, attempt, task_id)))


def _added(graph_id: str, adder: str, keys: dict[str, int], first_seq: int = 10) -> list[NewNode]:
    """New tasks "<adder>:<key>" on the given slots, each waiting for the adder."""
    out = []
    for i, (key, slot) in enumerate(keys.items()):
        full = f"{adder}:{key}"
        task = r.NewTask(task_id=f"{graph_id}.{full}", slot=slot, namespace="ns", task_type=f"type-{slot}",
                         priority=2, status=r.WAITING, trigger_at=T0, envelope=b"\x0a\x01x", created_at=T0)
        out.append(NewNode(task=task, key=full, seq=first_seq + i, join_rule=JoinRule.ALL_SUCCEEDED, join_k=0,
                           delay_ms=0, has_dependents=True,
                           parents=(NewEdge(f"{graph_id}.{adder}", adder, OnFailure.SKIP),)))
    return out


def test_added_tasks_wait_for_their_adder_and_the_fan_in_for_them_across_shards(stores):
    """split (slot 1) adds lines on slots 2 and 3; close (slot 0, the other shard) waits for them."""
    store, graphs = stores
    spec = {"split": (1, [], JoinRule.ALL_SUCCEEDED), "close": (0, ["split"], JoinRule.ALL_SUCCEEDED)}
    graphs.insert_graph(_graph("g-add", spec), NODE, T0)
    graphs.release_roots("ns", "g-add", NODE, T0)
    _dispatch(store, "g-add.split")
    lines = _added("g-add", "split", {"line-1": 2, "line-2": 3})
    done = graphs.add_tasks("ns", "g-add", ("g-add.split", 1, 1), lines, [(0, "close", "g-add.close", 0)], NODE)
    assert (done.added, done.existed) == (2, 0)
    # Again (a retried attempt): nothing twice, and close waits for each line once.
    again = graphs.add_tasks("ns", "g-add", ("g-add.split", 1, 1), lines, [(0, "close", "g-add.close", 0)], NODE)
    assert (again.added, again.existed) == (0, 2)
    view = {n.key: n for n in graphs.graph("ns", "g-add").nodes}
    assert {e.parent_key for e in view["close"].edges} == {"split", "split:line-1", "split:line-2"}
    assert _states(graphs, "g-add") == {"split": r.DISPATCHED, "close": r.WAITING, "split:line-1": r.WAITING,
                                        "split:line-2": r.WAITING}
    # The adder ends: the lines go; close still waits for them.
    _end(store, "g-add.split", r.SUCCEEDED)
    settled = graphs.apply_ends(["g-add.split"], NODE, T0)
    assert sorted(t.task_id for t in settled.released) == ["g-add.split:line-1", "g-add.split:line-2"]
    _end(store, "g-add.split:line-1", r.SUCCEEDED)
    assert graphs.apply_ends(["g-add.split:line-1"], NODE, T0).released == ()
    _end(store, "g-add.split:line-2", r.SUCCEEDED)
    assert [t.task_id for t in graphs.apply_ends(["g-add.split:line-2"], NODE, T0).released] == ["g-add.close"]


def test_an_add_is_refused_from_a_task_not_running_and_for_a_target_no_longer_waiting(stores):
    store, graphs = stores
    spec = {"split": (1, [], JoinRule.ALL_SUCCEEDED), "other": (0, [], JoinRule.ALL_SUCCEEDED),
            "close": (0, ["split"], JoinRule.ALL_SUCCEEDED)}
    graphs.insert_graph(_graph("g-ref", spec), NODE, T0)
    graphs.release_roots("ns", "g-ref", NODE, T0)
    lines = _added("g-ref", "split", {"line-1": 2})
    with pytest.raises(AdderNotRunning, match="is enqueued at attempt 0, not running attempt 1"):
        graphs.add_tasks("ns", "g-ref", ("g-ref.split", 1, 1), lines, [], NODE)
    _dispatch(store, "g-ref.split", attempt=2)
    with pytest.raises(AdderNotRunning, match="not running attempt 1"):
        graphs.add_tasks("ns", "g-ref", ("g-ref.split", 1, 1), lines, [], NODE)
    assert "split:line-1" not in _states(graphs, "g-ref"), "nothing written"
    _end(store, "g-ref.other", r.SUCCEEDED)
    with pytest.raises(NotWaiting, match=r"also_before\[1\]: 'other' is succeeded, no longer waiting"):
        graphs.add_tasks("ns", "g-ref", ("g-ref.split", 1, 2), lines,
                         [(0, "close", "g-ref.close", 0), (1, "other", "g-ref.other", 0)], NODE)
    graphs.cancel_graph("ns", "g-ref", "graceful", (), "a test", NODE, T0)
    with pytest.raises(GraphCancelled):
        graphs.add_tasks("ns", "g-ref", ("g-ref.split", 1, 2), lines, [], NODE)
