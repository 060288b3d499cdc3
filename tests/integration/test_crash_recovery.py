"""kill -9 of the only dispatcher while 10,000 tasks are in flight, then a restart:
every accepted task reaches a terminal state, and the only tasks run twice are
those the dead node had handed to an executor without recording the outcome."""
from __future__ import annotations

import random

import pytest

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec

# serial: kill -9 of a node with 10,000 tasks in flight, recovery bounded by the session timeout.
pytestmark = [pytest.mark.integration, pytest.mark.serial]


def test_kill9_with_10000_tasks_in_flight_loses_nothing(taskring_env, recording_executor, record_property):
    node = NodeProcess(taskring_env, "crash-1", single=True, TASKRING_ROUTE_THRESHOLD_MS="3000").start()
    node.wait_ready()
    rng = random.Random(7)
    # Given 10,000 accepted tasks: immediate, short delay (Kafka), long delay (MySQL path)
    specs = ([TaskSpec("tests", "slow", {"ms": 5}) for _ in range(4000)]
             + [TaskSpec("tests", "slow", {"ms": 5}, delay=rng.uniform(1, 3)) for _ in range(3000)]
             + [TaskSpec("tests", "slow", {"ms": 5}, delay=rng.uniform(4, 8)) for _ in range(3000)])
    accepted = []
    with Client(node.target) as client:
        for i in range(0, len(specs), 1000):
            accepted += [r.task_id for r in client.submit_batch(specs[i:i + 1000])]
    assert len(set(accepted)) == 10_000
    # When the node is killed while executing them
    wait_until(lambda: len(recording_executor.snapshot()) >= 1500, 60, "1,500 executions before the kill")
    node.kill()
    in_flight_at_kill = taskring_env.sql("SELECT COUNT(*) FROM tasks WHERE status = 'dispatched'")[0][0]
    done_at_kill = taskring_env.sql("SELECT COUNT(*) FROM tasks WHERE status = 'succeeded'")[0][0]
    assert done_at_kill < 10_000, "the node finished everything before it was killed: the test proves nothing"
    # And restarted
    restarted = NodeProcess(taskring_env, "crash-1", single=True, TASKRING_ROUTE_THRESHOLD_MS="3000").start()
    try:
        restarted.wait_ready()
        # Then every accepted task reaches a terminal state
        wait_until(lambda: taskring_env.status_counts().get("succeeded", 0) == 10_000, 180,
                   "all 10,000 tasks to succeed after the restart", 0.5)
    finally:
        restarted.terminate()
    runs = recording_executor.runs_by_task()
    assert set(runs) == set(accepted)
    duplicates = sum(1 for n in runs.values() if n > 1)
    record_property("duplicate_executions", duplicates)
    record_property("in_flight_at_kill", in_flight_at_kill)
    print(f"\nkill -9 recovery: 10000 accepted, 10000 succeeded, {done_at_kill} done at kill,"
          f" {in_flight_at_kill} in flight at kill, {duplicates} executed twice")
    assert duplicates <= in_flight_at_kill
