"""Mutual TLS from a real node to executors in Python, Go, Java and Node, on the real stack,
with certificates made by deploy/local/certs.sh.

The node dials its executors trusting the local CA and showing the CA's client certificate
(TASKRING_EXECUTOR_CA_FILE, TASKRING_EXECUTOR_CLIENT_CERT_FILE/KEY_FILE). Each executor serves
the CA's server certificate and requires a client certificate of that CA (the Python SDK's
`executor_tls_credentials`; each CLI's `--tls-cert/--tls-key/--tls-client-ca`, and the Java
CLI's from the TASKRING_EXECUTOR_TLS_* environment, to show that path too). A task to each
succeeds. A plain-text executor is not reachable from that node: its task spends its attempts
on a failed handshake, is dead-lettered, and its error names the executor and UNAVAILABLE.

Each executor serves a namespace of its own, so which executor ran which task is known.
"""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.processes import REPO, NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor, RetryPolicy, TaskState, executor_tls_credentials
from tests.integration.polyglot import ServiceProcess, Tools, build_tools, tail

pytestmark = pytest.mark.integration

TERMINAL = {TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("polyglot-build"))


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(where)], check=True, capture_output=True)
    return where


def test_a_node_reaches_executors_of_every_sdk_over_mutual_tls_and_not_a_plain_text_one(taskring_env, tools, certs):
    logs: Path = taskring_env.logs
    zk_hosts = taskring_env.zk_hosts
    node = NodeProcess(taskring_env, "tls1", single=True,
                       TASKRING_EXECUTOR_CA_FILE=str(certs / "ca.pem"),
                       TASKRING_EXECUTOR_CLIENT_CERT_FILE=str(certs / "client.pem"),
                       TASKRING_EXECUTOR_CLIENT_KEY_FILE=str(certs / "client.key"))
    tls_flags = ("--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key"),
                 "--tls-client-ca", str(certs / "ca.pem"))
    tls_env = {**os.environ, "TASKRING_EXECUTOR_TLS_CERT_FILE": str(certs / "server.pem"),
               "TASKRING_EXECUTOR_TLS_KEY_FILE": str(certs / "server.key"),
               "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE": str(certs / "ca.pem")}

    py_runs: list[str] = []
    lock = threading.Lock()

    def py_ok(ctx) -> None:
        with lock:
            py_runs.append(ctx.task_id)

    py_tls = Executor("tls-py", zk_hosts=zk_hosts, credentials=executor_tls_credentials(
        certs / "server.pem", certs / "server.key", certs / "ca.pem"))
    py_tls.add_handler("ok", py_ok)
    py_plain = Executor("tls-plain", zk_hosts=zk_hosts)
    py_plain.add_handler("ok", py_ok)
    services = {
        "tls-go": ServiceProcess("tls-go", tools.go_executor(zk_hosts, "tls-go", "ok", "ok", *tls_flags), logs),
        "tls-node": ServiceProcess("tls-node", tools.node_executor(zk_hosts, "tls-node", "ok", "ok", *tls_flags),
                                   logs),
        "tls-java": ServiceProcess("tls-java", tools.java_executor(zk_hosts, "tls-java", "ok", "ok"), logs,
                                   env=tls_env),
    }
    namespaces = ["tls-py", *services, "tls-plain"]

    def diagnostics() -> str:
        return "\n".join([f"--- dispatcher {node.log_path}:\n{node.log_tail(30)}",
                          *(s.logs(20) for s in services.values())])

    zk = KazooClient(hosts=zk_hosts)
    running: list = []
    try:
        node.start()
        for ex in (py_tls, py_plain):
            ex.start()
            running.append(ex)
        for s in services.values():
            running.append(s.start())
        zk.start(timeout=15)

        def all_registered() -> bool:
            for s in services.values():
                if not s.alive():
                    raise AssertionError(f"executor process {s.name} exited early\n{s.logs()}")
            return all(zk.exists(f"/executors/{ns}") and zk.get_children(f"/executors/{ns}") for ns in namespaces)
        wait_until(all_registered, 90, "the executors of every SDK to register in ZooKeeper", 0.1)
        node.wait_ready(60)

        # When one task is submitted to each executor's namespace
        with Client(node.target) as client:
            ids = {ns: client.submit(ns, "ok", {"to": ns}, max_retries=1,
                                     retry_policy=RetryPolicy.tiered(0.2)).task_id for ns in namespaces}
            infos: dict = {}

            def all_finished() -> bool:
                for ns, tid in ids.items():
                    if ns not in infos or infos[ns].state not in TERMINAL:
                        infos[ns] = client.get(tid)
                return all(info.state in TERMINAL for info in infos.values())
            try:
                wait_until(all_finished, 120, "every task to finish", 0.2)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; { {ns: i.state for ns, i in infos.items()} }\n{diagnostics()}") \
                    from None

        # Then every executor over mutual TLS ran its task, at the first attempt
        states = {ns: (info.state, info.attempts) for ns, info in infos.items()}
        for ns in ("tls-py", *services):
            assert states[ns] == (TaskState.SUCCEEDED, 1), f"{ns}: {states}\n{diagnostics()}"
        assert py_runs == [ids["tls-py"]], py_runs
        for ns, s in services.items():
            # "<task id> <attempt> <kind>"; the kind is `succeeded` or `OUTCOME_KIND_SUCCEEDED` by CLI
            ran = [ln.split() for ln in s.stdout_lines() if ln.startswith(ids[ns] + " ")]
            assert len(ran) == 1 and ran[0][1] == "1" and ran[0][2].upper().endswith("SUCCEEDED"), \
                f"{ns}: {ran}\n{s.logs()}"
        # And the plain-text executor was never reached: its task was dead-lettered on the handshake
        plain = infos["tls-plain"]
        assert plain.state == TaskState.DEAD_LETTERED, states
        assert "UNAVAILABLE" in plain.last_error and "executor 127.0.0.1:" in plain.last_error, plain.last_error
        assert ids["tls-plain"] not in py_runs
        assert "calls to the executors: TLS trusting" in node.log_tail(400), node.log_tail(40)
    finally:
        zk.stop()
        for r in reversed(running):
            r.stop()
        node.stop()
        print(f"logs in {logs}; node log tail:\n{tail(node.log_path, 10)}")
