"""Policies set through the API on the real stack: a concurrency limit raised with PutTypePolicy
lets what waited at it start on the node that took the call at once (its file reload is slow
here), a bad entry is refused naming the field and changes nothing, the change is audited with
who and why, a delete gives the type back to the file; another node of the cluster follows the
change at its next read; `taskring policies` shows the same."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec, TaskState
from taskring.errors import FailedPrecondition, InvalidArgument
from tests.integration.test_policy_reload import LIMITED, NS, Starts, write

pytestmark = pytest.mark.integration

KEY = f"{NS}/{LIMITED}"


def test_a_limit_raised_through_the_api_applies_at_once_and_a_delete_gives_the_type_back_to_the_file(
        taskring_env, tmp_path):
    policies = tmp_path / "policies.json"
    write(policies, {KEY: {"concurrency": {"per_type": 1}}})
    node = NodeProcess(taskring_env, "policy-api-1", single=True, TASKRING_RETRY_POLICIES=str(policies),
                       TASKRING_POLICIES_RELOAD_MS="600000").start()
    executor = Starts(taskring_env.zk_hosts)
    executor.executor.start()
    try:
        node.wait_ready()
        with Client(node.target) as client:
            ids = [f"api-held-{i}" for i in range(3)]
            client.submit_batch([TaskSpec(NS, LIMITED, {"ms": 4_000}, task_id=t, timeout=10) for t in ids])
            wait_until(lambda: executor.started() == 1, 30, "one to start under the file's limit of 1")
            wait_until(lambda: sum(bool(client.get(t).waiting) for t in ids) == 2, 30, "two to wait at the limit")

            with pytest.raises(InvalidArgument) as refused:
                client.policies.put(NS, LIMITED, {"concurrency": {"per_type": 0}}, reason="try zero")
            assert refused.value.field == "policy_json.concurrency.per_type", refused.value
            assert executor.started() == 1 and client.policies.get(NS, LIMITED).source == "file"

            raised = client.policies.put(NS, LIMITED, {"concurrency": {"per_type": 3}},
                                         reason="the warehouse API takes 3 now", if_revision=0)
            assert (raised.source, raised.revision, raised.policy) == ("api", 1, {"concurrency": {"per_type": 3}})
            assert raised.file_policy == {"concurrency": {"per_type": 1}}
            # Applied on this node without waiting for its (10-minute) reload.
            wait_until(lambda: executor.started() == 3, 10, "the two waiting to start once the limit is 3")
            with pytest.raises(FailedPrecondition):
                client.policies.put(NS, LIMITED, {"retry_cap": 1}, reason="stale", if_revision=0)
            wait_until(lambda: all(client.get(t).state == TaskState.SUCCEEDED for t in ids), 30, "all to succeed")

            listed = subprocess.run([sys.executable, "-m", "taskring_cli.main", "policies", "--target", node.target,
                                     "list", NS], capture_output=True, text=True, timeout=60, check=True)
            [line] = listed.stdout.splitlines()
            assert json.loads(line)["source"] == "api" and json.loads(line)["revision"] == 1

            gone = client.policies.delete(NS, LIMITED, reason="back to the file", if_revision=1)
            assert gone.revision == 1
            back = client.policies.get(NS, LIMITED)
            assert (back.source, back.policy) == ("file", {"concurrency": {"per_type": 1}})
            more = [f"api-again-{i}" for i in range(2)]
            client.submit_batch([TaskSpec(NS, LIMITED, {"ms": 2_000}, task_id=t, timeout=10) for t in more])
            wait_until(lambda: any(client.get(t).waiting for t in more), 30, "the file's limit of 1 to bind again")
        audit = node.get("/api/audit?target=policy:" + KEY)
        assert [(r["action"], r["actor"], r["reason"]) for r in audit["records"]] == [
            ("policies.delete", "anonymous", "back to the file"), ("policies.put", "anonymous",
                                                                    "the warehouse API takes 3 now")], audit
        assert audit["records"][1]["after"] == {"revision": 1, "policy": {"concurrency": {"per_type": 3}}}
    finally:
        executor.executor.stop()
        node.terminate()


def test_every_node_of_a_cluster_follows_a_change_made_on_one(taskring_env):
    nodes = [NodeProcess(taskring_env, f"policy-follow-{i}", TASKRING_POLICIES_RELOAD_MS="300").start()
             for i in (1, 2)]
    try:
        for node in nodes:
            node.wait_ready()
        with Client(nodes[0].target) as first, Client(nodes[1].target) as second:
            first.policies.put("follow", "sync", {"rate": {"per_type": {"starts": 5, "period_ms": 1000}}},
                               reason="protect the partner API")
            wait_until(lambda: second.policies.get("follow", "sync").revision == 1, 15,
                       "the second node to read the change")
            assert second.policies.get("follow", "sync").policy == {
                "rate": {"per_type": {"starts": 5, "period_ms": 1000}}}
            first.policies.delete("follow", "sync", reason="done")
            wait_until(lambda: second.policies.get("follow", "sync").source == "none", 15,
                       "the second node to read the delete")
    finally:
        for node in nodes:
            node.terminate()
