"""Cross-language: one real dispatcher node, executors in Python, Node and Go, a Go
client submitting and the Java CLI inspecting and cancelling, all on the real stack.

- Python SDK `Executor` runs `py_ok`;
- `node dist/cli.js executor --behavior ok` runs `node_ok`, a second one with
  `--behavior reject-once` runs `node_reject` (one behaviour per CLI process);
- `taskring-go executor --behavior panic-once` runs `go_panic`;
- `taskring-go submit` submits one task of each type, plus a `py_ok` due in 10 minutes;
- the Java CLI's `get` reads state and history, its `cancel` cancels the delayed task.

Each executor serves a namespace of its own. The dispatcher picks an executor by
namespace only (`ExecutorPool.reserve` ignores the znode's `task_types`), and an
executor without a handler answers NO_HANDLER, which spends an attempt; executors of
different task types in one namespace would make the attempt counts checked here a
matter of luck.
"""
from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, TaskState
from tests.integration.polyglot import ServiceProcess, Tools, build_tools, run_cli, tail

pytestmark = pytest.mark.integration

NODE_ID = "x1"
NS_PY = "polyglot-py"
NS_NODE = "polyglot-node"
NS_NODE_REJECT = "polyglot-node-reject"
NS_GO = "polyglot-go"
FAR_DELAY_MS = 600_000
TERMINAL = {"succeeded", "dead_lettered", "cancelled"}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("polyglot-build"))


def _registered(zk: KazooClient, namespace: str) -> list[str]:
    path = f"/executors/{namespace}"
    return zk.get_children(path) if zk.exists(path) else []


def test_go_submits_python_node_go_execute_java_reads_and_cancels(taskring_env, tools: Tools):
    logs: Path = taskring_env.logs
    cli_log = logs / "cli.log"
    zk_hosts = taskring_env.zk_hosts
    node = NodeProcess(taskring_env, NODE_ID, single=True, TASKRING_ROUTE_THRESHOLD_MS="3000")

    py_runs: list[tuple[str, int]] = []
    py_lock = threading.Lock()

    def py_ok(ctx) -> None:
        with py_lock:
            py_runs.append((ctx.task_id, ctx.attempt))

    py_executor = Executor(NS_PY, zk_hosts=zk_hosts)
    py_executor.add_handler("py_ok", py_ok)
    node_ok = ServiceProcess("node-ok", tools.node_executor(zk_hosts, NS_NODE, "node_ok", "ok"), logs)
    node_reject = ServiceProcess("node-reject-once",
                                 tools.node_executor(zk_hosts, NS_NODE_REJECT, "node_reject", "reject-once"), logs)
    go_panic = ServiceProcess("go-panic-once", tools.go_executor(zk_hosts, NS_GO, "go_panic", "panic-once"), logs)
    services = [node_ok, node_reject, go_panic]
    executor_of = {"node_ok": node_ok, "node_reject": node_reject, "go_panic": go_panic}

    def diagnostics(*extra: ServiceProcess) -> str:
        parts = [f"--- dispatcher {node.log_path}:\n{node.log_tail(25)}"]
        parts += [s.logs(20) for s in extra]
        parts.append(f"--- {cli_log}:\n{tail(cli_log, 20)}")
        return "\n".join(parts)

    zk = KazooClient(hosts=zk_hosts)
    py_started = False
    started: list[ServiceProcess] = []
    client = None
    try:
        node.start()
        py_executor.start()
        py_started = True
        for s in services:
            started.append(s.start())
        zk.start(timeout=15)

        # Given every executor registered and the node ready
        def all_registered():
            for s in services:
                if not s.alive():
                    raise AssertionError(f"executor process {s.name} exited early\n{s.logs()}")
            return all(_registered(zk, ns) for ns in (NS_PY, NS_NODE, NS_NODE_REJECT, NS_GO))
        wait_until(all_registered, 60, "the Python, Node and Go executors to register in ZooKeeper", 0.1)
        node.wait_ready(60)

        # When a Go client submits one task per executor and one due in 10 minutes
        def go_submit(namespace: str, task_type: str, *extra: str) -> str:
            result = run_cli([str(tools.go_cli), "submit", "--nodes", node.target, "--namespace", namespace,
                              "--type", task_type, "--payload", f'{{"from":"go","type":"{task_type}"}}', *extra],
                             cli_log, timeout_s=30)
            task_id = result.line()
            assert re.fullmatch(r"[0-9A-Za-z-]{8,}", task_id), f"odd task id {task_id!r}; {result.describe()}"
            return task_id

        retry = ("--max-retries", "2", "--retry-schedule-ms", "200")
        ids = {
            "py_ok": go_submit(NS_PY, "py_ok"),
            "node_ok": go_submit(NS_NODE, "node_ok"),
            "go_panic": go_submit(NS_GO, "go_panic", *retry),
            "node_reject": go_submit(NS_NODE_REJECT, "node_reject", *retry),
        }
        delayed = go_submit(NS_PY, "py_ok", "--delay-ms", str(FAR_DELAY_MS))
        assert len(set(ids.values()) | {delayed}) == 5, ids

        # Then all four run to success
        client = Client(node.target)
        states: dict[str, str] = {}

        def all_succeeded():
            for kind, tid in ids.items():
                if states.get(kind) not in TERMINAL:
                    states[kind] = client.get(tid).state.value
            finished = [k for k, st in states.items() if st in TERMINAL and st != "succeeded"]
            if finished:
                raise AssertionError(f"finished without success: { {k: states[k] for k in finished} }\n"
                                     + diagnostics(*(executor_of[k] for k in finished if k in executor_of)))
            return all(st == "succeeded" for st in states.values())
        try:
            wait_until(all_succeeded, 90, "py_ok, node_ok, go_panic and node_reject to succeed", 0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; states {states}\n{diagnostics(*services)}") from None

        # And the Java CLI reads each one's state and history, all recorded by the one node
        def java_get(task_id: str, *extra: ServiceProcess) -> dict:
            result = run_cli(tools.java("get", "--nodes", node.target, "--task-id", task_id), cli_log, timeout_s=60)
            assert result.returncode == 0, f"java get failed: {result.describe()}\n{diagnostics(*extra)}"
            info = result.json()
            assert info["task_id"] == task_id, info
            return info

        def check_history(kind: str, info: dict, want_attempts: int, failure_text: str | None) -> None:
            where = executor_of.get(kind)
            why = f"{kind} {info}\n" + diagnostics(*([where] if where else []))
            history = info["history"]
            assert info["state"] == "succeeded", why
            assert info["attempts"] == want_attempts, why
            assert history and history[0]["state"] == "accepted", why
            assert history[-1]["state"] == "succeeded" and history[-1]["attempt"] == want_attempts, why
            assert [e["attempt"] for e in history if e["state"] == "dispatched"] == list(
                range(1, want_attempts + 1)), why
            assert {e["node"] for e in history} == {NODE_ID}, f"events from nodes other than {NODE_ID}: {why}"
            times = [e["at_epoch_ms"] for e in history]
            assert times == sorted(times), f"history not oldest first: {why}"
            waits = [e for e in history if e["state"] == "retry_wait"]
            if failure_text is None:
                assert not waits, why
                return
            assert [e["attempt"] for e in waits] == [1], why
            detail = waits[0]["detail"]
            assert detail.startswith("retryable_failure: "), why
            assert failure_text in detail, f"retry_wait detail {detail!r} lacks {failure_text!r}: {why}"

        infos = {kind: java_get(tid) for kind, tid in ids.items()}
        check_history("py_ok", infos["py_ok"], 1, None)
        check_history("node_ok", infos["node_ok"], 1, None)
        check_history("go_panic", infos["go_panic"], 2, f"panic: panic-once: attempt 1 of {ids['go_panic']}")
        check_history("node_reject", infos["node_reject"], 2, "rejected on attempt 1 (reject-once)")

        # And each ran where it should, as often as it should
        with py_lock:
            assert py_runs == [(ids["py_ok"], 1)], f"Python executor ran {py_runs}\n{diagnostics()}"
        for kind, attempts in (("node_ok", 1), ("go_panic", 2), ("node_reject", 2)):
            proc = executor_of[kind]
            # "<task_id> <attempt> <outcome>": Node prints SUCCEEDED, Go prints succeeded.
            lines = [ln.split() for ln in proc.stdout_lines() if ln.startswith(ids[kind] + " ")]
            assert [int(ln[1]) for ln in lines] == list(range(1, attempts + 1)), \
                f"{kind}: executor printed {lines}\n{diagnostics(proc)}"
            assert lines[-1][2].upper().endswith("SUCCEEDED"), f"{kind}: {lines}\n{diagnostics(proc)}"
            if attempts > 1:
                assert lines[0][2].upper().endswith("RETRYABLE_FAILURE"), f"{kind}: {lines}\n{diagnostics(proc)}"
        for other in services:
            if other is not executor_of["go_panic"]:
                assert not any(ln.startswith(ids["go_panic"]) for ln in other.stdout_lines()), other.logs()

        # When the Java CLI cancels the delayed task
        before = java_get(delayed)
        assert before["state"] not in TERMINAL and before["attempts"] == 0, f"{before}\n{diagnostics()}"
        cancelled = run_cli(tools.java("cancel", "--nodes", node.target, "--task-id", delayed), cli_log, timeout_s=60)
        assert cancelled.returncode == 0, f"java cancel failed: {cancelled.describe()}\n{diagnostics()}"
        assert cancelled.line() == "cancelled", cancelled.describe()

        # Then it is cancelled, by the same node, and never ran
        after = java_get(delayed)
        why = f"{after}\n{diagnostics()}"
        assert after["state"] == "cancelled", why
        assert after["attempts"] == 0, why
        assert after["history"][0]["state"] == "accepted" and after["history"][-1]["state"] == "cancelled", why
        assert {e["node"] for e in after["history"]} == {NODE_ID}, why
        assert client.get(delayed).state == TaskState.CANCELLED
        with py_lock:
            assert delayed not in {tid for tid, _ in py_runs}, py_runs
    finally:
        if client is not None:
            client.close()
        for s in reversed(started):
            s.stop(timeout_s=15)
        if py_started:
            py_executor.stop(grace_s=2)
        try:
            zk.stop()
            zk.close()
        except Exception:
            pass
        try:
            node.terminate(timeout_s=30)
        except subprocess.TimeoutExpired:
            print(f"dispatcher {NODE_ID} (pid {node.pid}) ignored SIGTERM for 30s; killing it")
            node.kill()
