"""The Go, Java and Node SDKs against `taskring dev`, unchanged: each language's executor registers
through dev's ZooKeeper front (go-zookeeper, Curator, node-zookeeper-client), its CLI submits through
dev's gRPC API, and a task delayed by an hour runs (failing once, then succeeding) when the test moves
the clock an hour, not before.

The CLIs are those of tests/integration/test_sdk_graphs.py (each SDK's README): `submit` prints
the task id, `get` the task as one JSON line, `executor --behavior fail-once` fails attempt 1 and
succeeds from attempt 2, printing "task_id attempt outcome" per delivery."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.wait import wait_until
from taskring.testing import TaskringDev
from tests.integration.polyglot import ServiceProcess, Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

LANGUAGES = ("go", "java", "node")
HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-dev-build"))


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_executor_and_a_client_of_each_sdk_work_against_dev_and_follow_its_clock(
        taskring_dev: TaskringDev, tools: Tools, language: str, tmp_path: Path):
    ns = f"{language}-dev"
    log = tmp_path / "cli.log"
    executor = ServiceProcess(f"{language}-dev-executor", tools.cli(
        language, "executor", "--zk", taskring_dev.zookeeper, "--namespace", ns, "--types", "charge",
        "--behavior", "fail-once"), tmp_path)
    executor.start()
    try:
        submitted = run_cli(tools.cli(language, "submit", "--nodes", taskring_dev.grpc, "--namespace", ns,
                                      "--type", "charge", "--payload", '{"order": 7}', "--delay-ms", str(HOUR_MS)),
                            log)
        task_id = submitted.line()

        def get() -> dict:
            return json.loads(run_cli(tools.cli(language, "get", "--nodes", taskring_dev.grpc, "--task-id", task_id),
                                      log).line())

        assert get()["state"] == "queued"
        taskring_dev.advance(minutes=59)
        assert get()["state"] == "queued", "59 of 60 minutes: not due yet"
        assert not any(line.startswith(task_id) for line in executor.stdout_lines())
        taskring_dev.advance(minutes=1)
        # Due now: attempt 1 runs on this language's executor (so it registered through the front),
        # fails, and attempt 2 succeeds after its backoff.
        done = wait_until(lambda: (t := get())["state"] == "succeeded" and t, 90,
                          f"the {language} task to succeed after the clock moved", interval_s=0.2)
        assert done["attempts"] == 2 and "fail-once" in done["last_error"], (done, executor.logs())
        ran = [line.lower().split() for line in executor.stdout_lines() if line.startswith(task_id)]
        assert [r[1:] for r in ran] == [["1", "retryable_failure"], ["2", "succeeded"]], executor.logs()
    finally:
        executor.stop()
