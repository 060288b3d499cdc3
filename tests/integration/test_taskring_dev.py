"""`taskring dev` through the Python SDK's `taskring_dev` fixture (taskring/testing.py): one
process, no servers, a clock the test moves. The SDK is the shipped one: the executor registers
through dev's ZooKeeper front, the client calls its gRPC API.

Each test asserts what moving the clock makes happen, and that nothing happens before it: a
delayed task, a retry's backoff, a cron rule's fires across a daylight-saving change, a heartbeat
timeout; and the refusals: a port in use, a move backwards, a graph on the in-memory store."""
from __future__ import annotations

import datetime as dt
import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.wait import wait_until
from taskring import Client, RetryableError, TaskState
from taskring.cron import CronRuleSpec
from taskring.errors import TaskringError
from taskring.graph import Graph
from taskring.task import RetryPolicy, TaskSpec
from taskring.testing import TaskringDev

pytestmark = pytest.mark.integration

NS = "shop"


def _started(dev: TaskringDev, handlers: dict) -> None:
    executor = dev.executor(NS)
    for task_type, fn in handlers.items():
        executor.add_handler(task_type, fn)
    executor.start()


def test_a_delayed_task_runs_when_the_clock_reaches_it_and_not_before(taskring_dev: TaskringDev):
    ran: list[str] = []
    _started(taskring_dev, {"cancel_unpaid": lambda ctx: ran.append(ctx.task_id),
                            "send_email": lambda ctx: ran.append(ctx.task_id)})
    client = taskring_dev.client()
    later = client.submit(NS, "cancel_unpaid", {"order": 7}, delay=dt.timedelta(minutes=30))
    now = client.submit(NS, "send_email", {"order": 7})
    # The immediate task ran: the executor is registered and the path works, yet the delayed one
    # waits, as the clock has not moved.
    assert taskring_dev.wait_for(now.task_id).state is TaskState.SUCCEEDED
    assert client.get(later.task_id).state is TaskState.QUEUED and later.task_id not in ran

    before = taskring_dev.now()
    after = taskring_dev.advance(minutes=29)
    assert after - before >= dt.timedelta(minutes=29)
    assert client.get(now.task_id).state is TaskState.SUCCEEDED
    assert client.get(later.task_id).state is TaskState.QUEUED, "29 of 30 minutes: not due yet"
    taskring_dev.advance(minutes=1)
    info = taskring_dev.wait_for(later.task_id)
    assert info.state is TaskState.SUCCEEDED and ran.count(later.task_id) == 1
    assert [e.state for e in info.history][-1] is TaskState.SUCCEEDED


def test_a_retry_waits_its_backoff_on_the_moved_clock(taskring_dev: TaskringDev):
    attempts: list[int] = []

    def flaky(ctx):
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RetryableError("the bank is down")

    _started(taskring_dev, {"charge": flaky})
    client = taskring_dev.client()
    task = client.submit(NS, "charge", {"order": 8}, max_retries=3,
                         retry_policy=RetryPolicy.tiered(dt.timedelta(hours=1)))
    waiting = taskring_dev.wait_for(task.task_id, {TaskState.RETRY_WAIT, TaskState.QUEUED})
    assert waiting.last_error and "bank is down" in waiting.last_error
    assert waiting.due_at is not None and waiting.due_at - taskring_dev.now() > dt.timedelta(minutes=59)
    assert attempts == [1]
    taskring_dev.advance(hours=1)
    info = taskring_dev.wait_for(task.task_id)
    assert info.state is TaskState.SUCCEEDED and info.attempts == 2 and attempts == [1, 2]


@pytest.mark.taskring_dev(start_at="2027-03-13T00:00:00Z")
def test_a_cron_rule_fires_at_its_local_time_across_the_spring_forward(taskring_dev: TaskringDev):
    """New York moves from EST (UTC-5) to EDT (UTC-4) at 2027-03-14 02:00 local: a rule at 12:00
    local fires at 17:00 UTC before and at 16:00 UTC after."""
    fired: list[str] = []
    _started(taskring_dev, {"reconcile": lambda ctx: fired.append(ctx.task_id)})
    client = taskring_dev.client()
    client.cron.create(CronRuleSpec(namespace=NS, name="noon", task_type="reconcile", schedule="0 12 * * *",
                                    time_zone="America/New_York"))
    for _ in range(3):
        taskring_dev.advance(days=1)
    expected = [dt.datetime(2027, 3, 13, 17, tzinfo=dt.UTC), dt.datetime(2027, 3, 14, 16, tzinfo=dt.UTC),
                dt.datetime(2027, 3, 15, 16, tzinfo=dt.UTC)]

    def three_fires() -> list:
        infos = [client.get(task_id) for task_id in fired]
        return infos if len(infos) == 3 else []

    infos = _until(three_fires, "three fires of the noon rule")
    assert sorted(i.cron_fire_time for i in infos) == expected
    assert {i.cron_rule for i in infos} == {"shop/noon"}
    assert {taskring_dev.wait_for(i.task_id).state for i in infos} == {TaskState.SUCCEEDED}
    assert client.cron.get(NS, "noon").next_fire_time == dt.datetime(2027, 3, 16, 16, tzinfo=dt.UTC)


def test_an_attempt_that_stops_heartbeating_times_out_when_the_clock_passes_its_timeout(taskring_dev: TaskringDev):
    release = threading.Event()
    attempts: list[int] = []

    def export(ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            release.wait(30)   # silent: no heartbeat after the first, which the SDK sends itself

    _started(taskring_dev, {"export": export})
    client = taskring_dev.client()
    client.policies.put(NS, "export", {"heartbeat_timeout_ms": 600_000}, reason="a test")
    try:
        task = client.submit(NS, "export", {}, max_retries=2, timeout=dt.timedelta(hours=1),
                             retry_policy=RetryPolicy.tiered(dt.timedelta(seconds=1)))
        _until(lambda: attempts == [1], "the first attempt to start")
        assert client.get(task.task_id).state in (TaskState.DISPATCHED, TaskState.RUNNING)
        taskring_dev.advance(minutes=11)
        waited = taskring_dev.wait_for(task.task_id, {TaskState.RETRY_WAIT, TaskState.QUEUED, TaskState.SUCCEEDED})
        assert "heartbeat" in waited.last_error
        taskring_dev.advance(seconds=1)
        info = taskring_dev.wait_for(task.task_id)
        assert info.state is TaskState.SUCCEEDED and info.attempts == 2
    finally:
        release.set()


def test_a_move_backwards_or_not_in_milliseconds_is_refused_naming_the_field(taskring_dev: TaskringDev):
    with pytest.raises(ValueError, match="only moves forward"):
        taskring_dev.advance(-1)
    before = taskring_dev.now()
    for body in ({"advance_ms": -5}, {"advance_ms": 1.5}, {"advance_ms": "60000"}, {}):
        request = urllib.request.Request(taskring_dev.admin + "api/dev/clock", data=json.dumps(body).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400 and "advance_ms" in refused.value.read().decode()
    assert taskring_dev.now() - before < dt.timedelta(minutes=1)


def test_a_graph_is_refused_on_the_in_memory_store_saying_why(taskring_dev: TaskringDev):
    graph = Graph("order-1")
    graph.task("charge", TaskSpec(NS, "charge"))
    with pytest.raises(TaskringError, match="graphs need the MariaDB store"):
        taskring_dev.client().submit_graph(graph)


def test_a_port_in_use_is_refused_naming_it(tmp_path: Path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        taskring = Path(sys.executable).with_name("taskring")
        for flag in ("--grpc-port", "--admin-port", "--zookeeper-port"):
            ports = {"--grpc-port": "0", "--admin-port": "0", "--zookeeper-port": "0", flag: str(port)}
            done = subprocess.run([str(taskring), "dev", *[x for kv in ports.items() for x in kv]],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 2, done
            assert f"{flag[2:].replace('-', '_')}: 127.0.0.1:{port} is in use" in done.stderr


def test_the_same_client_works_against_dev_as_against_a_cluster(taskring_dev: TaskringDev):
    """Nothing dev-specific in the SDK: a plain Client on the printed target."""
    with Client(taskring_dev.grpc) as client:
        _started(taskring_dev, {"ping": lambda ctx: {"pong": ctx.payload["n"]}})
        task = client.submit(NS, "ping", {"n": 1})
        assert taskring_dev.wait_for(task.task_id).state is TaskState.SUCCEEDED


def _until(check, what: str, timeout_s: float = 15.0):
    return wait_until(check, timeout_s, what)


def test_the_console_and_the_admin_api_serve_from_the_in_memory_store(taskring_dev: TaskringDev):
    _started(taskring_dev, {"ping": lambda ctx: None})
    task = taskring_dev.client().submit(NS, "ping", {"n": 1})
    taskring_dev.wait_for(task.task_id)

    def get(path: str) -> tuple[int, str]:
        with urllib.request.urlopen(taskring_dev.admin + path, timeout=10) as answer:
            return answer.status, answer.read().decode()

    status, page = get("")
    assert status == 200 and "<html" in page.lower()
    status, body = get(f"api/tasks/{task.task_id}")
    assert status == 200 and json.loads(body)["state"] == "succeeded"
    _, ring = get("ring")
    slots = json.loads(ring)["slots"]
    assert {s["actual_owner"] for s in slots} == {"dev"} and len(slots) == 8
    _, metrics = get("metrics")
    assert 'taskring_task_outcomes_total{kind="succeeded"} 1.0' in metrics
