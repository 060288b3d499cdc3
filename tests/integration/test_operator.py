"""The AsyncJobConfig operator end to end: a real Kubernetes API server, the operator's own
process (`python -m taskring_operator`), a real `taskring node --single` and the local Kafka.

The API server is deploy/operator/tools/apiserver: etcd embedded and k8s.io/apiextensions-apiserver,
the part of every kube-apiserver that serves CRDs and custom resources (OpenAPI validation at
admission, the status subresource, watches, finalizers), built from the Go module proxy by
deploy/operator/tools/ensure-apiserver.sh and cached under ~/.cache/taskring. It has no core API
(no pods, events or namespaces objects), which the operator does not need.

Every wait is on a condition with a deadline. A refused spec is checked on both sides: the topic
and the type's policy entry and cron rules are what they were before.
"""
from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dispatcher.auth.tokens import new_token
from harness.kube import ApiServer, KubeRest, ensure_apiserver
from harness.processes import REPO, ChildProcess, NodeProcess, free_port, tail
from harness.wait import wait_until
from harness.world import delete_topics
from taskring import Client, tls_credentials
from taskring.errors import NotFound

# The first run on a machine builds the API server from the Go module proxy (a few minutes on 2 cores).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

CRD = REPO / "deploy" / "operator" / "crd.yaml"
EXAMPLE = REPO / "deploy" / "operator" / "examples" / "export-orders.yaml"
K8S_NS = "jobs"
BASE = f"/apis/taskring.io/v1alpha1/namespaces/{K8S_NS}/asyncjobconfigs"
WAIT_S = 60.0


@pytest.fixture(scope="module")
def kube(tmp_path_factory) -> Iterator[KubeRest]:
    server = ApiServer(ensure_apiserver(), tmp_path_factory.mktemp("apiserver")).start()
    try:
        rest = KubeRest(server.kubeconfig)
        rest.apply_crd(yaml.safe_load(CRD.read_text()))
        yield rest
    finally:
        server.stop()


@pytest.fixture
def node(taskring_env) -> Iterator[NodeProcess]:
    n = NodeProcess(taskring_env, "operator-1", single=True).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def client(node) -> Iterator[Client]:
    with Client(node.target) as c:
        yield c


def start_operator(kube: KubeRest, node: NodeProcess, world, tmp_path: Path, **env: str) -> ChildProcess:
    """`python -m taskring_operator` for `node` and the world's Kafka, once its /healthz answers."""
    health = free_port()
    full = dict(os.environ, KUBECONFIG=str(_kubeconfig_of(kube, tmp_path)), TASKRING_OPERATOR_NODES=node.target,
                TASKRING_KAFKA=world.kafka_bootstrap, TASKRING_TOPIC_PREFIX=str(world.topic_prefix),
                TASKRING_OPERATOR_HEALTH_PORT=str(health), **env)
    proc = ChildProcess("operator", [sys.executable, "-m", "taskring_operator"], tmp_path / "operator.log", env=full)
    proc.start()
    try:
        wait_alive(proc, health)
    except BaseException:
        proc.stop()
        raise
    return proc


@pytest.fixture
def operator(kube: KubeRest, node: NodeProcess, taskring_env, tmp_path) -> Iterator[ChildProcess]:
    proc = start_operator(kube, node, taskring_env, tmp_path)
    try:
        yield proc
    finally:
        proc.stop()
        print(tail(proc.log_path, 60))


def wait_alive(proc: ChildProcess, port: int) -> None:
    """Until kopf's liveness endpoint answers 200 (it serves once the operator runs)."""
    def alive() -> bool:
        if proc.started.poll() is not None:
            raise RuntimeError(f"the operator exited: {tail(proc.log_path)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    wait_until(alive, WAIT_S, "the operator's /healthz", interval_s=0.2)


def _kubeconfig_of(kube: KubeRest, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": kube.server, "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t", "namespace": K8S_NS}}],
        "users": [{"name": "t", "user": {"token": kube._token}}]}))
    return path


@pytest.fixture
def topics(stack) -> Iterator[list[str]]:
    """Names of topics a test makes the operator create; deleted afterwards."""
    names: list[str] = []
    yield names
    # A refused spec's topic was never created (the test checks that): nothing to delete.
    for problem in delete_topics(stack, [n for n in names if partitions_of(stack, n) is not None]):
        print(f"warning: could not delete Kafka {problem}")


def partitions_of(stack, topic: str) -> int | None:
    t = stack.kafka_admin().list_topics(topic=topic, timeout=10).topics.get(topic)
    return None if t is None or t.error is not None else len(t.partitions)


def resource(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "taskring.io/v1alpha1", "kind": "AsyncJobConfig",
            "metadata": {"name": name, "namespace": K8S_NS}, "spec": spec}


def base_spec(task_type: str, topic: str, partitions: int = 2, **more: Any) -> dict[str, Any]:
    return {"namespace": "shop", "taskType": task_type, "executor": {"service": "shop-exports", "timeoutMs": 60000},
            "topic": {"name": topic, "partitions": partitions}, **more}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def wait_for_phase(kube: KubeRest, name: str, generation: int, phase: str, operator: ChildProcess) -> dict[str, Any]:
    """The resource once its status is about `generation` and its `phase` condition is True."""
    def settled() -> dict[str, Any] | None:
        if operator.started.poll() is not None:
            raise RuntimeError(f"the operator exited: {tail(operator.log_path)}")
        obj = kube.call("GET", f"{BASE}/{name}").body
        status = obj.get("status", {})
        if status.get("observedGeneration") == generation and condition(obj, phase).get("status") == "True":
            return obj
        return None
    return wait_until(settled, WAIT_S, f"{name} generation {generation} to be {phase}", interval_s=0.2)


def wait_gone(kube: KubeRest, name: str) -> None:
    wait_until(lambda: kube.call("GET", f"{BASE}/{name}").status == 404, WAIT_S, f"{name} to be deleted",
               interval_s=0.2)


def snapshot(client: Client, stack, task_type: str, topic: str) -> tuple[Any, ...]:
    """What the operator may change, on both sides: the policy entry, the cron rules, the topic."""
    p = client.policies.get("shop", task_type)
    rules = sorted((r.spec.name, r.spec.schedule) for r in client.cron.list("shop") if r.spec.task_type == task_type)
    return (p.source, p.revision, json.dumps(p.policy, sort_keys=True), rules, partitions_of(stack, topic))


def test_a_resource_registers_grows_refuses_a_shrink_and_drains(kube, operator, client, stack, topics):
    task_type, name = f"export_{uuid.uuid4().hex[:6]}", "export-orders"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    spec = base_spec(task_type, topic, 2, retry={"initialBackoffMs": 500, "maxBackoffMs": 60000, "multiplier": 2},
                     limits={"concurrency": {"perType": 3}, "retryCap": 1, "heartbeatTimeoutMs": 30000},
                     deadLetter={"afterRetries": 4}, priority="low", deletePolicy="Drain",
                     cron=[{"name": f"nightly-{task_type}".replace("_", "-"), "schedule": "0 2 * * *",
                            "timeZone": "Europe/London", "payload": {"scope": "all"}, "overlap": "skip"}])
    created = kube.call("POST", BASE, resource(name, spec))
    assert created.status == 201, created.message

    ready = wait_for_phase(kube, name, 1, "Ready", operator)
    assert ready["status"]["topic"] == {"name": topic, "partitions": 2}
    assert partitions_of(stack, topic) == 2
    entry = client.policies.get("shop", task_type)
    assert (entry.source, entry.revision) == ("api", 1)
    assert entry.policy == {"initial_backoff_ms": 500, "max_backoff_ms": 60000, "multiplier": 2,
                            "concurrency": {"per_type": 3}, "retry_cap": 1, "heartbeat_timeout_ms": 30000}
    [rule] = [r for r in client.cron.list("shop") if r.spec.task_type == task_type]
    assert (rule.spec.schedule, rule.spec.time_zone, rule.spec.overlap, rule.spec.max_retries) == (
        "0 2 * * *", "Europe/London", "skip", 4)
    assert rule.spec.timeout is not None and rule.spec.timeout.total_seconds() == 60
    assert ready["status"]["submitDefaults"] == {"executorService": "shop-exports", "timeoutMs": 60000,
                                                 "priority": "low", "maxRetries": 4}
    assert condition(ready, "Error")["status"] == "False"

    # Grow: more partitions and a new limit.
    grown = kube.merge_patch(f"{BASE}/{name}", {"spec": {"topic": {"partitions": 4},
                                                         "limits": {"concurrency": {"perType": 5}}}})
    assert grown.status == 200, grown.message
    ready = wait_for_phase(kube, name, 2, "Ready", operator)
    assert "grew topic" in condition(ready, "Ready")["message"]
    assert partitions_of(stack, topic) == 4
    entry = client.policies.get("shop", task_type)
    assert (entry.revision, entry.policy["concurrency"]) == (2, {"per_type": 5})

    # Shrink: refused in the status (the schema cannot know the topic), nothing changed anywhere.
    before = snapshot(client, stack, task_type, topic)
    shrunk = kube.merge_patch(f"{BASE}/{name}", {"spec": {"topic": {"partitions": 3},
                                                          "limits": {"concurrency": {"perType": 9}}}})
    assert shrunk.status == 200, shrunk.message
    refused = wait_for_phase(kube, name, 3, "Error", operator)
    error = condition(refused, "Error")
    assert error["reason"] == "PartitionsBelowTopic"
    assert "spec.topic.partitions" in error["message"] and "has 4 partitions" in error["message"]
    assert condition(refused, "Ready")["status"] == "False"
    assert snapshot(client, stack, task_type, topic) == before

    # Fixed: the next generation is reconciled again and Ready.
    fixed = kube.merge_patch(f"{BASE}/{name}", {"spec": {"topic": {"partitions": 4}}})
    assert fixed.status == 200, fixed.message
    ready = wait_for_phase(kube, name, 4, "Ready", operator)
    assert condition(ready, "Error")["status"] == "False"
    assert client.policies.get("shop", task_type).policy["concurrency"] == {"per_type": 9}

    # Delete with Drain: the cron rule and the policy entry go, the topic stays.
    assert kube.call("DELETE", f"{BASE}/{name}").status == 200
    wait_gone(kube, name)
    assert client.policies.get("shop", task_type).source == "none"
    assert not [r for r in client.cron.list("shop") if r.spec.task_type == task_type]
    assert partitions_of(stack, topic) == 4


def test_bad_specs_are_refused_at_admission_naming_the_field(kube, operator, client, stack, topics):
    task_type = f"bad_{uuid.uuid4().hex[:6]}"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    before = snapshot(client, stack, task_type, topic)

    # kubectl's default (strict field validation) refuses an unknown field, naming it.
    unknown = kube.call("POST", f"{BASE}?fieldValidation=Strict",
                        resource("unknown-field", base_spec(task_type, topic, bogus=1)))
    assert unknown.status == 400 and 'unknown field "spec.bogus"' in unknown.message, unknown.message
    negative = kube.call("POST", BASE, resource("negative", base_spec(
        task_type, topic, executor={"service": "s", "timeoutMs": -5})))
    assert negative.status == 422 and "spec.executor.timeoutMs" in negative.message, negative.message
    zero = kube.call("POST", BASE, resource("zero", base_spec(task_type, topic, 0)))
    assert zero.status == 422 and "spec.topic.partitions" in zero.message, zero.message
    priority = kube.call("POST", BASE, resource("prio", base_spec(task_type, topic, priority="urgent")))
    assert priority.status == 422 and "spec.priority" in priority.message, priority.message

    # The sample in deploy/operator/examples is admitted as it is (a dry run: nothing is stored).
    sample = yaml.safe_load(EXAMPLE.read_text())
    sample["metadata"]["namespace"] = K8S_NS
    admitted = kube.call("POST", f"{BASE}?dryRun=All&fieldValidation=Strict", sample)
    assert admitted.status == 201, admitted.message

    assert kube.call("GET", BASE).body["items"] == []
    assert snapshot(client, stack, task_type, topic) == before


def test_a_spec_only_the_operator_can_refuse_is_refused_in_status(kube, operator, client, stack, topics):
    """A heartbeat timeout longer than the attempt timeout: each field is valid on its own, so
    the schema admits it; the operator refuses it in the status, naming the field."""
    task_type = f"hb_{uuid.uuid4().hex[:6]}"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    before = snapshot(client, stack, task_type, topic)
    spec = base_spec(task_type, topic, executor={"service": "s", "timeoutMs": 1000},
                     limits={"heartbeatTimeoutMs": 5000})
    assert kube.call("POST", BASE, resource("heartbeat", spec)).status == 201
    refused = wait_for_phase(kube, "heartbeat", 1, "Error", operator)
    error = condition(refused, "Error")
    assert error["reason"] == "InvalidSpec"
    assert error["message"].startswith("spec.executor.timeoutMs: must be at least limits.heartbeatTimeoutMs (5000)")
    assert snapshot(client, stack, task_type, topic) == before

    # Deleting a resource that never registered anything retires nothing, and is not held up.
    assert kube.call("DELETE", f"{BASE}/heartbeat").status == 200
    wait_gone(kube, "heartbeat")


def test_a_cron_rule_the_cluster_refuses_leaves_the_types_settings_as_they_were(kube, operator, client, stack,
                                                                              topics):
    """Only the server parses a schedule: its refusal comes after the entry was put, so the
    operator undoes that run (the entry put back, its revision moved on) and reports the field."""
    task_type = f"cronbad_{uuid.uuid4().hex[:6]}"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    good = [{"name": f"ok-{task_type[8:]}", "schedule": "0 3 * * *", "timeZone": "UTC"}]
    spec = base_spec(task_type, topic, 1, limits={"retryCap": 2}, cron=good)
    assert kube.call("POST", BASE, resource("cronbad", spec)).status == 201
    wait_for_phase(kube, "cronbad", 1, "Ready", operator)
    source, _, entry, rules, partitions = snapshot(client, stack, task_type, topic)

    bad = good + [{"name": f"bad-{task_type[8:]}", "schedule": "61 * * * *", "timeZone": "UTC"}]
    patched = kube.merge_patch(f"{BASE}/cronbad", {"spec": {"limits": {"retryCap": 5}, "cron": bad}})
    assert patched.status == 200, patched.message
    refused = wait_for_phase(kube, "cronbad", 2, "Error", operator)
    error = condition(refused, "Error")
    assert error["reason"] == "RefusedByCluster" and "rule.schedule" in error["message"], error
    after = snapshot(client, stack, task_type, topic)
    assert (after[0], after[2], after[3], after[4]) == (source, entry, rules, partitions)
    assert kube.call("DELETE", f"{BASE}/cronbad").status == 200
    wait_gone(kube, "cronbad")


def test_a_restarted_operator_repairs_what_changed_behind_its_back(kube, operator, client, stack, topics):
    """kopf's resume handler reconciles every resource at start: a policy entry deleted by hand
    while the operator was down is registered again."""
    task_type = f"resume_{uuid.uuid4().hex[:6]}"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    spec = base_spec(task_type, topic, 1, limits={"retryCap": 3})
    assert kube.call("POST", BASE, resource("resume", spec)).status == 201
    wait_for_phase(kube, "resume", 1, "Ready", operator)
    assert client.policies.get("shop", task_type).revision == 1

    operator.stop()
    client.policies.delete("shop", task_type, reason="changed behind the operator's back")
    assert client.policies.get("shop", task_type).source == "none"
    operator.start()
    wait_alive(operator, int(operator.env["TASKRING_OPERATOR_HEALTH_PORT"]))
    repaired = wait_until(lambda: client.policies.get("shop", task_type).source == "api", WAIT_S,
                          "the resumed operator to register the entry again", interval_s=0.2)
    assert repaired
    entry = client.policies.get("shop", task_type)
    assert (entry.policy, entry.revision) == ({"retry_cap": 3}, 2)   # a delete keeps the revision; a put raises it
    assert kube.call("DELETE", f"{BASE}/resume").status == 200
    wait_gone(kube, "resume")


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(where)], check=True, capture_output=True)
    return where


def test_over_mutual_tls_with_a_token_of_its_own(kube, taskring_env, certs, stack, topics, tmp_path):
    """A node as `security.enabled` runs it: mutual TLS and a tokens file. The operator's token
    has only the calls it needs, for one namespace: what it registers there is Ready, and a
    resource for another namespace is retried under PermissionDenied, nothing written."""
    operator_token, entry = new_token("operator", ["shop"], ["read", "policy_write", "cron_write"])
    ops_token, ops_entry = new_token("ops", "*", "*")
    (tmp_path / "tokens.json").write_text(json.dumps({"tokens": [entry, ops_entry]}))
    admin = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    admin.load_cert_chain(certs / "client.pem", certs / "client.key")
    node = NodeProcess(taskring_env, "operator-tls-1", single=True, admin_ssl_context=admin,
                       TASKRING_TLS_CERT_FILE=str(certs / "server.pem"),
                       TASKRING_TLS_KEY_FILE=str(certs / "server.key"),
                       TASKRING_TLS_CLIENT_CA_FILE=str(certs / "ca.pem"),
                       TASKRING_TOKENS_FILE=str(tmp_path / "tokens.json")).start().wait_ready()
    operator = None
    try:
        operator = start_operator(kube, node, taskring_env, tmp_path, TASKRING_OPERATOR_TOKEN=operator_token,
                                  TASKRING_CA_FILE=str(certs / "ca.pem"),
                                  TASKRING_CLIENT_CERT_FILE=str(certs / "client.pem"),
                                  TASKRING_CLIENT_KEY_FILE=str(certs / "client.key"))
        task_type = f"tls_{uuid.uuid4().hex[:6]}"
        topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
        topics.append(topic)
        assert kube.call("POST", BASE, resource("tls", base_spec(task_type, topic, 1,
                                                                 limits={"retryCap": 2}))).status == 201
        wait_for_phase(kube, "tls", 1, "Ready", operator)
        other = base_spec(task_type, f"{topic}-x", 1, namespace="billing")
        assert kube.call("POST", BASE, resource("tls-billing", other)).status == 201
        retried = wait_for_phase(kube, "tls-billing", 1, "Reconciling", operator)
        assert condition(retried, "Reconciling")["reason"] == "PermissionDenied"

        with Client(node.target, token=ops_token, credentials=tls_credentials(
                certs / "ca.pem", certs / "client.pem", certs / "client.key")) as ops:
            assert ops.policies.get("shop", task_type).policy == {"retry_cap": 2}
            assert ops.policies.get("billing", task_type).source == "none"
        assert partitions_of(stack, f"{topic}-x") is None
        for name in ("tls", "tls-billing"):
            assert kube.call("DELETE", f"{BASE}/{name}").status == 200
            wait_gone(kube, name)
    finally:
        if operator is not None:
            operator.stop()
        node.terminate()


def test_deleting_with_keep_leaves_the_type_as_registered(kube, operator, client, stack, topics):
    task_type = f"keep_{uuid.uuid4().hex[:6]}"
    topic = f"taskring-test-op-{uuid.uuid4().hex[:8]}"
    topics.append(topic)
    spec = base_spec(task_type, topic, 1, limits={"retryCap": 2},
                     cron=[{"name": f"keep-{task_type[5:]}", "schedule": "*/5 * * * *", "timeZone": "UTC"}])
    assert kube.call("POST", BASE, resource("keep", spec)).status == 201
    wait_for_phase(kube, "keep", 1, "Ready", operator)
    registered = snapshot(client, stack, task_type, topic)
    assert registered[0] == "api" and registered[3] and registered[4] == 1

    assert kube.call("DELETE", f"{BASE}/keep").status == 200
    wait_gone(kube, "keep")
    assert snapshot(client, stack, task_type, topic) == registered
    # The kept settings are the cluster's now; this test cleans them up itself.
    for rule in client.cron.list("shop"):
        if rule.spec.task_type == task_type:
            client.cron.delete("shop", rule.spec.name)
    try:
        client.policies.delete("shop", task_type, reason="test cleanup")
    except NotFound:
        pass
