"""Heartbeats on a real node and real SDK executors: a task that heartbeats runs many times its
heartbeat timeout; an executor process frozen by SIGSTOP has its attempt given up within the
heartbeat timeout (not the task's), and the next attempt resumes from the details the frozen
one sent; a cancel reaches a running handler at its next heartbeat."""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest

from harness.executors import ExecutorProcess, RecordingExecutor
from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, TaskState

pytestmark = pytest.mark.integration

NS = "tests"   # RecordingExecutor's
HEARTBEAT_MS = 1_500
SOAK_S = float(os.environ.get("TASKRING_HEARTBEAT_SOAK_S", "0"))
"""The long run (600: the issue's ten-minute task with a 30 s heartbeat timeout); opt-in."""


@pytest.fixture
def node(taskring_env, tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({f"{NS}/beating": {"heartbeat_timeout_ms": HEARTBEAT_MS},
                                    f"{NS}/listens": {"heartbeat_timeout_ms": HEARTBEAT_MS},
                                    f"{NS}/soak": {"heartbeat_timeout_ms": 30_000}}))
    n = NodeProcess(taskring_env, "heartbeats-1", single=True, TASKRING_RETRY_POLICIES=str(policies)).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


def _attempt_ends(info, attempt: int) -> list:
    return [e for e in info.history if e.attempt == attempt and e.state in (TaskState.RETRY_WAIT, TaskState.FAILED)]


def test_a_task_that_heartbeats_runs_for_many_heartbeat_timeouts(node, taskring_env):
    executor = RecordingExecutor(taskring_env.zk_hosts).start()
    try:
        with Client(node.target) as client:
            task_id = client.submit(NS, "beating", {"ms": 5_000, "every_ms": 200}, timeout=60).task_id
            wait_until(lambda: client.get(task_id).state == TaskState.SUCCEEDED, 60, "the long task to succeed")
            assert client.get(task_id).attempts == 1   # never given up, though 5 s > 1.5 s
    finally:
        executor.stop()
    assert [e.attempt for e in executor.snapshot()] == [1]


def test_a_frozen_executor_loses_its_attempt_within_the_heartbeat_timeout_and_the_next_one_resumes(
        node, taskring_env):
    frozen = ExecutorProcess(taskring_env.zk_hosts, taskring_env.logs, name="executor-frozen").start()
    standby: RecordingExecutor | None = None
    try:
        with Client(node.target) as client:
            task_id = client.submit(NS, "beating", {"ms": 4_000, "every_ms": 200}, timeout=60,
                                    max_retries=5).task_id
            wait_until(lambda: any(e.task_id == task_id for e in frozen.executions()), 30, "attempt 1 to start")
            # Progress recorded (the automatic first heartbeat and some of the handler's own).
            wait_until(lambda: node.metric('taskring_heartbeats_total{verdict="continue"}') >= 4, 30,
                       "heartbeats of attempt 1 to be recorded")
            frozen.pause()
            paused_at = time.time()
            standby = RecordingExecutor(taskring_env.zk_hosts).start()
            wait_until(lambda: client.get(task_id).state == TaskState.SUCCEEDED, 60, "the task to succeed")
            info = client.get(task_id)
        first_end = _attempt_ends(info, 1)
        assert first_end and "no heartbeat within" in first_end[0].detail, info.history
        given_up_after = first_end[0].at.timestamp() - paused_at
        print(f"heartbeats: a frozen executor's attempt given up {given_up_after:.2f} s after SIGSTOP"
              f" (heartbeat timeout {HEARTBEAT_MS / 1000:.1f} s, task timeout 60 s)")
        assert given_up_after <= HEARTBEAT_MS / 1000 + 1.0, \
            f"attempt 1 given up {given_up_after:.2f} s after its executor froze (heartbeat timeout 1.5 s)"
        resumed = [e for e in standby.snapshot() if e.task_id == task_id]
        assert resumed, "the task succeeded on the standby executor"
        assert resumed[-1].heartbeat_details is not None and resumed[-1].heartbeat_details["done_ms"] >= 200, \
            "the next attempt resumed from the frozen one's last details"
    finally:
        frozen.resume()
        frozen.terminate()
        if standby is not None:
            standby.stop()


class Listening:
    """An executor whose handler heartbeats every 100 ms and notes when it is told to stop."""

    def __init__(self, zk_hosts: str):
        self.executor = Executor(NS, zk_hosts=zk_hosts, max_in_flight=4)
        self.started = threading.Event()
        self.stopped_at: float | None = None
        self.stopped_as: str | None = None
        self.done = threading.Event()
        self.executor.add_handler("listens", self._listens)

    async def _listens(self, ctx) -> None:
        self.started.set()
        try:
            for _ in range(300):
                ctx.heartbeat()
                await asyncio.sleep(0.1)
        finally:   # interrupted at its await once the answer says cancel
            self.stopped_at, self.stopped_as = time.monotonic(), ctx.stopped
            self.done.set()


def test_a_cancel_reaches_a_running_task_at_its_next_heartbeat(node, taskring_env):
    listening = Listening(taskring_env.zk_hosts)
    listening.executor.start()
    try:
        with Client(node.target) as client:
            task_id = client.submit(NS, "listens", {}, timeout=60).task_id
            assert listening.started.wait(30), "the handler to start"
            cancelled_at = time.monotonic()
            assert client.cancel(task_id) == TaskState.CANCELLED
            assert listening.done.wait(10), "the handler to be stopped"
            assert listening.stopped_as == "cancelled"
            assert listening.stopped_at is not None and listening.stopped_at - cancelled_at < 2.0
            print(f"heartbeats: a cancel stopped the running handler {listening.stopped_at - cancelled_at:.3f} s"
                  " after the Cancel call (heartbeat every 0.1 s)")
            info = client.get(task_id)
            assert info.state == TaskState.CANCELLED
            # Its STOPPED outcome changed nothing: the history ends at the cancel.
            wait_until(lambda: node.metric('taskring_task_outcomes_total{kind="stopped"}') >= 1, 10,
                       "the stopped outcome to come back")
            assert [e.state for e in client.get(task_id).history][-1] == TaskState.CANCELLED
    finally:
        listening.executor.stop()


@pytest.mark.skipif(SOAK_S <= 0, reason="a long run: TASKRING_HEARTBEAT_SOAK_S=600")
@pytest.mark.timeout(SOAK_S + 300)
def test_soak_a_task_of_many_minutes_with_a_30_s_heartbeat_timeout_survives(node, taskring_env):
    executor = Executor(NS, zk_hosts=taskring_env.zk_hosts, max_in_flight=1)
    beats: list[float] = []

    def soak(ctx) -> None:
        end = time.monotonic() + ctx.payload["s"]
        while time.monotonic() < end:
            ctx.heartbeat({"left_s": round(end - time.monotonic())})
            beats.append(time.monotonic())
            time.sleep(5)

    executor.add_handler("soak", soak)
    executor.start()
    try:
        with Client(node.target) as client:
            task_id = client.submit(NS, "soak", {"s": SOAK_S}, timeout=SOAK_S + 120).task_id
            wait_until(lambda: client.get(task_id).state == TaskState.SUCCEEDED, SOAK_S + 120, "the soak to succeed")
            assert client.get(task_id).attempts == 1
        assert node.metric("taskring_heartbeat_expired_total") == 0
        assert len(beats) >= SOAK_S / 5 - 1
    finally:
        executor.stop()
