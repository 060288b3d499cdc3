"""Cross-language heartbeats: the Go, Node and Java SDKs' executors, as processes (their CLIs'
`executor --behavior heartbeat`), against one real dispatcher node whose policies give each
language's heartbeat type a 1.5 s heartbeat timeout.

For each language:
- a task that works 4.5 s (three heartbeat timeouts), heartbeating every 100 ms, succeeds at
  attempt 1: the SDK's heartbeats reach the node and keep the attempt alive;
- a task that would work a minute is cancelled with the Python Client once its handler is
  heartbeating: the next heartbeat's answer stops the handler, which prints
  `stopped <task_id> cancelled: ...`, the executor reports a STOPPED outcome, and the task
  stays cancelled.

Each language has a namespace of its own (the dispatcher picks an executor by namespace only,
see test_cross_language.py). The two tasks run one after the other, so that the node's count of
CONTINUE answers grows only with the running task's heartbeats: that is how the test knows the
second handler is running before it cancels.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskState
from tests.integration.polyglot import ServiceProcess, Tools, build_tools

pytestmark = pytest.mark.integration

HEARTBEAT_MS = 1_500
TASK_TYPE = "beats"
LANGUAGES = ("go", "node", "java")
CONTINUES = 'taskring_heartbeats_total{verdict="continue"}'
STOPPED_OUTCOMES = 'taskring_task_outcomes_total{kind="stopped"}'


def namespace(language: str) -> str:
    return f"xhb-{language}"


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("polyglot-build"))


@pytest.fixture
def node(taskring_env, tmp_path):
    """One node; its policies give every language's heartbeat type the 1.5 s heartbeat timeout."""
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({f"{namespace(lang)}/{TASK_TYPE}": {"heartbeat_timeout_ms": HEARTBEAT_MS}
                                    for lang in LANGUAGES}))
    n = NodeProcess(taskring_env, "xhb-1", single=True, TASKRING_RETRY_POLICIES=str(policies)).start()
    try:
        n.wait_ready(60)
        yield n
    finally:
        try:
            n.terminate(timeout_s=30)
        except subprocess.TimeoutExpired:
            print(f"dispatcher {n.node_id} (pid {n.pid}) ignored SIGTERM for 30s; killing it")
            n.kill()


def _executor(tools: Tools, language: str, zk_hosts: str, logs: Path) -> ServiceProcess:
    make = {"go": tools.go_executor, "node": tools.node_executor, "java": tools.java_executor}[language]
    return ServiceProcess(f"{language}-heartbeat", make(zk_hosts, namespace(language), TASK_TYPE, "heartbeat"), logs)


def _counter(node: NodeProcess, name: str) -> float:
    """A labelled counter of the node's, 0 until its first sample (a label is exported once used)."""
    try:
        return node.metric(name)
    except AssertionError:
        if not node.alive():
            raise
        return 0.0


@pytest.mark.parametrize("language", LANGUAGES)
def test_heartbeats_keep_a_long_task_alive_and_carry_a_cancel_to_the_handler(
        language: str, taskring_env, tools: Tools, node: NodeProcess):
    executor = _executor(tools, language, taskring_env.zk_hosts, taskring_env.logs)
    ns = namespace(language)

    def diagnostics() -> str:
        return f"--- dispatcher {node.log_path}:\n{node.log_tail(25)}\n{executor.logs(25)}"

    def printed(task_id: str) -> list[list[str]]:
        """The executor's stdout lines about task_id: `<id> <attempt> <kind>` and `stopped <id> <why>`."""
        return [ln.split(" ", 2) for ln in executor.stdout_lines()
                if ln.startswith(task_id + " ") or ln.startswith(f"stopped {task_id} ")]

    zk = KazooClient(hosts=taskring_env.zk_hosts)
    try:
        executor.start()
        zk.start(timeout=15)

        def registered() -> bool:
            if not executor.alive():
                raise AssertionError(f"the {language} executor exited early\n{diagnostics()}")
            path = f"/executors/{ns}"
            return bool(zk.exists(path) and zk.get_children(path))
        wait_until(registered, 60, f"the {language} executor to register in ZooKeeper", 0.1)

        with Client(node.target) as client:
            # (a) Three heartbeat timeouts of work, in one attempt.
            beats_before = _counter(node, CONTINUES)
            t0 = time.monotonic()
            long_id = client.submit(ns, TASK_TYPE, {"ms": 3 * HEARTBEAT_MS, "every_ms": 100}, timeout=60).task_id

            def finished() -> bool:
                state = client.get(long_id).state
                if state in (TaskState.FAILED, TaskState.CANCELLED):
                    raise AssertionError(f"the long task ended {state}\n{diagnostics()}")
                return state == TaskState.SUCCEEDED
            wait_until(finished, 30, f"the {language} long task to succeed", 0.1)
            took = time.monotonic() - t0
            info = client.get(long_id)
            why = f"{language}: {info.history}\n{diagnostics()}"
            assert info.attempts == 1, why
            assert [e.attempt for e in info.history if e.state == TaskState.DISPATCHED] == [1], why
            assert not [e for e in info.history if e.state == TaskState.RETRY_WAIT], why
            assert took >= 3 * HEARTBEAT_MS / 1000, f"succeeded after {took:.1f} s, before its work was done; {why}"
            # Its heartbeats were what kept it alive: about one per 100 ms, each answered CONTINUE.
            beats = _counter(node, CONTINUES) - beats_before
            assert beats >= 20, f"only {beats:.0f} heartbeats answered CONTINUE for 4.5 s of work; {why}"
            wait_until(lambda: printed(long_id), 10, f"the {language} executor to print the outcome")
            lines = printed(long_id)
            assert [(ln[1], ln[2].lower()) for ln in lines] == [("1", "succeeded")], f"{lines}\n{diagnostics()}"

            # (b) A minute of work, cancelled once its handler heartbeats.
            beats_before = _counter(node, CONTINUES)
            stopped_before = _counter(node, STOPPED_OUTCOMES)
            cancel_id = client.submit(ns, TASK_TYPE, {"ms": 60_000, "every_ms": 100}, timeout=60).task_id
            # The SDK's own first heartbeat and two of the handler's.
            wait_until(lambda: _counter(node, CONTINUES) >= beats_before + 3, 30,
                       f"the {language} handler of the task to cancel to heartbeat", 0.05)
            assert client.get(cancel_id).state in (TaskState.DISPATCHED, TaskState.RUNNING), diagnostics()
            cancelled_at = time.monotonic()
            assert client.cancel(cancel_id) == TaskState.CANCELLED

            def said_stopped() -> list[str] | None:
                return next((ln for ln in printed(cancel_id) if ln[0] == "stopped"), None)
            stop_line = wait_until(said_stopped, 5, f"the {language} handler to print that it was stopped", 0.05)
            stopped_after = time.monotonic() - cancelled_at
            assert stop_line[2].startswith("cancelled"), f"{stop_line}\n{diagnostics()}"
            # Heartbeats every 100 ms: the answer to the first one after the cancel stops it.
            assert stopped_after < 2.0, f"stopped {stopped_after:.1f} s after the cancel\n{diagnostics()}"
            wait_until(lambda: len(printed(cancel_id)) >= 2, 10, f"the {language} executor to print the outcome")
            # The two lines in either order: an SDK may send the outcome as the stop comes (Go
            # does) or once the handler has ended.
            lines = printed(cancel_id)
            outcomes = [(ln[1], ln[2].lower()) for ln in lines if ln[0] == cancel_id]
            assert outcomes == [("1", "stopped")] and len(lines) == 2, f"{lines}\n{diagnostics()}"
            wait_until(lambda: _counter(node, STOPPED_OUTCOMES) > stopped_before, 10,
                       "the node to receive the STOPPED outcome")
            info = client.get(cancel_id)
            why = f"{language}: {info.history}\n{diagnostics()}"
            assert info.state == TaskState.CANCELLED, why
            assert info.attempts == 1, why
            # The STOPPED outcome changed nothing: the history ends at the cancel.
            assert info.history[-1].state == TaskState.CANCELLED, why
    finally:
        executor.stop(timeout_s=15)
        try:
            zk.stop()
            zk.close()
        except Exception:
            pass
