"""The task store split over the stack's two MariaDB servers by slot.

The whole store contract (tests/conformance/, every area) on two shards, then what only a
sharded store has: rows on the shard of their slot, a refused start with another slot
map, a cross-shard insert that fails half-way, and a real cluster whose slots live on
both servers, with a node killed under load.
"""
from __future__ import annotations

import datetime as dt
import time
import uuid

import pymysql
import pytest

from dispatcher.base.config import MySQLConfig, NodeConfig
from dispatcher.base.errors import TaskNotFound, Unavailable
from dispatcher.store import records as r
from dispatcher.store.sharded import ShardedTaskStore, store_of
from harness.executors import RecordingExecutor
from harness.stack import StackEndpoints
from harness.wait import wait_until
from harness.world import create_database, drop_database, private_world
from tests.conformance import StoreConformance
from tests.conformance.backends import mysql_backend
from tests.integration.cluster_harness import Cluster, LoadGenerator, assert_nothing_lost

pytestmark = pytest.mark.integration

SLOT_COUNT = 16
ALTERNATE = tuple(slot % 2 for slot in range(64))
"""Slot -> shard: even slots on the first server, odd on the second, so the conformance
suite's slots (0..3) and most of its multi-slot calls span both shards; 64 slots, as
the suite also uses slots that no one claims (42)."""


def _config(ep: StackEndpoints, database: str) -> MySQLConfig:
    return MySQLConfig(host=ep.host, port=ep.mysql_port, user=ep.mysql_user, password=ep.mysql_password,
                       database=database)


class TwoShards:
    """One database of the same name on each server, dropped at the end."""

    def __init__(self, stack: StackEndpoints):
        self.servers = (stack, stack.second_shard())
        self.database = f"taskring_shard_{uuid.uuid4().hex[:12]}"
        for server in self.servers:
            create_database(server, self.database)

    @property
    def configs(self) -> list[MySQLConfig]:
        return [_config(server, self.database) for server in self.servers]

    def sql(self, shard: int, query: str, args=()) -> list[tuple]:
        conn = self.servers[shard].mysql_connect(self.database)
        try:
            with conn.cursor() as cur:
                cur.execute(query, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def drop(self) -> None:
        for server in self.servers:
            drop_database(server, self.database)


@pytest.fixture
def two_shards(stack):
    shards = TwoShards(stack)
    try:
        yield shards
    finally:
        shards.drop()


# Cases the sharded stores fail today, as strict xfails (test name -> reason), as in
# test_store_mysql.py: each is a bug report, and its fix an XPASS that fails the run.
KNOWN_DISCREPANCIES: dict[str, str] = {}


class TestShardedStores(StoreConformance):
    @pytest.fixture
    def backend(self, two_shards, request):
        reason = KNOWN_DISCREPANCIES.get(request.node.name)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
        store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="conformance")
        store.start()
        try:
            yield mysql_backend(store, lambda sql: [row for shard in (0, 1) for row in two_shards.sql(shard, sql)])
        finally:
            store.stop()


T0 = dt.datetime(2030, 1, 1, 12, 0, 0)


def _task(task_id: str, slot: int, status: r.Status = r.PENDING) -> r.NewTask:
    return r.NewTask(task_id=task_id, slot=slot, namespace="ns", task_type=f"type-{slot}", priority=2,
                     status=status, trigger_at=T0 + dt.timedelta(hours=1), envelope=b"\x0a\x01x", created_at=T0)


def test_every_row_and_ownership_record_lives_on_the_shard_of_its_slot(two_shards):
    store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    store.start()
    try:
        store.ensure_slots(SLOT_COUNT)
        store.insert_tasks([_task(f"t{slot}", slot) for slot in range(SLOT_COUNT)], "n1")
        epochs = {slot: store.claim_slot(slot, "n1", T0) for slot in (2, 3)}
        store.commit_offsets([("topic", 2, 10), ("topic", 3, 20)], epochs, T0)
        for shard in (0, 1):
            slots = {s for (s,) in two_shards.sql(shard, "SELECT slot FROM tasks")}
            assert slots == {s for s in range(SLOT_COUNT) if s % 2 == shard}
            owners = {s for (s,) in two_shards.sql(shard, "SELECT slot FROM slot_owners")}
            assert owners == slots
            offsets = two_shards.sql(shard, "SELECT kpartition, next_offset FROM kafka_offsets")
            assert offsets == [(2, 10)] if shard == 0 else [(3, 20)]
        # The calls by task id find a task on either shard.
        assert store.get_task("t3")[0].slot == 3
        store.cancel("t5", "n1", T0)
        assert two_shards.sql(1, "SELECT status FROM tasks WHERE task_id = 't5'") == [("cancelled",)]
        with pytest.raises(TaskNotFound):
            store.get_task("nowhere")
        assert store.slot_owners()[3] == (1, "n1") and store.slot_owners()[4] == (0, "")
        assert store.pending_by_slot([0, 1, 5]) == {0: 1, 1: 1, 5: 0}
    finally:
        store.stop()


def test_a_node_with_another_slot_map_is_refused_at_start(two_shards):
    first = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    first.start()
    first.stop()
    halves = tuple(slot * 2 // len(ALTERNATE) for slot in range(len(ALTERNATE)))
    other = ShardedTaskStore(two_shards.configs, halves, node="n2")
    with pytest.raises(r.ShardMapMismatch, match=r"shard 0 of 2 with slot map '0:0,1:1,.*'.*slot map '0-31:0,32-63:1'"):
        other.start()
    # A node configured with one shard, pointed at the first of two, is refused as well:
    # it would look for the odd slots' rows where they are not.
    alone = store_of(NodeConfig(node_id="n3", mysql=two_shards.configs[0], slot_count=len(ALTERNATE)))
    with pytest.raises(r.ShardMapMismatch, match="shard 0 of 2"):
        alone.start()
    # Swapping the two servers is refused too (each knows which shard it is).
    swapped = ShardedTaskStore(two_shards.configs[::-1], ALTERNATE, node="n4")
    with pytest.raises(r.ShardMapMismatch, match="shard 1 of 2"):
        swapped.start()


def test_a_cross_shard_insert_whose_second_commit_fails_leaves_nothing_behind(two_shards, monkeypatch):
    store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    store.start()
    try:
        second_port = two_shards.servers[1].mysql_port
        real_commit = pymysql.connections.Connection.commit

        def commit(conn):
            if conn.port == second_port:  # the second server is lost between the two commits
                raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
            return real_commit(conn)

        monkeypatch.setattr(pymysql.connections.Connection, "commit", commit)
        with pytest.raises(Unavailable, match=r"committed on shard\(s\) \[0\] but not on shard 1.*withdrawn"):
            store.insert_tasks([_task("a", 0), _task("b", 1), _task("c", 2, r.ENQUEUED)], "n1")
        monkeypatch.setattr(pymysql.connections.Connection, "commit", real_commit)
        assert two_shards.sql(0, "SELECT task_id FROM tasks") == []
        assert two_shards.sql(1, "SELECT task_id FROM tasks") == []
        # The retried submit then goes through whole.
        assert store.insert_tasks([_task("a", 0), _task("b", 1), _task("c", 2, r.ENQUEUED)], "n1") == {}
        assert sorted(tid for shard in (0, 1) for (tid,) in two_shards.sql(shard, "SELECT task_id FROM tasks")) \
            == ["a", "b", "c"]
    finally:
        store.stop()


def test_a_cross_shard_insert_that_fails_before_committing_writes_nothing_anywhere(two_shards):
    store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    store.start()
    try:
        two_shards.sql(1, "DROP TABLE slot_task_types")  # the second shard's insert fails
        with pytest.raises(pymysql.err.ProgrammingError):
            store.insert_tasks([_task("a", 0), _task("b", 1)], "n1")
        assert two_shards.sql(0, "SELECT task_id FROM tasks") == []
        assert two_shards.sql(1, "SELECT task_id FROM tasks") == []
    finally:
        store.stop()


# ---------------------------------------------------------------- a cluster on two shards

@pytest.fixture
def sharded_world(stack, tmp_path):
    with private_world(stack, "shard", tmp_path / "logs", SLOT_COUNT, shards=2) as world:
        yield world


def test_a_cluster_on_two_shards_loses_nothing_when_a_node_is_killed(sharded_world):
    world = sharded_world
    executor = RecordingExecutor(world.zk_hosts).start()
    cluster = Cluster(world)
    try:
        for node_id in ("n1", "n2", "n3"):
            cluster.add(node_id)
        for node in cluster.live():
            node.wait_ready()
        before = cluster.wait_settled({"n1", "n2", "n3"})
        halves = NodeConfig(slot_count=SLOT_COUNT, mysql_shards=(MySQLConfig(),)).shard_of_slot  # the world's map
        # The victim is a node whose slots are on both servers, so both shards see a new owner.
        victim = max(("n1", "n2", "n3"), key=lambda n: (len({halves[s] for s, o in before.items() if o == n}),
                                                          sum(o == n for o in before.values())))
        victim_slots = {s for s, owner in before.items() if owner == victim}
        survivors = [cluster.nodes[n] for n in ("n1", "n2", "n3") if n != victim]
        load = LoadGenerator(world, survivors).start()
        try:
            wait_until(lambda: len(load.acked) > 300, 30, "load to flow")
            epochs_before = world.epochs()
            cluster.nodes[victim].kill()
            t_kill = time.monotonic()
            cluster.wait_settled({n.node_id for n in survivors}, timeout_s=30)
            wait_until(lambda: len(load.acked) > 1200, 40, "load to continue after the kill")
        finally:
            load.stop()
        figures = assert_nothing_lost(world, load)
        assert executor.duplicates() == {}
        # Both servers held work, and each of the victim's slots got a new epoch on its shard.
        per_shard = [world.sql("SELECT COUNT(*) FROM tasks", shard=shard)[0][0] for shard in (0, 1)]
        assert all(n > 100 for n in per_shard), f"rows per shard: {per_shard}"
        bumped = {s for s, e in world.epochs().items() if e > epochs_before[s]}
        assert victim_slots and victim_slots <= bumped, f"victim's {sorted(victim_slots)}, re-owned {sorted(bumped)}"
        victim_shards = sorted({halves[s] for s in victim_slots})
        print(f"\ntwo shards, kill -9: rows per shard {per_shard}, victim's slots {sorted(victim_slots)} on shards"
              f" {victim_shards}, re-owned {sorted(bumped)},"
              f" settled {time.monotonic() - t_kill:.1f}s after the kill, {figures}")
    finally:
        cluster.stop_all()
        executor.stop()


def test_a_unique_key_is_held_whichever_shards_its_row_its_holder_and_the_next_task_are_on(two_shards):
    store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    store.start()
    try:
        keys = [f"order:{i}" for i in range(16)]
        assert {store.key_shard("ns", k) for k in keys} == {0, 1}  # the keys' rows are on both servers
        for i, k in enumerate(keys):
            holder, other = _task(f"h{i}", 0), _task(f"o{i}", 1)  # the holder on shard 0, the next on 1
            holder.unique_key = other.unique_key = k
            assert store.insert_tasks([holder], "n1") == {}
            assert store.insert_tasks([other], "n1") == {f"o{i}": r.Held(f"h{i}", r.PENDING, 0)}, k
        assert two_shards.sql(1, "SELECT COUNT(*) FROM tasks") == [(0,)]
        assert sum(n for shard in (0, 1) for (n,) in two_shards.sql(shard, "SELECT COUNT(*) FROM unique_keys")) == 16
    finally:
        store.stop()


def test_concurrent_cross_shard_inserts_in_opposite_slot_orders_do_not_deadlock(two_shards):
    # Each batch's first task is on another shard, and both record the same task types (rows
    # each insert locks until it commits): written in the batch's order, the two would wait
    # on each other across the two servers until the idle-transaction timeout killed one.
    import threading
    store = ShardedTaskStore(two_shards.configs, ALTERNATE, node="n1")
    store.start()
    errors: list[BaseException] = []

    def task(task_id: str, slot: int, round_: int) -> r.NewTask:
        t = _task(task_id, slot)
        t.task_type = f"type-{slot}-{round_}"  # a type new to the store: its row is inserted, locked
        return t

    together = threading.Barrier(2)

    def submit(name: str, slots: tuple[int, int]) -> None:
        try:
            for round_ in range(10):
                together.wait(timeout=60)
                store.insert_tasks([task(f"{name}-{round_}-{i}", slots[i % 2], round_) for i in range(20)], "n1")
        except BaseException as exc:
            errors.append(exc)
    try:
        threads = [threading.Thread(target=submit, args=(name, slots))
                   for name, slots in (("a", (0, 1)), ("b", (1, 0)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors[0]
        assert sum(n for shard in (0, 1) for (n,) in two_shards.sql(shard, "SELECT COUNT(*) FROM tasks")) == 400
    finally:
        store.stop()
