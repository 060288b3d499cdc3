"""The policies file changed on a running node: a concurrency limit raised lets what waited at it
start, without a restart; a file that does not parse is refused and the limits in use stay; each
reload is in the audit trail."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, TaskSpec, TaskState

NS, LIMITED = "reload", "export"


class Starts:
    """An executor whose handler notes each start at once, then blocks for payload["ms"]."""

    def __init__(self, zk_hosts: str):
        self.executor = Executor(NS, zk_hosts=zk_hosts, max_in_flight=8)
        self.executor.add_handler(LIMITED, self._run)
        self._lock = threading.Lock()
        self.starts: list[float] = []

    def _run(self, ctx) -> None:
        with self._lock:
            self.starts.append(time.monotonic())
        time.sleep(ctx.payload["ms"] / 1000)

    def started(self) -> int:
        with self._lock:
            return len(self.starts)

pytestmark = pytest.mark.integration


def write(path, policies: dict | str) -> None:
    path.write_text(policies if isinstance(policies, str) else json.dumps(policies))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_a_limit_raised_in_the_file_applies_to_the_running_node_and_a_bad_file_changes_nothing(
        taskring_env, tmp_path):
    policies = tmp_path / "policies.json"
    write(policies, {f"{NS}/{LIMITED}": {"concurrency": {"per_type": 1}}})
    node = NodeProcess(taskring_env, "reload-1", single=True, TASKRING_RETRY_POLICIES=str(policies),
                       TASKRING_POLICIES_RELOAD_MS="200").start()
    executor = Starts(taskring_env.zk_hosts)
    executor.executor.start()
    try:
        node.wait_ready()
        with Client(node.target) as client:
            ids = [f"held-{i}" for i in range(3)]
            client.submit_batch([TaskSpec(NS, LIMITED, {"ms": 4_000}, task_id=t, timeout=10) for t in ids])
            wait_until(lambda: executor.started() == 1, 30, "one to start under the limit of 1")
            wait_until(lambda: sum(client.get(t).waiting == "concurrency limit per_type (at most 1 running)"
                                   for t in ids) == 2, 30, "the other two to wait at the limit")
            # A file that does not parse: refused, counted, the limit of 1 stays.
            write(policies, {f"{NS}/{LIMITED}": {"concurrency": {"per_type": 0}}})
            wait_until(lambda: node.metric('taskring_policies_reloads_total{result="failed"}') == 1, 30,
                       "the bad file to be refused")
            assert executor.started() == 1
            # The limit raised to 3: the two waiting start now, while the first still runs.
            write(policies, {f"{NS}/{LIMITED}": {"concurrency": {"per_type": 3}}})
            wait_until(lambda: executor.started() == 3, 10, "the two waiting to start once the limit is 3")
            wait_until(lambda: all(client.get(t).state == TaskState.SUCCEEDED for t in ids), 30, "all to succeed")
        assert node.metric('taskring_policies_reloads_total{result="loaded"}') == 1
        audit = node.get("/api/audit?action=policies.reload")
        assert [r["after"] for r in audit["records"]] == [{"changed": [f"{NS}/{LIMITED}"]}], audit
    finally:
        executor.executor.stop()
        node.terminate()
