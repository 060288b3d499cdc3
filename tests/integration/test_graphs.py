"""Graphs on the real stack (one node, Kafka, MariaDB): the order example runs in its order,
a failure under `ignore` lets its dependents run, a failure under the default skips them and
the skip travels down the graph, the join rules decide, no dependent starts before its parents
ended, every history follows the lifecycle, a retried SubmitGraph is a duplicate and another
graph under the same id is refused, and bad graphs are refused naming the field with nothing
written."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import grpc
import pytest

from dispatcher.store import records as r
from harness.executors import RecordingExecutor
from harness.processes import NodeProcess
from harness.wait import wait_until
from harness.world import private_world
from taskring import Client, Executor, RetryPolicy, TaskSpec, TaskState
from taskring.errors import AlreadyExists, InvalidArgument, NotFound
from taskring.graph import Graph, Join
from taskring.wire import pb, pb_grpc
from tests.integration.conftest import PARTITIONS

pytestmark = pytest.mark.integration

NS = "tests"


def _finished(client: Client, graph_id: str):
    info = client.get_graph(NS, graph_id)
    return info if info.state == "finished" else None


def _ended_at(client: Client, task_id: str):
    """When a task ended, by the store's clock (its last event)."""
    return client.get(task_id).history[-1].at


def _queued_at(client: Client, task_id: str):
    return next(e.at for e in client.get(task_id).history if e.state == TaskState.QUEUED)


def _check_histories(client: Client, info) -> None:
    for node in info.nodes.values():
        states = [e.state.value for e in client.get(node.task_id).history]
        assert r.history_errors(states) == [], (node.key, states)
        assert states[:2] == ["accepted", "waiting"], (node.key, states)


# One world, node and executor for the module: each test has graphs of its own ids, and
# checks only its own tasks' runs (a node per test cost more than the tests themselves).
@pytest.fixture(scope="module")
def world(stack, tmp_path_factory):
    with private_world(stack, "graphs", tmp_path_factory.mktemp("graphs-logs"), PARTITIONS) as w:
        yield w


@pytest.fixture(scope="module")
def node(world):
    node = NodeProcess(world, "graphs-1", single=True).start()
    try:
        yield node.wait_ready()
    finally:
        node.terminate()


@pytest.fixture(scope="module")
def recording_executor(world):
    executor = RecordingExecutor(world.zk_hosts).start()
    try:
        yield executor
    finally:
        executor.stop()


def _ran(executor: RecordingExecutor, task_ids) -> list[str]:
    """The runs of these tasks (the module's executor runs every test's)."""
    wanted = set(task_ids)
    return [e.task_id for e in executor.executions if e.task_id in wanted]


def test_the_order_example_runs_in_order_and_an_ignored_failure_lets_what_follows_run(node, recording_executor):
    g = Graph("order-1042")
    charge = g.task("charge", TaskSpec(NS, "ok", {"order": 1042}))
    ship = g.task("ship", TaskSpec(NS, "ok-3"), after=[charge])
    email = g.task("email", TaskSpec(NS, "fatal"), after=[charge.on_failure("ignore")])
    g.task("close", TaskSpec(NS, "ok-7"), after=[ship, email.on_failure("ignore")])
    with Client(node.target) as client:
        submitted = client.submit_graph(g)
        assert not submitted.duplicate and list(submitted.tasks) == ["charge", "ship", "email", "close"]
        info = wait_until(lambda: _finished(client, "order-1042"), 60, "the graph to finish")
        states = {k: n.state for k, n in info.nodes.items()}
        assert states == {"charge": TaskState.SUCCEEDED, "ship": TaskState.SUCCEEDED,
                          "email": TaskState.DEAD_LETTERED, "close": TaskState.SUCCEEDED}
        assert {(e.parent_key, e.outcome) for e in info.nodes["close"].depends_on} == {
            ("ship", "succeeded"), ("email", "ignored")}
        ids = {k: n.task_id for k, n in info.nodes.items()}
        # No dependent was queued before the tasks it depends on ended (one clock: the store's).
        for child, parents in (("ship", ["charge"]), ("email", ["charge"]), ("close", ["ship", "email"])):
            for parent in parents:
                assert _queued_at(client, ids[child]) >= _ended_at(client, ids[parent]), (child, parent)
        _check_histories(client, info)
        # Each ran once (the failing one once: non-retryable).
        runs = _ran(recording_executor, ids.values())
        assert sorted(runs) == sorted(ids.values())

        again = client.submit_graph(g)
        assert again.duplicate and again.tasks["close"].state == TaskState.SUCCEEDED
        other = Graph("order-1042")
        other.task("charge", TaskSpec(NS, "ok", {"order": 9}))
        with pytest.raises(AlreadyExists) as refused:
            client.submit_graph(other)
        assert "graph_id" in str(refused.value)


def test_a_failure_skips_what_depends_on_it_and_the_skip_travels_down(node, recording_executor):
    g = Graph("order-2")
    charge = g.task("charge", TaskSpec(NS, "fatal"))
    ship = g.task("ship", TaskSpec(NS, "ok"), after=[charge])
    email = g.task("email", TaskSpec(NS, "ok-1"), after=[charge])
    close = g.task("close", TaskSpec(NS, "ok-2"), after=[ship, email])
    g.task("audit", TaskSpec(NS, "ok-4"), after=[close], join=Join.all_done())
    with Client(node.target) as client:
        client.submit_graph(g)
        info = wait_until(lambda: _finished(client, "order-2"), 60, "the graph to finish")
        states = {k: n.state for k, n in info.nodes.items()}
        assert states == {"charge": TaskState.DEAD_LETTERED, "ship": TaskState.SKIPPED, "email": TaskState.SKIPPED,
                          "close": TaskState.SKIPPED, "audit": TaskState.SUCCEEDED}
        assert info.nodes["ship"].reason == "join all_succeeded: 1 parent(s) failed, 0 skipped"
        assert info.nodes["close"].reason == "join all_succeeded: 0 parent(s) failed, 2 skipped"
        assert info.counts == {"dead_lettered": 1, "skipped": 3, "succeeded": 1}
        _check_histories(client, info)
        ran = set(_ran(recording_executor, [n.task_id for n in info.nodes.values()]))
        assert ran == {info.nodes["charge"].task_id, info.nodes["audit"].task_id}


def test_join_rules_decide_on_the_real_stack(node, recording_executor):
    g = Graph("joins")
    good = g.task("good", TaskSpec(NS, "ok"))
    bad1 = g.task("bad1", TaskSpec(NS, "fatal"))
    bad2 = g.task("bad2", TaskSpec(NS, "fatal"))
    g.task("any", TaskSpec(NS, "ok-5"), after=[good, bad1], join=Join.any_succeeded())
    g.task("two", TaskSpec(NS, "ok-6"), after=[good, bad1, bad2], join=Join.at_least_succeeded(2))
    g.task("none_failed", TaskSpec(NS, "ok-8"), after=[good, bad1], join=Join.none_failed())
    g.task("all_done", TaskSpec(NS, "ok-9"), after=[good, bad1, bad2], join=Join.all_done())
    with Client(node.target) as client:
        client.submit_graph(g)
        info = wait_until(lambda: _finished(client, "joins"), 60, "the graph to finish")
        states = {k: n.state for k, n in info.nodes.items()}
        assert states == {"good": TaskState.SUCCEEDED, "bad1": TaskState.DEAD_LETTERED,
                          "bad2": TaskState.DEAD_LETTERED, "any": TaskState.SUCCEEDED, "two": TaskState.SKIPPED,
                          "none_failed": TaskState.SKIPPED, "all_done": TaskState.SUCCEEDED}
        _check_histories(client, info)


def test_a_waiting_task_says_what_it_waits_for(node, recording_executor):
    g = Graph("slow-first")
    slow = g.task("slow", TaskSpec(NS, "slow", {"ms": 3000}, timeout=30))
    g.task("next", TaskSpec(NS, "ok"), after=[slow])
    with Client(node.target) as client:
        client.submit_graph(g)
        wait_until(lambda: client.get_graph(NS, "slow-first").nodes["slow"].state == TaskState.DISPATCHED, 30,
                   "the first to be handed to its executor")
        waiting = client.get_graph(NS, "slow-first").nodes["next"]
        assert waiting.state == TaskState.WAITING
        assert waiting.waiting == "for 1 of 1 parent(s): slow (dispatched)"
        task = client.get(waiting.task_id)
        assert (task.state, task.waiting) == (TaskState.WAITING, "for 1 of 1 parent(s): slow (dispatched)")
        wait_until(lambda: _finished(client, "slow-first"), 60, "the graph to finish")


@pytest.mark.parametrize("build, field, problem", [
    (lambda g: [g.tasks.add(key="a", task=_task(), depends_on=[{"key": "a"}])],
     "tasks[0].depends_on[0]", "a task may not depend on itself"),
    (lambda g: [g.tasks.add(key="a", task=_task(), depends_on=[{"key": "nope"}])],
     "tasks[0].depends_on[0]", "names 'nope', which is no task of this graph"),
    (lambda g: [g.tasks.add(key="a", task=_task(), depends_on=[{"key": "c"}]),
                g.tasks.add(key="b", task=_task(), depends_on=[{"key": "a"}]),
                g.tasks.add(key="c", task=_task(), depends_on=[{"key": "b"}])],
     "tasks[1].depends_on[0]", "closes the cycle b -> c -> a -> b"),
    (lambda g: [g.tasks.add(key="a", task=_task()), g.tasks.add(key="a", task=_task())],
     "tasks[1].key", "repeats tasks[0].key 'a'"),
    (lambda g: [g.tasks.add(key="a", task=_task(unique_key="k"))],
     "tasks[0].task.unique_key", "not allowed in a graph"),
    (lambda g: [g.tasks.add(key="a", task=_task(payload_json="[1]"))],
     "tasks[0].task.payload_json", ""),
])
def test_a_bad_graph_is_refused_naming_the_field_and_nothing_is_written(node, build, field, problem):
    request = pb.SubmitGraphRequest(namespace=NS, graph_id="bad")
    build(request)
    with grpc.insecure_channel(node.target) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.GraphServiceStub(channel).SubmitGraph(request, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (refused.value.details() or "").startswith(f"{field}: {problem}"), refused.value.details()
    with Client(node.target) as client, pytest.raises(NotFound):
        client.get_graph(NS, "bad")


def _task(**fields):
    return pb.Task(namespace=NS, task_type="ok", **fields)


def test_the_sdk_refuses_what_it_can_see_before_sending(node):
    g = Graph("sdk-checks")
    a = g.task("a", TaskSpec(NS, "ok"))
    with pytest.raises(ValueError, match=r"tasks\[1\].key: repeats 'a'"):
        g.task("a", TaskSpec(NS, "ok"))
    with pytest.raises(ValueError, match=r"depends_on\[0\]: 'a' is a task of another graph"):
        Graph("other").task("b", TaskSpec(NS, "ok"), after=[a])
    with pytest.raises(ValueError, match="at_least: must be a whole number >= 1"):
        Join.at_least_succeeded(0)
    with Client(node.target) as client, pytest.raises(InvalidArgument) as refused:
        bad = Graph("sdk-checks")
        bad.task("a", TaskSpec(NS, "ok", task_id="mine"))
        client.submit_graph(bad)
    assert refused.value.field == "tasks[0].task.task_id"


class Shop:
    """An executor of the order example whose handlers return results and read their parents'."""

    def __init__(self, zk_hosts: str):
        self.seen: dict[str, dict] = {}
        self.executor = Executor("shop", zk_hosts=zk_hosts)
        self.executor.add_handler("charge_card", lambda ctx: {"charge_id": f"ch_{ctx.payload['order']}"})
        self.executor.add_handler("ship_order", self._ship)
        self.executor.add_handler("send_email", self._email)
        self.executor.add_handler("close_order", self._close)
        self.executor.add_handler("not_json", lambda ctx: {"when": {1, 2}})

    def _ship(self, ctx):
        self.seen["ship"] = {k: (p.outcome, p.result) for k, p in ctx.parent_results.items()}
        return {"parcel": "pk_7", "for": ctx.parent_results["charge"].result["charge_id"]}

    async def _email(self, ctx):   # an async handler's result travels too
        await asyncio.sleep(0)
        self.seen["email"] = {k: (p.outcome, p.result) for k, p in ctx.parent_results.items()}
        return "sent"

    def _close(self, ctx):
        self.seen["close"] = {k: (p.outcome, p.result, p.error) for k, p in ctx.parent_results.items()}
        self.seen["close_keeps"] = {"keeps": ctx.keeps_result}


def test_results_are_handed_to_the_tasks_that_depend_on_them(node, world):
    shop = Shop(world.zk_hosts)
    shop.executor.start()
    try:
        g = Graph("order-81")
        charge = g.task("charge", TaskSpec("shop", "charge_card", {"order": 81}))
        ship = g.task("ship", TaskSpec("shop", "ship_order"), after=[charge])
        email = g.task("email", TaskSpec("shop", "send_email"), after=[charge])
        broken = g.task("broken", TaskSpec("shop", "not_json"), after=[charge])
        g.task("close", TaskSpec("shop", "close_order"), after=[ship, email, broken.on_failure("ignore")])
        with Client(node.target) as client:
            client.submit_graph(g)
            info = wait_until(lambda: client.get_graph("shop", "order-81") if client.get_graph(
                "shop", "order-81").state == "finished" else None, 60, "the graph to finish")
            assert info.nodes["close"].state == TaskState.SUCCEEDED
            assert info.nodes["broken"].state == TaskState.DEAD_LETTERED
            assert info.nodes["broken"].reason.startswith("result: the handler's return value is not JSON")
            with_results = client.get_graph("shop", "order-81", with_results=True)
            assert with_results.nodes["ship"].result == {"parcel": "pk_7", "for": "ch_81"}
            assert with_results.nodes["close"].result is None   # nothing depends on it: not kept
        assert shop.seen["ship"] == {"charge": ("succeeded", {"charge_id": "ch_81"})}
        assert shop.seen["email"] == {"charge": ("succeeded", {"charge_id": "ch_81"})}
        close = shop.seen["close"]
        assert close["ship"] == ("succeeded", {"parcel": "pk_7", "for": "ch_81"}, "")
        assert close["email"] == ("succeeded", "sent", "")
        assert close["broken"][0:2] == ("ignored", None) and close["broken"][2].startswith("result: ")
        assert shop.seen["close_keeps"] == {"keeps": False}
    finally:
        shop.executor.stop()


def test_a_graceful_cancel_lets_the_running_task_finish_and_starts_nothing_after_it(node, recording_executor):
    g = Graph("to-cancel")
    slow = g.task("slow", TaskSpec(NS, "slow", {"ms": 2500}, timeout=30))
    after = g.task("after", TaskSpec(NS, "ok"), after=[slow])
    g.task("last", TaskSpec(NS, "ok-1"), after=[after])
    with Client(node.target) as client:
        client.submit_graph(g)
        wait_until(lambda: client.get_graph(NS, "to-cancel").nodes["slow"].state == TaskState.DISPATCHED, 30,
                   "the first to run")
        cancelled = client.cancel_graph(NS, "to-cancel", reason="the order was withdrawn")
        assert (cancelled.cancelled, cancelled.running) == (2, ("slow",))
        info = wait_until(lambda: _finished(client, "to-cancel"), 30, "the graph to finish")
        assert {k: n.state for k, n in info.nodes.items()} == {
            "slow": TaskState.SUCCEEDED, "after": TaskState.CANCELLED, "last": TaskState.CANCELLED}
        assert info.nodes["after"].reason == "graph cancelled: the order was withdrawn"
        ran = set(_ran(recording_executor, [n.task_id for n in info.nodes.values()]))
        assert ran == {info.nodes["slow"].task_id}
        with pytest.raises(ValueError, match="mode: must be 'graceful' or 'immediate'"):
            client.cancel_graph(NS, "to-cancel", mode="now")


def _taskring(node: NodeProcess, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taskring_cli.main", *args, "--admin", node.admin],
                          capture_output=True, text=True, timeout=60)


def test_skip_this_step_and_run_what_follows_and_replay_a_failed_branch(node, recording_executor):
    """The order example: charge fails, so ship, email and close are skipped; an operator skips
    charge (`taskring graph skip`) and what follows runs. In a second order charge fails once
    and is replayed (`taskring graph replay`): what it skipped waits for it again, then runs."""
    g = Graph("order-skip")
    charge = g.task("charge", TaskSpec(NS, "fatal"))
    ship = g.task("ship", TaskSpec(NS, "ok"), after=[charge])
    email = g.task("email", TaskSpec(NS, "ok-1"), after=[charge])
    g.task("close", TaskSpec(NS, "ok-2"), after=[ship, email])
    with Client(node.target) as client:
        client.submit_graph(g)
        info = wait_until(lambda: _finished(client, "order-skip"), 60, "the graph to finish")
        assert info.counts == {"dead_lettered": 1, "skipped": 3}

        shown = _taskring(node, "graph", "show", NS, "order-skip")
        assert shown.returncode == 0, shown.stderr
        assert "order-skip: finished (1 dead_lettered, 3 skipped)" in shown.stdout
        skipped = _taskring(node, "graph", "skip", NS, "order-skip", "charge", "--reason", "charged by hand", "--json")
        assert skipped.returncode == 0, skipped.stderr
        assert json.loads(skipped.stdout)["before"] == "dead_lettered"
        info = wait_until(lambda: _finished(client, "order-skip"), 60, "what follows charge to run")
        assert {k: n.state for k, n in info.nodes.items()} == {
            "charge": TaskState.SKIPPED, "ship": TaskState.SUCCEEDED, "email": TaskState.SUCCEEDED,
            "close": TaskState.SUCCEEDED}
        assert {(e.parent_key, e.outcome) for e in info.nodes["ship"].depends_on} == {("charge", "succeeded")}
        _check_histories(client, info)
        ship_states = [e.state.value for e in client.get(info.nodes["close"].task_id).history]
        assert ship_states[:5] == ["accepted", "waiting", "skipped", "waiting", "queued"], ship_states
        again = _taskring(node, "graph", "skip", NS, "order-skip", "ship", "--reason", "no")
        assert again.returncode != 0 and "only a dead-lettered or waiting task" in again.stderr
        audit = node.get(f"/api/audit?target=task:{info.nodes['charge'].task_id}")["records"]
        assert [(a["action"], a["reason"], a["before"]["status"]) for a in audit] == [
            ("graph.skip", "charged by hand", "dead_lettered")]

        g2 = Graph("order-replay")
        charge2 = g2.task("charge", TaskSpec(NS, "fail_then_ok", {"failures": 1}, max_retries=0))
        g2.task("ship", TaskSpec(NS, "ok"), after=[charge2])
        client.submit_graph(g2)
        info = wait_until(lambda: _finished(client, "order-replay"), 60, "the first try to end")
        assert info.counts == {"dead_lettered": 1, "skipped": 1}
        replayed = _taskring(node, "graph", "replay", NS, "order-replay", "charge", "--reason", "the bank is back")
        assert replayed.returncode == 0, replayed.stderr
        info = wait_until(lambda: _finished(client, "order-replay"), 60, "the replayed branch to run")
        assert {k: n.state for k, n in info.nodes.items()} == {"charge": TaskState.SUCCEEDED,
                                                               "ship": TaskState.SUCCEEDED}
        _check_histories(client, info)


def test_graph_cancel_from_the_shell_is_audited(node, recording_executor):
    g = Graph("to-cancel-cli")
    slow = g.task("slow", TaskSpec(NS, "slow", {"ms": 1500}, timeout=30))
    g.task("after", TaskSpec(NS, "ok"), after=[slow])
    with Client(node.target) as client:
        client.submit_graph(g)
        done = _taskring(node, "graph", "cancel", NS, "to-cancel-cli", "--reason", "withdrawn", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["cancelled"] >= 1
        info = wait_until(lambda: _finished(client, "to-cancel-cli"), 30, "the graph to finish")
        assert info.nodes["after"].state == TaskState.CANCELLED
    audit = node.get("/api/audit?target=graph:tests/to-cancel-cli")["records"]
    assert [(a["action"], a["reason"]) for a in audit] == [("graph.cancel", "withdrawn")]


def test_continue_lets_a_dependent_go_at_its_parents_first_failed_attempt(node, recording_executor):
    """charge fails its first attempt and succeeds 3 s later, at its retry: notify (continue)
    goes at the failure, ship (the default, skip) waits for the success."""
    g = Graph("continue-1")
    charge = g.task("charge", TaskSpec(NS, "flaky-3", {"failures": 1}, max_retries=2,
                                       retry_policy=RetryPolicy.tiered(3)))
    g.task("notify", TaskSpec(NS, "ok-5"), after=[charge.on_failure("continue")])
    g.task("ship", TaskSpec(NS, "ok-6"), after=[charge])
    with Client(node.target) as client:
        client.submit_graph(g)
        info = wait_until(lambda: _finished(client, "continue-1"), 60, "the graph to finish")
        assert {k: n.state for k, n in info.nodes.items()} == dict.fromkeys(info.nodes, TaskState.SUCCEEDED)
        assert info.nodes["charge"].attempts == 2
        assert [(e.parent_key, e.on_failure.value, e.outcome) for e in info.nodes["notify"].depends_on] == [
            ("charge", "continue", "continued")]
        assert [e.outcome for e in info.nodes["ship"].depends_on] == ["succeeded"]
        ids = {k: n.task_id for k, n in info.nodes.items()}
        failed_at = next(e.at for e in client.get(ids["charge"]).history if e.state == TaskState.RETRY_WAIT)
        assert failed_at <= _queued_at(client, ids["notify"]) < _ended_at(client, ids["charge"])
        assert _queued_at(client, ids["ship"]) >= _ended_at(client, ids["charge"])
        assert sorted(_ran(recording_executor, [ids["notify"], ids["ship"]])) == sorted([ids["notify"], ids["ship"]])
