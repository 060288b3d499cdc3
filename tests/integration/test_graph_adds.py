"""Tasks added to a graph while it runs (AddGraphTasks, `ctx.add_tasks`), on the real stack (one
node, Kafka, MariaDB): a dynamic fan-out whose fan-in waits for every added task; an added task
runs after its adder ended and sees its result; a retried adder adds nothing twice; an adder that
fails for good skips what it added and what waited for it; and the refusals, each naming its
field: a task that no longer runs, an also_before task that no longer waits or would close a
cycle, a dependency on no task, a key the graph has."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from dispatcher.api.graph_validation import graph_task_id
from dispatcher.store import records as r
from harness.processes import NodeProcess
from harness.wait import wait_until
from harness.world import private_world
from taskring import Client, Executor, RetryableError, TaskSpec, TaskState
from taskring.errors import FailedPrecondition, InvalidArgument
from taskring.graph import Additions, After, Graph
from tests.integration.conftest import PARTITIONS

pytestmark = pytest.mark.integration

NS = "adds"


@pytest.fixture(scope="module")
def world(stack, tmp_path_factory):
    with private_world(stack, "graph-adds", tmp_path_factory.mktemp("graph-adds-logs"), PARTITIONS) as w:
        yield w


@pytest.fixture(scope="module")
def node(world):
    node = NodeProcess(world, "graph-adds-1", single=True).start()
    try:
        yield node.wait_ready()
    finally:
        node.terminate()


class Handlers:
    """The module's executor: what each handler saw, by task id."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: Counter[str] = Counter()
        self.parents: dict[str, dict] = {}
        self.refusals: dict[str, str] = {}

    def _saw(self, ctx) -> None:
        with self.lock:
            self.runs[ctx.task_id] += 1
            self.parents[ctx.task_id] = {k: (p.outcome, p.result) for k, p in ctx.parent_results.items()}

    def split(self, ctx):
        """Adds one `pack` per line; `close` waits for them too. payload: lines, fail_first, fail."""
        self._saw(ctx)
        lines = Additions()
        for n in range(ctx.payload["lines"]):
            lines.task(f"line-{n}", TaskSpec(NS, "pack", {"n": n}))
        added = ctx.add_tasks(lines, also_before=["close"])
        if ctx.payload.get("fail") or (ctx.payload.get("fail_first") and ctx.attempt == 1):
            raise RetryableError(f"split failed after adding (duplicate={added.duplicate})")
        return {"lines": ctx.payload["lines"], "duplicate": added.duplicate}

    def pack(self, ctx):
        self._saw(ctx)
        return {"packed": ctx.payload["n"]}

    def close(self, ctx):
        self._saw(ctx)

    def probe(self, ctx):
        """Tries what must be refused, recording each refusal's text by case. It first waits for
        the graph's task `other` (no ancestor of it) to have ended."""
        self._saw(ctx)
        client = ctx._graph.client
        wait_until(lambda: client.get(ctx.payload["other_id"]).state is TaskState.SUCCEEDED, 30, "other to end")
        cases: dict[str, tuple[Additions, list[str]]] = {name: (Additions(), also) for name, also in (
            ("done", ["other"]), ("cycle", ["first"]), ("unknown", []), ("taken", []))}
        cases["done"][0].task("x", TaskSpec(NS, "pack", {"n": 0}))
        cases["cycle"][0].task("y", TaskSpec(NS, "pack", {"n": 0}))
        cases["unknown"][0].task("z", TaskSpec(NS, "pack", {"n": 0}), after=[After("nowhere")])
        cases["taken"][0].task("w", TaskSpec(NS, "pack", {"n": 0}))   # "probe:w" is the graph's own
        for name, (additions, also_before) in cases.items():
            try:
                ctx.add_tasks(additions, also_before=also_before)
                self.refusals[name] = "accepted"
            except (InvalidArgument, FailedPrecondition) as e:
                self.refusals[name] = f"{type(e).__name__}: {e}"


@pytest.fixture(scope="module")
def handlers(world, node):
    h = Handlers()
    client = Client(node.target)
    executor = Executor(NS, zk_hosts=world.zk_hosts, client=client)
    for name in ("split", "pack", "close", "probe"):
        executor.add_handler(name, getattr(h, name))
    executor.start()
    try:
        yield h
    finally:
        executor.stop()
        client.close()


def _finished(client: Client, graph_id: str):
    info = client.get_graph(NS, graph_id, with_results=True)
    return info if info.state == "finished" else None


def _order(lines: int, graph_id: str, **payload) -> Graph:
    g = Graph(graph_id)
    split = g.task("split", TaskSpec(NS, "split", {"lines": lines, **payload}, max_retries=2,
                                     retry_policy=None))
    g.task("close", TaskSpec(NS, "close"), after=[split])
    return g


def test_a_dynamic_fan_out_runs_after_its_adder_and_the_fan_in_waits_for_every_added_task(node, handlers):
    with Client(node.target) as client:
        client.submit_graph(_order(3, "order-1"))
        info = wait_until(lambda: _finished(client, "order-1"), 60, "the graph to finish")
        lines = [f"split:line-{n}" for n in range(3)]
        assert list(info.nodes) == ["split", "close", *lines]
        assert {k: n.state for k, n in info.nodes.items()} == dict.fromkeys(info.nodes, TaskState.SUCCEEDED)
        assert {e.parent_key for e in info.nodes["close"].depends_on} == {"split", *lines}
        assert info.nodes["split"].result == {"lines": 3, "duplicate": False}
        for key in lines:
            assert [e.parent_key for e in info.nodes[key].depends_on] == ["split"]
            # An added task ran after its adder ended, with its result in hand.
            assert handlers.parents[info.nodes[key].task_id] == {"split": ("succeeded", {"lines": 3,
                                                                                          "duplicate": False})}
            assert _queued_at(client, info.nodes[key].task_id) >= _ended_at(client, info.nodes["split"].task_id)
            assert _queued_at(client, info.nodes["close"].task_id) >= _ended_at(client, info.nodes[key].task_id)
        assert handlers.parents[info.nodes["close"].task_id] == {
            "split": ("succeeded", {"lines": 3, "duplicate": False}),
            **{key: ("succeeded", {"packed": n}) for n, key in enumerate(lines)}}
        assert all(handlers.runs[n.task_id] == 1 for n in info.nodes.values())
        for n in info.nodes.values():
            states = [e.state.value for e in client.get(n.task_id).history]
            assert r.history_errors(states) == [] and states[:2] == ["accepted", "waiting"], (n.key, states)


def test_a_retried_adder_adds_nothing_twice(node, handlers):
    with Client(node.target) as client:
        client.submit_graph(_order(2, "order-2", fail_first=True))
        info = wait_until(lambda: _finished(client, "order-2"), 60, "the graph to finish")
        assert list(info.nodes) == ["split", "close", "split:line-0", "split:line-1"]
        assert info.nodes["split"].attempts == 2
        assert info.nodes["split"].result == {"lines": 2, "duplicate": True}
        assert {k: n.state for k, n in info.nodes.items()} == dict.fromkeys(info.nodes, TaskState.SUCCEEDED)
        assert all(handlers.runs[info.nodes[k].task_id] == 1 for k in ("split:line-0", "split:line-1", "close"))


def test_an_adder_that_fails_for_good_skips_what_it_added_and_what_waited_for_it(node, handlers):
    with Client(node.target) as client:
        client.submit_graph(_order(2, "order-3", fail=True))
        info = wait_until(lambda: _finished(client, "order-3"), 60, "the graph to finish")
        assert {k: n.state for k, n in info.nodes.items()} == {
            "split": TaskState.DEAD_LETTERED, "close": TaskState.SKIPPED,
            "split:line-0": TaskState.SKIPPED, "split:line-1": TaskState.SKIPPED}
        assert all(handlers.runs[info.nodes[k].task_id] == 0 for k in ("split:line-0", "split:line-1", "close"))


def test_what_cannot_be_added_is_refused_naming_the_field(node, handlers):
    with Client(node.target) as client:
        g = Graph("probe-1")
        first = g.task("first", TaskSpec(NS, "pack", {"n": 9}))
        g.task("other", TaskSpec(NS, "pack", {"n": 7}))
        g.task("probe:w", TaskSpec(NS, "pack", {"n": 8}))   # the key an add of "w" from "probe" would make
        g.task("probe", TaskSpec(NS, "probe", {"other_id": graph_task_id(NS, "probe-1", "other")}), after=[first])
        client.submit_graph(g)
        info = wait_until(lambda: _finished(client, "probe-1"), 60, "the probe graph to finish")
        refusals = handlers.refusals
        assert refusals["done"].startswith("FailedPrecondition") and "also_before[0]" in refusals["done"], refusals
        assert "'other' is succeeded, no longer waiting" in refusals["done"]
        assert refusals["cycle"].startswith("InvalidArgument") and "also_before[0]" in refusals["cycle"], refusals
        assert refusals["unknown"].startswith("InvalidArgument") and "tasks[0].depends_on[0]" in refusals["unknown"]
        assert refusals["taken"].startswith("InvalidArgument") and "tasks[0].key" in refusals["taken"], refusals
        # The refused "done" call had written its task before it found `other` ended (the order
        # every prefix of which is safe): it ran after the probe ended, as any added task; the
        # other refusals wrote nothing.
        assert set(info.nodes) == {"first", "other", "probe:w", "probe", "probe:x"}
        assert info.nodes["probe:x"].state is TaskState.SUCCEEDED
        # From outside a running attempt: refused, naming the adder, nothing written.
        adds = Additions()
        adds.task("late", TaskSpec(NS, "pack", {"n": 1}))
        with pytest.raises(FailedPrecondition, match="adder_task_id"):
            client.add_graph_tasks(NS, "probe-1", info.nodes["probe"].task_id, 1, adds)
        with pytest.raises(InvalidArgument, match="adder_task_id"):
            client.add_graph_tasks(NS, "probe-1", "no-such-task", 1, adds)
        assert set(client.get_graph(NS, "probe-1").nodes) == set(info.nodes)


def _ended_at(client: Client, task_id: str):
    return client.get(task_id).history[-1].at


def _queued_at(client: Client, task_id: str):
    return next(e.at for e in client.get(task_id).history if e.state == TaskState.QUEUED)
