"""Admission control on a real node: a node that is behind refuses submits with
RESOURCE_EXHAUSTED and a retry-after hint, writes nothing for them, and the SDK
retries a submit that carries a task_id until the node has caught up.

The node's executor takes two tasks at a time and each takes 200 ms, so a burst
of 30 leaves due tasks waiting in the heap for seconds, past the node's bound of
300 ms.
"""
from __future__ import annotations

import pytest

from harness.executors import RecordingExecutor
from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec, TaskState
from taskring.errors import NotFound, ResourceExhausted

pytestmark = pytest.mark.integration

BOUND_MS = 300


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "admission-1", single=True,
                    TASKRING_ADMISSION_MAX_WAIT_MS=str(BOUND_MS)).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def slow_executor(taskring_env):
    executor = RecordingExecutor(taskring_env.zk_hosts, max_in_flight=2).start()
    try:
        yield executor
    finally:
        executor.stop()


def test_a_node_behind_refuses_then_the_sdk_gets_the_task_in_once_it_caught_up(node, slow_executor):
    no_retry = Client(node.target, overload_retry_s=0)
    burst = no_retry.submit_batch([TaskSpec("tests", "slow", {"ms": 200}, task_id=f"burst-{i}") for i in range(30)])
    assert len(burst) == 30

    # While the burst waits for the executor, the node refuses, says why and how long
    # to wait, and writes nothing for what it refused.
    refusals: list[ResourceExhausted] = []
    probes = iter(range(1_000_000))

    def refused() -> bool:
        probe = f"probe-{next(probes)}"
        try:
            no_retry.submit("tests", "ok", task_id=probe)
        except ResourceExhausted as exc:
            refusals.append(exc)
            with pytest.raises(NotFound):
                no_retry.get(probe)
            return True
        return False
    wait_until(refused, 15, "a submit refused as overloaded", 0.05)
    refusal = refusals[-1]
    assert "overloaded: dispatch is behind" in refusal.details
    assert "nothing was written" in refusal.details
    assert refusal.retry_after_s is not None and 0.1 <= refusal.retry_after_s <= 10
    assert node.metric("taskring_submit_overloaded_total") >= 1

    # A submit with a task_id is retried by the SDK until the node takes it.
    refused_before = node.metric("taskring_submit_overloaded_total")
    with Client(node.target, overload_retry_s=60) as patient:
        result = patient.submit("tests", "ok", task_id="patient-1")
        assert result.task_id == "patient-1" and not result.duplicate
        assert node.metric("taskring_submit_overloaded_total") > refused_before, \
            "the node took the task at once: the test did not exercise a retry"
        wait_until(lambda: patient.get("patient-1").state == TaskState.SUCCEEDED, 30, "patient-1 to succeed", 0.2)
        # Nothing accepted was lost on the way.
        wait_until(lambda: all(patient.get(r.task_id).state == TaskState.SUCCEEDED for r in burst), 30,
                   "the burst to succeed", 0.5)
    no_retry.close()
