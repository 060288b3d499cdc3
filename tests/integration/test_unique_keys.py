"""Unique keys on real nodes: one task per key per namespace while it is live (or for its
TTL), across both paths, within a batch, across nodes, across a crash between the MySQL
write and the Kafka produce, across store shards, and declared per task type."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from cluster.slots import slot_of
from dispatcher.api.validation import Limits, validate_task
from dispatcher.base.clock import ms_to_datetime
from dispatcher.base.config import MySQLConfig, NodeConfig
from dispatcher.store import records as r
from dispatcher.store.sharded import store_of
from harness.executors import RecordingExecutor
from harness.processes import NodeProcess
from harness.wait import wait_until
from harness.world import private_world
from taskring import Client, TaskSpec, TaskState
from taskring.errors import InvalidArgument, NotFound
from taskring.wire import pb
from tests.integration.cluster_harness import Cluster

pytestmark = pytest.mark.integration


@pytest.fixture
def node(taskring_env, tmp_path):
    # A task type with a declarative key, in the same file as the per-type retry policies.
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({"tests/ok-7": {"unique_key": "order:{order_id}", "schedule_ms": [100]}}))
    n = NodeProcess(taskring_env, "unique-1", single=True, TASKRING_RETRY_POLICIES=str(policies)).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


@pytest.fixture
def client(node):
    with Client(node.target) as c:
        yield c


def key() -> str:
    return f"order:{uuid.uuid4().hex[:10]}"


def wait_state(client: Client, task_id: str, state: TaskState, timeout_s: float = 30):
    return wait_until(lambda: (lambda t: t if t.state == state else None)(client.get(task_id)), timeout_s,
                      f"{task_id} to be {state}")


def test_a_live_holder_answers_for_its_key_across_both_paths(client, recording_executor):
    k = key()
    # The holder waits in MySQL (due in a minute); the second would have taken Kafka.
    first = client.submit("tests", "ok", {"n": 1}, unique_key=k, delay=60)
    second = client.submit("tests", "ok-1", {"n": 2}, unique_key=k, task_id="never-written-1")
    assert (second.task_id, second.duplicate, second.state) == (first.task_id, True, TaskState.QUEUED)
    with pytest.raises(NotFound):
        client.get("never-written-1")
    # And the other way round: a holder on the Kafka path holds against a delayed submit.
    k2 = key()
    quick = client.submit("tests", "ok", {}, unique_key=k2, delay=2)
    later = client.submit("tests", "ok", {}, unique_key=k2, delay=120)
    assert (later.task_id, later.duplicate) == (quick.task_id, True)
    # The GetTask of a keyed task shows its key.
    assert client.get(first.task_id).unique_key == k


def test_within_one_batch_the_first_task_with_a_key_takes_it(client, recording_executor):
    k = key()
    ids = [f"b-{uuid.uuid4().hex}" for _ in range(4)]
    specs = [TaskSpec("tests", "ok", {"i": i}, unique_key=k if i != 1 else None, task_id=ids[i]) for i in range(4)]
    results = client.submit_batch(specs)
    assert [r.duplicate for r in results] == [False, False, True, True]
    assert results[2].task_id == results[3].task_id == ids[0]
    wait_state(client, ids[0], TaskState.SUCCEEDED)
    runs = recording_executor.runs_by_task()
    assert runs[ids[0]] == 1 and ids[2] not in runs and ids[3] not in runs


def test_a_key_is_free_again_once_its_holder_finished_unless_it_has_a_ttl(client, recording_executor):
    k = key()
    first = client.submit("tests", "ok", {}, unique_key=k)
    wait_state(client, first.task_id, TaskState.SUCCEEDED)
    again = client.submit("tests", "ok", {}, unique_key=k)
    assert not again.duplicate and again.task_id != first.task_id
    wait_state(client, again.task_id, TaskState.SUCCEEDED)
    # A cancelled holder frees its key too.
    k_cancel = key()
    waiting = client.submit("tests", "ok", {}, unique_key=k_cancel, delay=300)
    client.cancel(waiting.task_id)
    assert not client.submit("tests", "ok", {}, unique_key=k_cancel, delay=300).duplicate
    # With a TTL the key stays held after the holder's success.
    k_ttl = key()
    held = client.submit("tests", "ok", {}, unique_key=k_ttl, unique_ttl=3600)
    wait_state(client, held.task_id, TaskState.SUCCEEDED)
    blocked = client.submit("tests", "ok", {}, unique_key=k_ttl)
    assert (blocked.task_id, blocked.duplicate, blocked.state) == (held.task_id, True, TaskState.SUCCEEDED)
    assert recording_executor.runs_by_task()[held.task_id] == 1


def test_a_task_type_can_declare_its_key_from_the_payload(client, recording_executor):
    order = uuid.uuid4().int % 10**9
    first = client.submit("tests", "ok-7", {"order_id": order, "note": "a"}, delay=60)
    second = client.submit("tests", "ok-7", {"order_id": order, "note": "b"}, delay=60)
    assert (second.task_id, second.duplicate) == (first.task_id, True)
    assert client.get(first.task_id).unique_key == f"order:{order}"
    # A caller's own key wins over the template.
    own = client.submit("tests", "ok-7", {"order_id": order}, unique_key="mine", delay=60)
    assert not own.duplicate
    # A payload without the field is refused, naming it; nothing is written.
    with pytest.raises(InvalidArgument) as info:
        client.submit("tests", "ok-7", {"other": 1}, task_id="no-order-field")
    assert info.value.field == "task.payload_json" and "order_id" in str(info.value)
    with pytest.raises(NotFound):
        client.get("no-order-field")
    # A TTL without any key is refused too.
    with pytest.raises(InvalidArgument) as info:
        client.submit("tests", "ok", {}, unique_ttl=60)
    assert info.value.field == "task.unique_ttl_ms"


def test_a_key_holds_across_a_crash_between_the_write_and_the_produce(taskring_env, recording_executor):
    # Given a keyed task written as `enqueued` whose Kafka message was never produced
    # (its node died between its MySQL write and its produce)
    k = key()
    now = dt.datetime.now(dt.UTC)
    valid = validate_task(pb.Task(task_id="orphan-k", namespace="tests", task_type="ok", unique_key=k),
                          now=now, limits=Limits())
    config = NodeConfig(node_id="dead-node", slot_count=taskring_env.partitions or NodeConfig.slot_count,
                        mysql=MySQLConfig(host=taskring_env.stack.host, port=taskring_env.stack.mysql_port,
                                          database=taskring_env.database))
    store = store_of(config)
    store.start()
    try:
        at = ms_to_datetime(valid.due_at_ms)
        assert store.insert_tasks([r.NewTask("orphan-k", slot_of("tests", "ok", config.slot_count), "tests", "ok",
                                             valid.priority, r.ENQUEUED, at, valid.to_pb().SerializeToString(), at,
                                             unique_key=k)], "dead-node") == {}
    finally:
        store.stop()
    # When another submit with the key reaches a live node
    node = NodeProcess(taskring_env, "unique-2", single=True).start()
    try:
        node.wait_ready()
        with Client(node.target) as client:
            dup = client.submit("tests", "ok", {}, unique_key=k, task_id="after-crash")
            # Then the orphan holds it, the new task is never written, and the orphan runs
            # (rescued from MySQL by the sweeper), once.
            assert (dup.task_id, dup.duplicate) == ("orphan-k", True)
            wait_state(client, "orphan-k", TaskState.SUCCEEDED, timeout_s=60)
            with pytest.raises(NotFound):
                client.get("after-crash")
    finally:
        node.terminate()
    assert recording_executor.runs_by_task().get("orphan-k") == 1


@pytest.fixture
def sharded_world(stack, tmp_path):
    with private_world(stack, "ukey", tmp_path / "logs", 16, shards=2) as world:
        yield world


def test_a_key_holds_across_nodes_and_store_shards(sharded_world):
    world = sharded_world
    executor = RecordingExecutor(world.zk_hosts).start()
    cluster = Cluster(world)
    try:
        n1, n2 = cluster.add("n1"), cluster.add("n2")
        n1.wait_ready()
        n2.wait_ready()
        cluster.wait_settled({"n1", "n2"})
        halves = NodeConfig(slot_count=16, mysql_shards=(MySQLConfig(),)).shard_of_slot
        # Two task types whose slots are on different shards: a key is namespace-wide.
        by_shard: dict[int, str] = {}
        for task_type in RecordingExecutor.SPREAD_TYPES:
            by_shard.setdefault(halves[slot_of("tests", task_type, 16)], task_type)
        type_a, type_b = by_shard[0], by_shard[1]
        with Client(n1.target) as c1, Client(n2.target) as c2:
            for _ in range(20):
                k = key()
                first = c1.submit("tests", type_a, {}, unique_key=k, delay=60)
                second = c2.submit("tests", type_b, {}, unique_key=k)
                assert (second.task_id, second.duplicate) == (first.task_id, True)
            # Batches through both nodes, one key gets exactly one task. The holder is delayed so
            # that it is still live at the second submit: a key is held while its task is live,
            # and an immediate holder can succeed (and free the key) in a few milliseconds.
            k = key()
            ids = {res.task_id for res in c1.submit_batch([TaskSpec("tests", type_b, {}, unique_key=k, delay=60)])}
            ids |= {res.task_id for res in c2.submit_batch([TaskSpec("tests", type_a, {}, unique_key=k)])}
            assert len(ids) == 1
        rows = world.sql_all("SELECT COUNT(*) FROM tasks")
        assert sum(n for (n,) in rows) == 21
    finally:
        cluster.stop_all()
        executor.stop()


def test_the_taskring_command_submits_with_a_unique_key_and_reads_the_task(node):
    import subprocess
    import sys

    def taskring(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "taskring_cli.main", *args, "--target", node.target],
                              capture_output=True, text=True, timeout=60)
    k = key()
    first = taskring("submit", "tests", "ok", "--payload", '{"n": 1}', "--delay", "60", "--unique-key", k)
    assert first.returncode == 0, first.stderr
    again = taskring("submit", "tests", "ok", "--payload", '{"n": 2}', "--unique-key", k)
    held, made = json.loads(again.stdout), json.loads(first.stdout)
    assert (held["task_id"], held["duplicate"], made["duplicate"]) == (made["task_id"], True, False)
    got = json.loads(taskring("get", made["task_id"]).stdout)
    assert (got["unique_key"], got["payload"], got["state"]) == (k, {"n": 1}, "queued")
    bad = taskring("submit", "tests", "ok", "--unique-ttl", "5")
    assert bad.returncode == 1 and "task.unique_ttl_ms" in bad.stderr
