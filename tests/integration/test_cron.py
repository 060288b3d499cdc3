"""Cron rules on real nodes: the API (create, get, list, update, pause, resume, delete),
validation naming the field, and fires materialized once each, on time, by the owner."""
from __future__ import annotations

import time

import grpc
import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskState
from taskring.wire import pb, pb_grpc

pytestmark = pytest.mark.integration


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "cron-1", single=True).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


@pytest.fixture
def cron(node):
    channel = grpc.insecure_channel(node.target)
    try:
        yield pb_grpc.CronServiceStub(channel)
    finally:
        channel.close()


def every_second(name: str, **fields) -> pb.CronRule:
    return pb.CronRule(namespace="tests", name=name, task_type="ok", payload_json='{"from": "cron"}',
                       schedule="* * * * * *", time_zone="UTC", **fields)


def fire_ids(env, rule_uid_prefix: str = "cron-") -> dict[str, tuple[str, int]]:
    return {tid: (status, attempts) for tid, status, attempts in
            env.sql_all("SELECT task_id, status, attempts FROM tasks WHERE task_id LIKE %s", (rule_uid_prefix + "%",))}


def test_a_rule_fires_once_per_second_on_time_and_reads_back_its_last_and_next_fire(cron, node, taskring_env,
                                                                                     recording_executor):
    created = cron.CreateCronRule(pb.PutCronRuleRequest(rule=every_second("tick", owner_team="payments",
                                                                          description="every second"))).rule
    assert (created.schedule, created.time_zone, created.overlap, created.catch_up) == (
        "* * * * * *", "UTC", "allow", "latest")
    t0 = time.time()
    wait_until(lambda: len([t for t in recording_executor.runs_by_task() if t.startswith("cron-")]) >= 5, 30,
               "five fires to run")
    rule = cron.GetCronRule(pb.CronRuleRef(namespace="tests", name="tick"))
    assert rule.last_fire_task_id.startswith("cron-") and rule.next_fire_time > rule.last_fire_time
    with Client(node.target) as client:
        info = client.get(rule.last_fire_task_id)
        wait_until(lambda: client.get(rule.last_fire_task_id).state == TaskState.SUCCEEDED, 10, "the last fire")
    assert info.payload == {"from": "cron"}
    runs = {t: n for t, n in recording_executor.runs_by_task().items() if t.startswith("cron-")}
    assert all(n == 1 for n in runs.values()), runs
    print(f"\nfires run in {time.time() - t0:.1f}s: {len(runs)}")
