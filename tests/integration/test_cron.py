"""Cron rules on real nodes: the API (create, get, list, update, pause, resume, delete),
validation naming the field, and fires materialized once each, on time, by the owner."""
from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

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
    # Every fire written counts as submitted in the console's figures, as an API task does.
    cron.DeleteCronRule(pb.CronRuleRef(namespace="tests", name="tick"))

    def counted() -> tuple[int, int]:
        fires = taskring_env.sql("SELECT COUNT(*) FROM tasks WHERE task_id LIKE 'cron-%%'")[0][0]
        stats = taskring_env.sql("SELECT COALESCE(SUM(submitted), 0) FROM task_stats"
                                 " WHERE namespace = 'tests' AND task_type = 'ok'")[0][0]
        return fires, int(stats)
    def agree() -> bool:
        fires, submitted = counted()
        return fires >= 5 and fires == submitted
    wait_until(agree, 20, f"the fires counted as submitted {counted()}")


# ---------------------------------------------------------------- through the SDK

from taskring.cron import CronRuleSpec  # noqa: E402
from taskring.errors import AlreadyExists, InvalidArgument, NotFound  # noqa: E402


@pytest.fixture
def client(node):
    with Client(node.target) as c:
        yield c


def spec(rule_name: str, **fields) -> CronRuleSpec:
    values = dict(namespace="tests", name=rule_name, task_type="ok", schedule="* * * * * *", time_zone="UTC")
    values.update(fields)
    return CronRuleSpec(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("fields, field", [
    ({"time_zone": ""}, "rule.time_zone"),
    ({"time_zone": "Mars/Olympus_Mons"}, "rule.time_zone"),
    ({"schedule": "61 * * * *"}, "rule.schedule"),
    ({"schedule": "* * *"}, "rule.schedule"),
    ({"schedule": "0 0 31 2 *"}, "rule.schedule"),
    ({"schedule": "CRON_TZ=Asia/Tokyo 0 0 * * *", "time_zone": "UTC"}, "rule.time_zone"),
    ({"overlap": "sometimes"}, "rule.overlap"),
    ({"catch_up": "never"}, "rule.catch_up"),
    ({"on_repeated_hour": "thrice"}, "rule.on_repeated_hour"),
    ({"name": "Bad Name"}, "rule.name"),
    ({"task_type": "bad type!"}, "rule.task_type"),
    ({"namespace": ""}, "rule.namespace"),
    ({"max_retries": 51}, "rule.max_retries"),             # what a Submit of the fire would refuse
    ({"timeout": dt.timedelta(hours=2)}, "rule.timeout_ms"),
])
def test_a_bad_rule_is_refused_naming_the_field_and_nothing_is_written(client, fields, field):
    with pytest.raises(InvalidArgument) as info:
        client.cron.create(spec("bad", **fields))
    assert info.value.field == field, info.value
    assert client.cron.list("tests") == []


def test_rules_are_created_read_listed_updated_paused_resumed_and_deleted(client, recording_executor, taskring_env):
    created = client.cron.create(spec("sgt-midnight", schedule="CRON_TZ=Asia/Singapore 0 0 * * *", time_zone="",
                                      task_type="ok-3", payload={"scope": "all"}, owner_team="payments",
                                      description="reconcile"))
    assert (created.spec.time_zone, created.spec.schedule, created.spec.on_repeated_hour,
            created.spec.on_skipped_hour) == ("Asia/Singapore", "0 0 * * *", "once", "at_shift")
    assert created.next_fire_time is not None and (created.next_fire_time.hour, created.next_fire_time.minute) \
        == (16, 0)  # midnight in Singapore is 16:00 UTC
    with pytest.raises(AlreadyExists):
        client.cron.create(spec("sgt-midnight"))
    fast = client.cron.create(spec("fast", payload={"n": 1}))
    assert [r.spec.name for r in client.cron.list("tests")] == ["fast", "sgt-midnight"]
    wait_until(lambda: client.cron.get("tests", "fast").last_fire_state == TaskState.SUCCEEDED, 20, "a fire")
    # A fire's task says which rule and fire time it is for.
    last = client.cron.get("tests", "fast")
    info = client.get(last.last_fire_task_id)
    assert (info.cron_rule, info.cron_fire_time) == ("tests/fast", last.last_fire_time)
    assert info.payload == {"n": 1}
    # Update: the fires planned ahead under the old spec and not started are cancelled.
    with pytest.raises(InvalidArgument) as bad:
        client.cron.update(spec("fast", task_type="ok-1"))
    assert bad.value.field == "rule.task_type"
    updated = client.cron.update(spec("fast", payload={"n": 2}))
    assert updated.spec.payload == {"n": 2} and updated.updated_at > fast.updated_at
    wait_until(lambda: any(client.get(t).payload == {"n": 2} for t in recent_fires(recording_executor, 3)), 20,
               "a fire of the updated rule")
    planned_ahead = taskring_env.sql_all("SELECT status, COUNT(*) FROM tasks WHERE task_id LIKE %s"
                                         " AND status = 'cancelled' GROUP BY status", ("cron-%",))
    assert planned_ahead and planned_ahead[0][1] > 0, "the old spec's future fires were not cancelled"
    # Pause: nothing more runs; resume: it fires again.
    paused = client.cron.pause("tests", "fast")
    assert paused.paused and paused.next_fire_time is None
    runs_at_pause = cron_runs(recording_executor)
    wait_until(lambda: client.cron.get("tests", "fast").last_fire_state in (TaskState.SUCCEEDED, TaskState.CANCELLED,
                                                                             None), 10, "the pause to settle")
    settled = cron_runs(recording_executor)
    assert settled - runs_at_pause <= 2, "fires ran after the pause had settled"
    pending = taskring_env.sql_all("SELECT COUNT(*) FROM tasks WHERE task_id LIKE %s"
                                   " AND status IN ('pending', 'enqueued', 'claimed')", ("cron-%",))
    assert pending == [(0,)]
    resumed = client.cron.resume("tests", "fast")
    assert not resumed.paused
    wait_until(lambda: cron_runs(recording_executor) >= settled + 2, 20, "fires after the resume")
    deleted = client.cron.delete("tests", "fast")
    assert deleted.spec.name == "fast"
    with pytest.raises(NotFound):
        client.cron.get("tests", "fast")
    assert [r.spec.name for r in client.cron.list()] == ["sgt-midnight"]
    # Every change is in the audit trail, with the rule before and after, in order.
    trail = taskring_env.sql_all("SELECT action, actor, address, before_json, after_json FROM audit_log"
                                 " WHERE target = %s ORDER BY id", ("cron:tests/fast",))
    assert [row[0] for row in trail] == ["cron.create", "cron.update", "cron.pause", "cron.resume", "cron.delete"]
    assert {row[1] for row in trail} == {"anonymous"} and {row[2] for row in trail} == {"127.0.0.1"}
    create, update, pause = trail[0], trail[1], trail[2]
    assert create[3] is None and json.loads(create[4])["name"] == "fast"
    assert json.loads(update[3])["payload_json"] != json.loads(update[4])["payload_json"]
    assert (json.loads(pause[3])["paused"], json.loads(pause[4])["paused"]) == (False, True)
    assert trail[4][4] is None


def cron_runs(executor) -> int:
    return sum(n for t, n in executor.runs_by_task().items() if t.startswith("cron-"))


def recent_fires(executor, n: int) -> list[str]:
    return [e.task_id for e in executor.snapshot() if e.task_id.startswith("cron-")][-n:]


# ---------------------------------------------------------------- catch-up and overlap

FAST_PLANNING: dict[str, Any] = {"TASKRING_CRON_LEAD_MS": "2000", "TASKRING_CRON_MISSED_AFTER_MS": "2000",
                 "TASKRING_CRON_TICK_MS": "200"}


def fires_of(env, rule_uid: str) -> list[tuple[dt.datetime, dt.datetime, str]]:
    """(fire time, when its task was written, status) of every fire of a rule generation."""
    rows = env.sql_all("SELECT task_id, created_at, status FROM tasks WHERE task_id LIKE %s", (f"cron-{rule_uid}-%",))
    return sorted((dt.datetime.fromtimestamp(int(t.rsplit("-", 1)[1]) / 1000, tz=dt.UTC),
                   created.replace(tzinfo=dt.UTC), status) for t, created, status in rows)


def uid_of(env, name: str) -> str:
    return env.sql_all("SELECT rule_uid FROM cron_rules WHERE name = %s", (name,))[0][0]


def test_after_every_node_was_down_each_rule_catches_up_by_its_policy(taskring_env, recording_executor):
    policies = {"cu-skip": ("skip", 0, 0), "cu-latest": ("latest", 0, 1), "cu-all": ("all", 3, 3)}
    first = NodeProcess(taskring_env, "cron-a", single=True, **FAST_PLANNING).start()
    try:
        first.wait_ready()
        with Client(first.target) as client:
            for name, (policy, limit, _) in policies.items():
                client.cron.create(spec(name, catch_up=policy, catch_up_limit=limit, task_type="ok-5"))
            wait_until(lambda: all(client.cron.get("tests", n).last_fire_state == TaskState.SUCCEEDED
                                   for n in policies), 20, "every rule to fire")
    finally:
        first.terminate()
    down_at = dt.datetime.now(dt.UTC)
    # The outage: no node at all for 8 s, well past the lead (2 s) and the missed-after (2 s).
    wait_until(lambda: dt.datetime.now(dt.UTC) > down_at + dt.timedelta(seconds=8), 20, "the outage to last 8 s")
    second = NodeProcess(taskring_env, "cron-b", single=True, **FAST_PLANNING).start()
    try:
        second.wait_ready()
        up_at = dt.datetime.now(dt.UTC)
        with Client(second.target) as client:
            def fired_again(name: str) -> bool:
                last = client.cron.get("tests", name).last_fire_time
                return last is not None and last > up_at
            wait_until(lambda: all(fired_again(n) for n in policies), 20, "every rule to fire again")
    finally:
        second.terminate()
    for name, (_, _, expected) in policies.items():
        fires = fires_of(taskring_env, uid_of(taskring_env, name))
        # A catch-up fire is one written after the restart for a fire time already missed then:
        # at or before the plan's time (its task's created_at) less missed-after (2 s).
        caught_up = [f for f, written, _ in fires if written > up_at - dt.timedelta(seconds=1)
                     and f <= written - dt.timedelta(seconds=2)]
        assert len(caught_up) == expected, (name, caught_up)
        # Nothing fell due twice, and nothing in the outage beyond what the policy keeps.
        assert len({f for f, _, _ in fires}) == len(fires)
        gap = (down_at + dt.timedelta(seconds=3), up_at - dt.timedelta(seconds=3))
        in_gap = [f for f, _, _ in fires if gap[0] < f < gap[1]]
        assert len(in_gap) <= expected, (name, in_gap)


def test_overlap_skip_and_queue_one_never_run_two_fires_of_a_rule_at_once(node, client, recording_executor):
    for policy in ("skip", "queue_one"):
        client.cron.create(spec(f"slow-{policy}", task_type="slow", payload={"ms": 2500}, overlap=policy))
    wait_until(lambda: sum(1 for e in recording_executor.snapshot() if e.task_type == "slow") >= 6, 40,
               "three fires of each slow rule")
    for policy in ("skip", "queue_one"):
        client.cron.pause("tests", f"slow-{policy}")
    with Client(node.target) as c:
        starts: dict[str, list[int]] = {}
        for e in recording_executor.snapshot():
            if e.task_type == "slow":
                starts.setdefault(c.get(e.task_id).cron_rule, []).append(e.started_ms)
    for rule_key, times in starts.items():
        times.sort()
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert gaps and min(gaps) >= 2400, (rule_key, gaps)  # each started after the previous one's 2.5 s
        print(f"\n{rule_key}: starts every {gaps} ms")


def test_the_taskring_command_manages_rules(node):
    import json
    import subprocess
    import sys

    from tests.integration.test_sdk_cron import RULE_KEYS

    def taskring(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "taskring_cli.main", "cron", "--target", node.target, *args],
                              capture_output=True, text=True, timeout=60)
    made = taskring("create", "tests", "cli-rule", "--type", "ok", "--schedule", "30 2 * * *",
                    "--zone", "America/New_York", "--payload", '{"a": 1}', "--owner-team", "ops")
    assert made.returncode == 0, made.stderr
    rule = json.loads(made.stdout)
    assert set(rule) == RULE_KEYS, set(rule) ^ RULE_KEYS   # what the Go, Java and Node CLIs print too
    assert (rule["time_zone"], rule["payload"], rule["owner_team"]) == ("America/New_York", {"a": 1}, "ops")
    assert (rule["timeout_ms"], rule["max_retries"], rule["last_fire_state"]) == (None, None, None)
    listed = taskring("list", "tests")
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["cli-rule"]
    assert json.loads(taskring("pause", "tests", "cli-rule").stdout)["paused"] is True
    bad = taskring("create", "tests", "bad-zone", "--type", "ok", "--schedule", "0 0 * * *", "--zone", "Nowhere/X")
    assert bad.returncode == 1 and "rule.time_zone" in bad.stderr
    assert taskring("delete", "tests", "cli-rule").returncode == 0
    gone = taskring("get", "tests", "cli-rule")
    assert gone.returncode == 1 and "not found" in gone.stderr
