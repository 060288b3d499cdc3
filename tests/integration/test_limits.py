"""Concurrency limits per task type on a real node and a real SDK executor over its Work stream:
never more than the limit running at once, as the executor itself sees it, and each attempt's
place freed as its own outcome comes back (a long attempt does not hold up the short ones that
were sent with it)."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, TaskSpec, TaskState

pytestmark = pytest.mark.integration

NS, LIMITED, FREE = "limits", "export", "email"
RATED = "notify"
"""A type with a rate of 5 starts a second, in bursts of at most 2."""
BLOCKING = "export-blocking"
"""A limited type whose handler blocks a thread: it cannot be cancelled when the node's stream
drops (async handlers are), so it runs on after its owner is killed."""


class TimedExecutor:
    """Records when each run started and ended, by the executor's own clock."""

    def __init__(self, zk_hosts: str):
        self.executor = Executor(NS, zk_hosts=zk_hosts, max_in_flight=64)
        self._lock = threading.Lock()
        self.runs: dict[str, list[tuple[str, float, float]]] = {LIMITED: [], FREE: [], BLOCKING: []}
        self.runs[RATED] = []
        for task_type in (LIMITED, FREE, RATED):
            self.executor.add_handler(task_type, self._handler(task_type))
        self.executor.add_handler(BLOCKING, self._blocking)

    def _blocking(self, ctx) -> None:
        started = time.monotonic()
        time.sleep(ctx.payload["ms"] / 1000)
        with self._lock:
            self.runs[BLOCKING].append((ctx.task_id, started, time.monotonic()))

    def _handler(self, task_type: str):
        async def run(ctx) -> None:
            started = time.monotonic()
            try:
                await asyncio.sleep(ctx.payload["ms"] / 1000)
            finally:   # a run cancelled at its deadline ran until then
                with self._lock:
                    self.runs[task_type].append((ctx.task_id, started, time.monotonic()))
        return run

    def started(self, task_type: str) -> int:
        with self._lock:
            return len(self.runs[task_type])

    def most_at_once(self, task_type: str) -> int:
        with self._lock:
            edges = sorted([(s, 1) for _, s, _ in self.runs[task_type]] + [(e, -1) for _, _, e in self.runs[task_type]],
                           key=lambda edge: (edge[0], edge[1]))   # an end before a start at the same instant
        most = running = 0
        for _, step in edges:
            running += step
            most = max(most, running)
        return most


def limited_node(world, tmp_path, node_id: str) -> NodeProcess:
    policies = tmp_path / "policies.json"
    limit = {"concurrency": {"per_type": 2}}
    rate = {"rate": {"per_type": {"starts": 5, "period_ms": 1000, "burst": 2}}}
    policies.write_text(json.dumps({f"{NS}/{LIMITED}": limit, f"{NS}/{BLOCKING}": limit, f"{NS}/{RATED}": rate}))
    return NodeProcess(world, node_id, single=True, TASKRING_RETRY_POLICIES=str(policies),
                       TASKRING_RECOVERY_GRACE_MS="1000").start()


@pytest.fixture
def node(taskring_env, tmp_path):
    n = limited_node(taskring_env, tmp_path, "limits-1")
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


@pytest.fixture
def executor(taskring_env):
    timed = TimedExecutor(taskring_env.zk_hosts)
    timed.executor.start()
    try:
        yield timed
    finally:
        timed.executor.stop()


def test_a_limited_type_never_runs_more_than_its_limit_and_frees_each_place_as_its_attempt_ends(node, executor):
    with Client(node.target) as client:
        # One long attempt and ten short ones, submitted together: dispatched together, the
        # long one and a short one take the two places at once.
        specs = [TaskSpec(NS, LIMITED, {"ms": 3_000}, task_id="long")]
        specs += [TaskSpec(NS, LIMITED, {"ms": 50}, task_id=f"short-{i}") for i in range(10)]
        specs += [TaskSpec(NS, FREE, {"ms": 500}, task_id=f"free-{i}") for i in range(6)]
        client.submit_batch(specs)
        ids = [s.task_id for s in specs if s.task_id is not None]
        wait_until(lambda: all(client.get(t).state == TaskState.SUCCEEDED for t in ids), 60, "every task to succeed")
    assert executor.most_at_once(LIMITED) == 2, executor.runs[LIMITED]
    assert executor.most_at_once(FREE) == 6, "a type without a limit was held back"
    ends = {task_id: end for task_id, _, end in executor.runs[LIMITED]}
    assert all(ends[f"short-{i}"] < ends["long"] for i in range(10)), \
        "a short attempt waited for the long one: places were freed by call, not by attempt"


def test_after_the_owner_is_killed_its_running_attempts_still_count_until_they_time_out(taskring_env, tmp_path,
                                                                                        executor):
    first = limited_node(taskring_env, tmp_path, "limits-1")
    first.wait_ready()
    # Runs long enough to outlast the new owner's start by seconds.
    ids = [f"crash-{i}" for i in range(3)]
    with Client(first.target) as client:
        client.submit_batch([TaskSpec(NS, BLOCKING, {"ms": 6_000}, task_id=t, timeout=7) for t in ids])
        wait_until(lambda: sum(client.get(t).state in (TaskState.DISPATCHED, TaskState.RUNNING) for t in ids) == 2, 30,
                   "two attempts running under the limit")
    first.kill()   # kill -9: its two attempts run on at the executor, their outcomes lost
    second = limited_node(taskring_env, tmp_path, "limits-2")
    try:
        second.wait_ready()
        with Client(second.target) as client:
            wait_until(lambda: all(client.get(t).state == TaskState.SUCCEEDED for t in ids), 90,
                       "every task to succeed under the new owner")
    finally:
        second.terminate()
    # The killed owner's two attempts ran to their end beside whatever the new owner started:
    # never more than two at once, by the executor's own clock.
    assert executor.started(BLOCKING) >= 3 + 2, executor.runs[BLOCKING]
    assert executor.most_at_once(BLOCKING) == 2, executor.runs[BLOCKING]


def test_a_rate_limited_type_starts_no_faster_than_its_rate_by_the_executors_clock(node, executor):
    with Client(node.target) as client:
        specs = [TaskSpec(NS, RATED, {"ms": 1}, task_id=f"rated-{i}") for i in range(12)]
        client.submit_batch(specs)
        wait_until(lambda: all(client.get(s.task_id).state == TaskState.SUCCEEDED for s in specs if s.task_id), 60,
                   "every rated task to succeed")
    starts = sorted(start for _, start, _ in executor.runs[RATED])
    assert len(starts) == 12
    # A burst of 2, then 5 a second: at most 2 + 5 * t starts in any window of t seconds
    # (a small allowance for the two clocks: the node's token times, the executor's starts).
    for i, first in enumerate(starts):
        for j in range(i, len(starts)):
            window = starts[j] - first
            assert j - i + 1 <= 2 + 5 * (window + 0.05), f"{j - i + 1} starts within {window:.3f} s: {starts}"
    assert starts[-1] - starts[0] >= (12 - 2) / 5 - 0.1, "ten starts past the burst took less than two seconds"


def test_get_task_says_why_a_due_task_waits_and_stops_saying_it_once_it_runs(node, executor):
    with Client(node.target) as client:
        client.submit_batch([TaskSpec(NS, LIMITED, {"ms": 2_000}, task_id=f"holder-{i}") for i in range(2)])
        waiting_id = client.submit(NS, LIMITED, {"ms": 10}).task_id
        wait_until(lambda: client.get(waiting_id).waiting == "concurrency limit per_type (at most 2 running)", 30,
                   "GetTask to say the task waits at its type's limit")
        assert client.get(waiting_id).state == TaskState.QUEUED
        wait_until(lambda: client.get(waiting_id).state == TaskState.SUCCEEDED, 30, "the task to run")
        assert client.get(waiting_id).waiting == ""
