"""The Go, Java and Node SDKs' graphs, through their CLIs, against a real `taskring node
--single`: a graph submitted from each language runs in order on that language's executor,
each handler's result reaches the tasks that depend on it, a failure under `ignore` lets
what follows run, GetGraph reads states and results, a retried submit is a duplicate, and a
bad graph is refused naming the field, as the Python SDK does (tests/integration/test_graphs.py).

Each CLI has the same commands (see each SDK's README):

    <cli> graph submit --nodes HOST:PORT --file GRAPH.json
    <cli> graph get --nodes HOST:PORT --namespace NS --graph-id ID [--with-results]
    <cli> executor --zk ZK --namespace NS --types T1,T2 --behavior graph-results

GRAPH.json is {"namespace", "graph_id", "tasks": [{"key", "task_type", "payload", "after":
[{"key", "on_failure": "skip"|"ignore"}], "join": {"rule", "at_least"}}]}. `submit` prints one
JSON line {"graph_id", "duplicate", "tasks": {key: {"task_id", "state", "slot"}}}; `get` prints
{"graph_id", "namespace", "state", "counts", "nodes": {key: {"task_id", "state", "attempts",
"reason", "waiting", "result", "depends_on": [{"parent_key", "on_failure", "outcome"}]}}}; a
refusal exits non-zero with the server's status and message (which names the field) on stderr.
The `graph-results` handler returns {"type": <task type>, "saw": {key: {"outcome", "result"}}}
from its parents' results, fails non-retryably when the payload says {"fail": true}, and prints
one JSON line {"graph_run": <task type>, "task_id", "parents": <the same "saw">} per run.
"""
from __future__ import annotations

import json

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from tests.integration.polyglot import ServiceProcess, Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

LANGUAGES = ("go", "java", "node")
TYPES = "charge,ship,email,close"


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-graphs-build"))


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "graphs-sdk-1", single=True).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


def _graph(ns: str, graph_id: str) -> dict:
    return {"namespace": ns, "graph_id": graph_id, "tasks": [
        {"key": "charge", "task_type": "charge", "payload": {"order": 7}},
        {"key": "ship", "task_type": "ship", "after": [{"key": "charge"}]},
        {"key": "email", "task_type": "email", "payload": {"fail": True}, "after": [{"key": "charge"}]},
        {"key": "close", "task_type": "close", "after": [{"key": "ship"}, {"key": "email", "on_failure": "ignore"}],
         "join": {"rule": "all_succeeded"}},
    ]}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_graph_runs_in_order_and_results_reach_what_depends_on_them(taskring_env, node, tools, language, tmp_path):
    ns = f"{language}-shop"
    log = taskring_env.logs / f"graphs-{language}.log"
    executor = ServiceProcess(f"{language}-graph-executor", tools.cli(
        language, "executor", "--zk", taskring_env.zk_hosts, "--namespace", ns, "--types", TYPES,
        "--behavior", "graph-results"), taskring_env.logs)
    executor.start()
    try:
        spec = tmp_path / "graph.json"
        spec.write_text(json.dumps(_graph(ns, "order-7")))
        submitted = run_cli(tools.cli(language, "graph", "submit", "--nodes", node.target, "--file", str(spec)), log)
        out = submitted.json()
        assert out["graph_id"] == "order-7" and out["duplicate"] is False, submitted.describe()
        assert list(out["tasks"]) == ["charge", "ship", "email", "close"]
        assert {t["state"] for t in out["tasks"].values()} <= {"waiting", "queued", "dispatched", "running",
                                                               "succeeded"}

        def finished():
            got = run_cli(tools.cli(language, "graph", "get", "--nodes", node.target, "--namespace", ns,
                                    "--graph-id", "order-7", "--with-results"), log).json()
            return got if got["state"] == "finished" else None
        graph = wait_until(finished, 90, f"the {language} graph to finish")
        nodes = graph["nodes"]
        assert {k: n["state"] for k, n in nodes.items()} == {
            "charge": "succeeded", "ship": "succeeded", "email": "dead_lettered", "close": "succeeded"}
        assert graph["counts"] == {"succeeded": 3, "dead_lettered": 1}
        assert nodes["charge"]["result"] == {"type": "charge", "saw": {}}
        assert nodes["ship"]["result"] == {"type": "ship", "saw": {
            "charge": {"outcome": "succeeded", "result": {"type": "charge", "saw": {}}}}}
        assert nodes["close"]["result"] is None        # nothing depends on it: not kept
        assert {(e["parent_key"], e["on_failure"], e["outcome"]) for e in nodes["close"]["depends_on"]} == {
            ("ship", "skip", "succeeded"), ("email", "ignore", "ignored")}
        assert nodes["email"]["reason"], "a failed task says why"

        runs = [json.loads(line) for line in executor.stdout_lines() if line.startswith('{"graph_run"')]
        assert sorted(r["graph_run"] for r in runs) == ["charge", "close", "email", "ship"]
        close = next(r for r in runs if r["graph_run"] == "close")
        assert close["task_id"] == nodes["close"]["task_id"]
        assert close["parents"] == {
            "ship": {"outcome": "succeeded", "result": nodes["ship"]["result"]},
            "email": {"outcome": "ignored", "result": None}}

        again = run_cli(tools.cli(language, "graph", "submit", "--nodes", node.target, "--file", str(spec)), log)
        assert again.json()["duplicate"] is True

        cyclic = _graph(ns, "cyclic")
        cyclic["tasks"][0]["after"] = [{"key": "close"}]
        spec.write_text(json.dumps(cyclic))
        refused = run_cli(tools.cli(language, "graph", "submit", "--nodes", node.target, "--file", str(spec)), log)
        assert refused.returncode != 0 and "tasks[1].depends_on[0]" in refused.stderr, refused.describe()
        assert "closes the cycle" in refused.stderr
    finally:
        executor.stop()


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_cli_cancels_a_graph_and_what_had_not_started_ends_cancelled(taskring_env, node, tools, language,
                                                                         tmp_path):
    ns = f"{language}-cancel"
    log = taskring_env.logs / f"graphs-cancel-{language}.log"
    spec = tmp_path / "graph.json"
    graph = _graph(ns, "order-9")   # no executor of this namespace runs here: nothing starts
    spec.write_text(json.dumps({**graph, "tasks": graph["tasks"][:2]}))
    assert run_cli(tools.cli(language, "graph", "submit", "--nodes", node.target, "--file", str(spec)),
                   log).returncode == 0
    bad = run_cli(tools.cli(language, "graph", "cancel", "--nodes", node.target, "--namespace", ns,
                            "--graph-id", "order-9", "--mode", "now"), log)
    assert bad.returncode == 2 and "mode" in bad.stderr, bad.describe()
    done = run_cli(tools.cli(language, "graph", "cancel", "--nodes", node.target, "--namespace", ns,
                             "--graph-id", "order-9", "--mode", "immediate", "--reason", "order withdrawn"), log)
    assert done.json() == {"cancelled": 2, "running": []}, done.describe()
    got = run_cli(tools.cli(language, "graph", "get", "--nodes", node.target, "--namespace", ns,
                            "--graph-id", "order-9"), log).json()
    assert {k: n["state"] for k, n in got["nodes"].items()} == {"charge": "cancelled", "ship": "cancelled"}
    missing = run_cli(tools.cli(language, "graph", "cancel", "--nodes", node.target, "--namespace", ns,
                                "--graph-id", "no-such-graph"), log)
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr.upper().replace(" ", "_"), missing.describe()
