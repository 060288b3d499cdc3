"""`taskring dlq|task|audit|stats` against a real node: tables for people, --json for scripts,
a bulk replay followed to its end, errors named on stderr with a failing exit code."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec, TaskState
from tests.integration.payments import NS, charge, dead_letter

pytestmark = pytest.mark.integration


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "cli-1", single=True).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


def taskring(node: NodeProcess, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taskring_cli.main", *args, "--admin", node.admin],
                          capture_output=True, text=True, timeout=120)


def as_json(node: NodeProcess, *args: str):
    out = taskring(node, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_an_operator_finds_fixes_and_replays_from_the_shell(node, payments):
    with Client(node.target) as client:
        ids = dead_letter(client, [charge(3000 + i) for i in range(5)] + [TaskSpec(NS, "ship", {"zone": 1})])
    groups = taskring(node, "dlq", "groups", "--namespace", NS)
    assert groups.returncode == 0, groups.stderr
    assert "card declined for order <n>" in groups.stdout and "6 in all" in groups.stdout
    top = as_json(node, "dlq", "groups", "--namespace", NS)["groups"][0]
    assert (top["count"], top["task_type"], top["error_class"]) == (5, "charge", "ValueError")
    listed = as_json(node, "dlq", "list", "--error-group", top["error_group"], "--limit", "3")
    assert len(listed["items"]) == 3 and listed["next"]
    shown = taskring(node, "dlq", "show", ids[0])
    assert "#1 failed" in shown.stdout and "Traceback" in shown.stdout

    # edit: the diff, and nothing replayed without --yes (no terminal to ask)
    edit = taskring(node, "dlq", "edit", ids[0], "--reason", "new card", "--payload",
                    '{"order": 3000, "card": "good"}')
    assert edit.returncode == 0 and '+  "card": "good",' in edit.stdout and "not replayed" in edit.stdout
    assert as_json(node, "task", "show", ids[0])["status"] == "dead_lettered"
    edit = taskring(node, "dlq", "edit", ids[0], "--reason", "new card", "--payload",
                    '{"order": 3000, "card": "good"}', "--yes")
    assert edit.returncode == 0 and "edited and replayed" in edit.stdout, edit.stderr
    wait_until(lambda: as_json(node, "task", "show", ids[0])["status"] == "succeeded", 30, "the edit to succeed")
    shown = taskring(node, "task", "show", ids[0])
    assert "payload edited and replayed by anonymous" in shown.stdout and "dlq.edit" in shown.stdout

    # errors: named on stderr, exit 1, nothing done
    bad = taskring(node, "dlq", "replay", ids[0], "--reason", "again")
    assert bad.returncode == 1 and "HTTP 409" in bad.stderr and "not a dead letter" in bad.stderr
    bad = taskring(node, "dlq", "edit", ids[1], "--reason", "x", "--payload", "[]", "--yes")
    assert bad.returncode == 1 and "edit.payload_json" in bad.stderr

    # bulk replay of the rest, followed to its end, with progress on stderr
    payments.fixed.set()
    bulk = taskring(node, "dlq", "bulk-replay", "--namespace", NS, "--task-type", "charge", "--rate", "2",
                    "--reason", "processor is back")
    assert bulk.returncode == 0, bulk.stderr
    assert "done" in bulk.stdout and "4 replayed" in bulk.stdout
    assert "[##############################] 4/4 (100%)" in bulk.stderr
    with Client(node.target) as client:
        wait_until(lambda: all(client.get(i).state == TaskState.SUCCEEDED for i in ids[:5]), 30, "all charges")
    jobs = as_json(node, "dlq", "bulk-status")
    assert jobs[0]["state"] == "done" and jobs[0]["created_by"] == "anonymous"

    delete = taskring(node, "dlq", "delete", ids[5], "--reason", "zone closed")
    assert delete.returncode == 0, delete.stderr
    audit = taskring(node, "audit", "--namespace", NS)
    assert audit.returncode == 0
    actions = [rec["action"] for rec in as_json(node, "audit", "--namespace", NS)]
    assert actions[0] == "dlq.delete" and "bulk_replay.start" in actions and "dlq.edit" in actions
    assert "zone closed" in audit.stdout

    search = as_json(node, "task", "search", "--namespace", NS, "--task-type", "charge", "--status", "succeeded")
    assert sorted(t["task_id"] for t in search["items"]) == sorted(ids[:5])

    def figures():
        out = taskring(node, "stats", "--namespace", NS)
        return out.stdout if out.returncode == 0 and "charge" in out.stdout else None
    assert "ship" in wait_until(figures, 30, "the figures to be written")
