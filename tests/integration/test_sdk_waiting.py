"""Why a task waits, in every SDK's CLI: a task of a type whose concurrency limit of 1 is taken
by a running task is held by its owner, and `get` in the Go, Java and Node CLIs (and
`taskring get`) prints the reason GetTask gives, the same words in all four."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, TaskSpec
from tests.integration.polyglot import Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

NS, TYPE = "waiting-cli", "export"
REASON = "concurrency limit per_type (at most 1 running)"


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-waiting-build"))


def test_every_cli_shows_why_a_task_waits(taskring_env, tools, tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({f"{NS}/{TYPE}": {"concurrency": {"per_type": 1}}}))
    node = NodeProcess(taskring_env, "waiting-cli-1", single=True, TASKRING_RETRY_POLICIES=str(policies)).start()
    release = threading.Event()
    started = threading.Event()

    def hold(ctx) -> None:
        started.set()
        release.wait(60)

    executor = Executor(NS, zk_hosts=taskring_env.zk_hosts, max_in_flight=4)
    executor.add_handler(TYPE, hold)
    executor.start()
    log = taskring_env.logs / "waiting-cli.log"
    try:
        node.wait_ready()
        with Client(node.target) as client:
            client.submit_batch([TaskSpec(NS, TYPE, {"n": 1}, task_id="waiting-first", timeout=90),
                                 TaskSpec(NS, TYPE, {"n": 2}, task_id="waiting-second", timeout=90)])
            assert started.wait(30), "the first task to start"
            wait_until(lambda: REASON in {client.get(t).waiting for t in ("waiting-first", "waiting-second")}, 30,
                       "one task to wait at the limit")
            held = next(t for t in ("waiting-first", "waiting-second") if client.get(t).waiting == REASON)
        commands = {
            "go": [str(tools.go_cli), "get", "--nodes", node.target, "--task-id", held],
            "java": tools.java("get", "--nodes", node.target, "--task-id", held),
            "node": ["node", str(tools.node_cli), "get", "--nodes", node.target, "--task-id", held],
        }
        for language, command in commands.items():
            shown = run_cli(command, log).json()
            assert shown["waiting"] == REASON, (language, shown)
        python = subprocess.run([sys.executable, "-m", "taskring_cli.main", "get", held], capture_output=True,
                                text=True, timeout=60, env={"TASKRING_TARGET": node.target, "PATH": "/usr/bin:/bin"})
        assert python.returncode == 0 and json.loads(python.stdout)["waiting"] == REASON, python.stderr
    finally:
        release.set()
        executor.stop()
        node.terminate()
