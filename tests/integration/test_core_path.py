"""The product's whole job on one dispatcher node, against the real stack.

Each test runs a real `taskring node --single` process, a real executor (SDK)
and its own database, chroot and topics. Route threshold 3 s: a task due later
takes the MySQL path, sooner the Kafka path.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

import grpc
import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, RetryPolicy, TaskInfo, TaskSpec, TaskState
from taskring.errors import FailedPrecondition
from taskring.wire import pb, pb_grpc

pytestmark = pytest.mark.integration

THRESHOLD_MS = 3000
FAST_RETRY = RetryPolicy.tiered(0.1)
TERMINAL = {TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED}


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "core-1", single=True, TASKRING_ROUTE_THRESHOLD_MS=str(THRESHOLD_MS)).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def client(node):
    with Client(node.target) as c:
        yield c


def wait_terminal(client: Client, task_ids, timeout_s: float = 60.0) -> dict:
    infos: dict[str, TaskInfo] = {}

    def done():
        for tid in task_ids:
            if tid not in infos or infos[tid].state not in TERMINAL:
                infos[tid] = client.get(tid)
        return all(i.state in TERMINAL for i in infos.values())
    wait_until(done, timeout_s, f"{len(task_ids)} tasks to reach a terminal state", 0.2)
    return infos


def test_delayed_tasks_never_start_before_due(client, recording_executor):
    # Given tasks delayed on the Kafka path (1-2 s) and on the MySQL path (4-5 s)
    specs = [TaskSpec("tests", "ok", {"i": i}, delay=d) for i, d in
             enumerate([1.0, 1.3, 1.7, 2.0, 4.0, 4.5, 5.0])]
    results = client.submit_batch(specs)
    due = {r.task_id: r.due_at for r in results}
    # When they have all run
    wait_terminal(client, list(due), timeout_s=30)
    runs = {e.task_id: e for e in recording_executor.snapshot()}
    # Then none started before its due time
    for tid, due_at in due.items():
        due_ms = int(due_at.timestamp() * 1000)
        assert runs[tid].started_ms >= due_ms, f"{tid} started {due_ms - runs[tid].started_ms} ms early"
    assert {r.slot for r in results}  # routed somewhere real


def test_task_failing_twice_then_succeeding_has_three_attempts(client, recording_executor):
    r = client.submit("tests", "fail_then_ok", {"failures": 2}, max_retries=3, retry_policy=FAST_RETRY)
    info = wait_terminal(client, [r.task_id])[r.task_id]
    assert info.state == TaskState.SUCCEEDED
    assert info.attempts == 3
    dispatched = [e.attempt for e in info.history if e.state == TaskState.DISPATCHED]
    assert dispatched == [1, 2, 3]
    assert [e.attempt for e in info.history if e.state == TaskState.RETRY_WAIT] == [1, 2]
    assert recording_executor.runs_by_task()[r.task_id] == 3


def test_poison_task_dead_letters_after_max_retries_plus_one_and_others_succeed(client, recording_executor,
                                                                                 taskring_env):
    specs = [TaskSpec("tests", "poison", {}, max_retries=2, retry_policy=FAST_RETRY)]
    specs += [TaskSpec("tests", "ok", {"i": i}) for i in range(30)]
    results = client.submit_batch(specs)
    infos = wait_terminal(client, [r.task_id for r in results])
    poison = infos[results[0].task_id]
    assert poison.state == TaskState.DEAD_LETTERED
    assert poison.attempts == 3
    assert recording_executor.runs_by_task()[poison.task_id] == 3
    assert "poison task always fails" in poison.last_error
    assert all(infos[r.task_id].state == TaskState.SUCCEEDED for r in results[1:])
    [(attempts, error, trace, envelope_len, first, dead)] = taskring_env.sql(
        "SELECT attempts, last_error, last_stack_trace, LENGTH(envelope), first_attempt_at, dead_lettered_at"
        " FROM dead_letters WHERE task_id = %s", (poison.task_id,))
    assert attempts == 3 and "poison" in error and "RuntimeError" in trace and envelope_len > 0
    assert first is not None and dead >= first


def test_non_retryable_failure_dead_letters_at_once(client, recording_executor):
    r = client.submit("tests", "fatal", {}, max_retries=5, retry_policy=FAST_RETRY)
    info = wait_terminal(client, [r.task_id])[r.task_id]
    assert info.state == TaskState.DEAD_LETTERED
    assert info.attempts == 1
    assert recording_executor.runs_by_task()[r.task_id] == 1
    assert [e.state for e in info.history][-2:] == [TaskState.FAILED, TaskState.DEAD_LETTERED]


@pytest.mark.parametrize("delay_s", [1.5, 4.0], ids=["kafka-path", "mysql-path"])
def test_cancelled_task_never_runs(client, recording_executor, delay_s):
    victim = client.submit("tests", "ok", {}, delay=delay_s)
    assert client.cancel(victim.task_id) == TaskState.CANCELLED
    # A sentinel due after the victim: once it has run, the victim's time has passed.
    sentinel = client.submit("tests", "ok", {}, delay=delay_s + 0.5)
    wait_terminal(client, [sentinel.task_id], timeout_s=30)
    assert client.get(victim.task_id).state == TaskState.CANCELLED
    assert recording_executor.runs_by_task()[victim.task_id] == 0
    # And cancelling a finished task says so plainly
    with pytest.raises(FailedPrecondition, match="already succeeded"):
        client.cancel(sentinel.task_id)


def test_resubmitting_the_same_task_id_returns_the_same_task(client, recording_executor, taskring_env):
    first = client.submit("tests", "ok", {"n": 1}, task_id="order-42-cancel")
    again = client.submit("tests", "ok", {"n": 1}, task_id="order-42-cancel")
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.task_id == first.task_id
    wait_terminal(client, [first.task_id])
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks")[0][0] == 1
    assert recording_executor.runs_by_task()[first.task_id] == 1


def _task(**fields) -> pb.Task:
    base: dict[str, Any] = dict(namespace="tests", task_type="ok", payload_json="{}")
    base.update(fields)
    return pb.Task(**base)


BAD_INPUT = [
    ("missing namespace", _task(namespace=""), "task.namespace"),
    ("malformed namespace", _task(namespace="Bad Space"), "task.namespace"),
    ("missing task_type", _task(task_type=""), "task.task_type"),
    ("malformed task_type", _task(task_type="no/slash"), "task.task_type"),
    ("payload not JSON", _task(payload_json="{nope"), "task.payload_json"),
    ("payload not an object", _task(payload_json="[1, 2]"), "task.payload_json"),
    ("payload too large", _task(payload_json='{"x": "' + "a" * 70_000 + '"}'), "task.payload_json"),
    ("payload nested too deep", _task(payload_json='{"a":' * 40 + "1" + "}" * 40), "task.payload_json"),
    ("schedule_time without offset", _task(schedule_time="2030-01-01T00:00:00"), "task.schedule_time"),
    ("delay beyond maximum", _task(delay_ms=91 * 24 * 3600 * 1000), "task.delay_ms"),
    ("unknown priority", _task(priority=7), "task.priority"),
    ("max_retries out of range", _task(max_retries=51), "task.max_retries"),
    ("negative max_retries", _task(max_retries=-1), "task.max_retries"),
    ("malformed task_id", _task(task_id="has space"), "task.task_id"),
]


@pytest.mark.parametrize("case,task,field", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_rejected_naming_the_field_and_nothing_is_written(node, taskring_env, case, task, field):
    with grpc.insecure_channel(node.target) as channel:
        stub = pb_grpc.TaskServiceStub(channel)
        with pytest.raises(grpc.RpcError) as single:
            stub.Submit(pb.SubmitRequest(task=task), timeout=10)
        assert single.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = single.value.details()
        assert details is not None and details.startswith(field + ":"), details
        # In a batch, one bad task rejects the whole batch before any write.
        good = _task(task_id=f"good-{abs(hash(case))}")
        with pytest.raises(grpc.RpcError) as batch:
            stub.SubmitBatch(pb.SubmitBatchRequest(tasks=[good, task]), timeout=10)
        assert batch.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = batch.value.details()
        assert details is not None and details.startswith(field.replace("task.", "tasks[1].") + ":")
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks")[0][0] == 0
    assert taskring_env.sql("SELECT COUNT(*) FROM task_events")[0][0] == 0


def test_bad_batch_size_is_rejected(node):
    with grpc.insecure_channel(node.target) as channel:
        stub = pb_grpc.TaskServiceStub(channel)
        for tasks, problem in (([], "at least one"), ([_task()] * 1001, "more than the maximum")):
            with pytest.raises(grpc.RpcError) as err:
                stub.SubmitBatch(pb.SubmitBatchRequest(tasks=tasks), timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = err.value.details()
            assert details is not None and details.startswith("tasks:") and problem in details


def test_get_of_unknown_task_is_not_found(client):
    from taskring.errors import NotFound
    with pytest.raises(NotFound):
        client.get("no-such-task")


def test_admin_view_and_metrics_show_the_work(node, client, recording_executor):
    import urllib.request
    results = client.submit_batch([TaskSpec("tests", "ok", {}) for _ in range(5)]
                                  + [TaskSpec("tests", "ok", {}, delay=60)])  # one left pending (MySQL path)
    wait_terminal(client, [r.task_id for r in results[:5]])
    ring = node.get("/ring")
    slot = results[0].slot
    entry = ring["slots"][slot]
    assert entry["actual_owner"] == "core-1" and entry["epoch"] >= 1
    assert "tests/ok" in entry["task_types"]
    assert entry["mysql_pending"] == 1

    def scrape() -> str:
        with urllib.request.urlopen(node.admin + "/metrics", timeout=5) as response:
            return response.read().decode()
    wait_until(lambda: f'taskring_mysql_pending{{slot="{slot}"}} 1.0' in scrape(), 15, "the pending gauge")
    text = scrape()
    assert 'taskring_task_outcomes_total{kind="succeeded"} 5.0' in text
    assert "taskring_dispatch_lateness_seconds_bucket" in text
    # The operations metrics, recorded by the parts that do the work
    assert 'taskring_execution_duration_seconds_count{namespace="tests",task_type="ok"} 5.0' in text
    assert 'taskring_submit_latency_seconds_count{method="SubmitBatch"} 1.0' in text
    assert 'taskring_in_flight_by_type{namespace="tests",task_type="ok"} 0.0' in text
    assert "taskring_poll_duration_seconds_count" in text
    assert 'taskring_ownership_moves_total{move="assigned"}' in text
    wait_until(lambda: re.search(r'taskring_executors\{namespace="tests",task_type="(ok|\*)"\} [1-9]', scrape()),
               15, "the executor gauge")


def test_slow_tasks_do_not_hold_up_quick_ones(client, recording_executor):
    # Given slow tasks each started before the next is submitted, so that each
    # travels in a dispatch batch of its own
    slow = []
    for i in range(6):
        slow.append(client.submit("tests", "slow", {"ms": 5000}).task_id)

        def started(n: int = i) -> bool:
            return len(recording_executor.snapshot()) > n
        wait_until(started, 20, f"slow task {i} to start")
    # When quick tasks arrive while every slow one is still running
    quick = [r.task_id for r in client.submit_batch([TaskSpec("tests", "ok", {}) for _ in range(20)])]
    infos = wait_terminal(client, quick + slow, timeout_s=60)

    def finished(tid):
        return next(e.at for e in infos[tid].history if e.state == TaskState.SUCCEEDED)
    # Then every quick task finished before the first slow one did
    assert max(finished(t) for t in quick) < min(finished(t) for t in slow)


def test_a_retried_submit_produces_a_message_the_first_call_never_did(taskring_env, recording_executor):
    from cluster.slots import slot_of
    from dispatcher.api.validation import Limits, validate_task
    from dispatcher.base.clock import ms_to_datetime
    from dispatcher.base.config import MySQLConfig
    from dispatcher.store.mysql import TaskStore
    from dispatcher.store.records import ENQUEUED, NewTask
    # Given a task written as `enqueued` whose Kafka message was never produced
    # (the node died between its MySQL write and its produce)
    now = dt.datetime.now(dt.UTC)
    valid = validate_task(_task(task_id="orphan-1"), now=now, limits=Limits())
    store = TaskStore(MySQLConfig(host=taskring_env.stack.host, port=taskring_env.stack.mysql_port,
                                  database=taskring_env.database))
    try:
        store.insert_tasks([NewTask("orphan-1", slot_of("tests", "ok", taskring_env.partitions), "tests", "ok",
                                    valid.priority, ENQUEUED, ms_to_datetime(valid.due_at_ms),
                                    valid.to_pb().SerializeToString(), ms_to_datetime(valid.due_at_ms))], "dead-node")
    finally:
        store.stop()
    # When the client retries its Submit with the same task_id (to a node whose
    # sweeper would wait a minute past the due time)
    node = NodeProcess(taskring_env, "core-2", single=True, TASKRING_ENQUEUED_GRACE_MS="60000").start()
    try:
        node.wait_ready()
        with Client(node.target) as client:
            again = client.submit("tests", "ok", {}, task_id="orphan-1")
            assert again.duplicate
            # Then the task runs, long before the sweeper would have rescued it
            info = wait_terminal(client, ["orphan-1"], timeout_s=30)["orphan-1"]
    finally:
        node.terminate()
    assert info.state == TaskState.SUCCEEDED
    assert recording_executor.runs_by_task()["orphan-1"] == 1
