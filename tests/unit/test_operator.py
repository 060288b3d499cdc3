"""The AsyncJobConfig operator's pure parts and its reconcile order, with in-memory twins of the
cluster's API and of Kafka (no servers): the spec refused naming the field, the spec as a policy
entry and cron rules, the topic never shrunk, the conditions, and that a refusal changes nothing
on either side. tests/integration/test_operator.py runs the same against real servers."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import grpc
import kopf
import pytest
import yaml

from harness.processes import REPO
from taskring.cron import CronRuleInfo, CronRuleSpec
from taskring.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from taskring.policies import TypePolicy
from taskring_operator.config import OperatorConfig
from taskring_operator.handlers import on_delete, on_reconcile
from taskring_operator.reconcile import Deps, reconcile
from taskring_operator.settings import Registrar, cron_marker, cron_specs, plan_cron, policy_entry
from taskring_operator.spec import SPEC_FIELDS, SpecError, parse_spec
from taskring_operator.status import ERROR, READY, RECONCILING, Outcome, conditions
from taskring_operator.topics import plan_topic

EXAMPLE = REPO / "deploy" / "operator" / "examples" / "export-orders.yaml"
CRD = REPO / "deploy" / "operator" / "crd.yaml"
RESOURCE = "jobs/export-orders"


def example_spec() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())["spec"]


def with_(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `spec` with the dotted `path` set (None: removed)."""
    out = copy.deepcopy(spec)
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node.setdefault(p, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return out


# ---------------------------------------------------------------- the spec

def test_the_example_parses_into_its_fields():
    spec = parse_spec(example_spec())
    assert (spec.namespace, spec.task_type, spec.priority, spec.delete_policy) == ("shop", "export_orders", "low",
                                                                                   "Drain")
    assert (spec.executor.service, spec.executor.timeout_ms) == ("shop-exports", 600000)
    assert (spec.topic.name, spec.topic.partitions) == ("shop.export_orders.events", 6)
    assert spec.limits.rate_per_type is not None and spec.limits.rate_per_type.burst == 20
    assert [r.name for r in spec.cron] == ["nightly-export"]


def test_defaults_and_the_default_topic_is_the_priority_class_topic():
    spec = parse_spec({"namespace": "shop", "taskType": "t", "executor": {"service": "s", "timeoutMs": 5},
                       "topic": {"partitions": 16}})
    assert (spec.priority, spec.delete_policy, spec.cron) == ("normal", "Keep", ())
    assert spec.topic_name("taskring.tasks") == "taskring.tasks.normal"


@pytest.mark.parametrize(("path", "value", "field", "problem"), [
    ("bogus", 1, "spec.bogus", "is not a field"),
    ("executor.timeoutMs", -5, "spec.executor.timeoutMs", "between 1 and"),
    ("executor.timeoutMs", True, "spec.executor.timeoutMs", "whole number"),
    ("executor.service", None, "spec.executor.service", "is required"),
    ("topic.partitions", 0, "spec.topic.partitions", "between 1 and"),
    ("topic.name", "no spaces", "spec.topic.name", "Kafka topic name"),
    ("namespace", "Shop", "spec.namespace", "taskring namespace"),
    ("priority", "urgent", "spec.priority", "one of high, normal, low"),
    ("deletePolicy", "Purge", "spec.deletePolicy", "one of Keep, Drain"),
    ("retry.maxBackoffMs", 1000, "spec.retry.maxBackoffMs", "at least initialBackoffMs (5000)"),
    ("retry.multiplier", 0.5, "spec.retry.multiplier", "between 1 and 100"),
    ("limits.concurrency", {"perKey": 2}, "spec.limits.concurrency.key", "is required with perKey"),
    ("limits.rate.perType", {"starts": 5}, "spec.limits.rate.perType.periodMs", "is required"),
    ("limits.heartbeatTimeoutMs", 700000, "spec.executor.timeoutMs", "at least limits.heartbeatTimeoutMs"),
    ("deadLetter.afterRetries", -1, "spec.deadLetter.afterRetries", "between 0 and"),
])
def test_a_bad_spec_is_refused_naming_the_field(path, value, field, problem):
    with pytest.raises(SpecError) as caught:
        parse_spec(with_(example_spec(), path, value))
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_a_cron_rule_named_twice_and_limit_keys_that_differ_are_refused():
    spec = example_spec()
    twice = with_(spec, "cron", spec["cron"] * 2)
    with pytest.raises(SpecError, match=r"^spec\.cron\[1\]\.name: 'nightly-export' is given twice"):
        parse_spec(twice)
    keys = with_(with_(spec, "limits.concurrency", {"perKey": 1, "key": "a:{a}"}), "limits.rate",
                 {"perKey": {"starts": 1, "periodMs": 1000}, "key": "b:{b}"})
    with pytest.raises(SpecError, match=r"^spec\.limits\.rate\.key: must equal concurrency\.key"):
        parse_spec(keys)


def test_the_crd_schema_has_the_fields_the_parser_reads():
    crd = yaml.safe_load(CRD.read_text())
    [version] = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(schema["properties"]) == SPEC_FIELDS
    assert set(schema["required"]) == {"namespace", "taskType", "executor", "topic"}
    assert version["subresources"] == {"status": {}}


# ---------------------------------------------------------------- the mapping

def test_the_spec_as_a_policy_entry_in_the_files_shape():
    assert policy_entry(parse_spec(example_spec())) == {
        "initial_backoff_ms": 5000, "max_backoff_ms": 300000, "multiplier": 2.0,
        "concurrency": {"per_type": 3}, "retry_cap": 1,
        "rate": {"per_type": {"starts": 10, "period_ms": 1000, "burst": 20}},
        "heartbeat_timeout_ms": 30000}
    bare = parse_spec({"namespace": "shop", "taskType": "t", "executor": {"service": "s", "timeoutMs": 5},
                       "topic": {"partitions": 1}})
    assert policy_entry(bare) == {}


def test_cron_rules_carry_the_types_timeout_and_retries_and_are_marked():
    [rule] = cron_specs(parse_spec(example_spec()), RESOURCE)
    assert (rule.namespace, rule.name, rule.task_type, rule.schedule, rule.time_zone, rule.overlap) == (
        "shop", "nightly-export", "export_orders", "0 2 * * *", "Europe/London", "skip")
    assert (rule.timeout, rule.max_retries, rule.payload) == (timedelta(minutes=10), 5, {"scope": "all"})
    assert rule.description == cron_marker(RESOURCE)


def _info(spec: CronRuleSpec) -> CronRuleInfo:
    return CronRuleInfo(spec=spec, paused=False, next_fire_time=None, last_fire_time=None, last_fire_task_id="",
                        last_fire_state=None, created_at=None, updated_at=None)


def test_cron_plan_creates_updates_and_deletes_only_the_resources_own_rules():
    mine = cron_marker(RESOURCE)
    wanted = [CronRuleSpec("shop", "a", "t", "0 * * * *", description=mine),
              CronRuleSpec("shop", "b", "t", "5 * * * *", description=mine)]
    existing = [_info(CronRuleSpec("shop", "b", "t", "9 * * * *", description=mine)),
                _info(CronRuleSpec("shop", "old", "t", "0 0 * * *", description=mine)),
                _info(CronRuleSpec("shop", "by-hand", "t", "0 0 * * *", description="made by someone"))]
    plan = plan_cron(wanted, existing, RESOURCE)
    assert [r.name for r in plan.create] == ["a"]
    assert [r.name for r in plan.update] == ["b"]
    assert plan.delete == ("old",)   # never "by-hand"


# ---------------------------------------------------------------- the topic

def test_topic_plans_create_grow_and_refuse_to_shrink():
    assert plan_topic("t", None, 4).action == "create"
    assert plan_topic("t", 2, 4).action == "grow"
    assert plan_topic("t", 4, 4).action == "none"
    with pytest.raises(SpecError) as caught:
        plan_topic("t", 4, 3)
    assert caught.value.field == "spec.topic.partitions" and "has 4 partitions" in caught.value.problem


def test_a_task_topic_of_the_nodes_is_created_but_never_regrown():
    assert plan_topic("taskring.tasks.low", None, 16, task_topic=True).action == "create"
    assert plan_topic("taskring.tasks.low", 16, 16, task_topic=True).action == "none"
    with pytest.raises(SpecError, match="slot count"):
        plan_topic("taskring.tasks.low", 16, 32, task_topic=True)


# ---------------------------------------------------------------- status

def test_conditions_name_the_phase_and_keep_transition_times_that_did_not_change():
    first = conditions(Outcome(READY, "Reconciled", "ok"), now="2026-01-01T00:00:00Z")
    assert [(c["type"], c["status"]) for c in first] == [("Ready", "True"), ("Reconciling", "False"),
                                                         ("Error", "False")]
    second = conditions(Outcome(ERROR, "InvalidSpec", "spec.x: bad"), first, now="2026-01-02T00:00:00Z")
    times = {c["type"]: c["lastTransitionTime"] for c in second}
    assert times == {"Ready": "2026-01-02T00:00:00Z", "Reconciling": "2026-01-01T00:00:00Z",
                     "Error": "2026-01-02T00:00:00Z"}
    assert all(c["message"] == "spec.x: bad" for c in second)


# ---------------------------------------------------------------- reconcile, with twins

@dataclass
class TopicsTwin:
    have: dict[str, int] = field(default_factory=dict)
    fail: Exception | None = None

    def partitions(self, name: str) -> int | None:
        return self.have.get(name)

    def create(self, name: str, partitions: int) -> None:
        if self.fail:
            raise self.fail
        self.have[name] = partitions

    def grow(self, name: str, partitions: int) -> None:
        if self.fail:
            raise self.fail
        self.have[name] = partitions


@dataclass
class PoliciesTwin:
    entries: dict[tuple[str, str], tuple[int, dict]] = field(default_factory=dict)
    refuse: Exception | None = None

    def get(self, namespace: str, task_type: str) -> TypePolicy:
        rev, pol = self.entries.get((namespace, task_type), (0, None))
        return TypePolicy(namespace, task_type, pol or {}, "api" if pol is not None else "none", rev, "", None, None)

    def put(self, namespace, task_type, policy, *, reason, if_revision=None) -> TypePolicy:
        assert reason
        if self.refuse:
            raise self.refuse
        rev, _ = self.entries.get((namespace, task_type), (0, None))
        if if_revision is not None and if_revision != rev:
            raise FailedPrecondition("revision moved")
        self.entries[(namespace, task_type)] = (rev + 1, dict(policy))
        return self.get(namespace, task_type)

    def delete(self, namespace, task_type, *, reason, if_revision=None) -> TypePolicy:
        if (namespace, task_type) not in self.entries:
            raise NotFound("no entry")
        before = self.get(namespace, task_type)
        del self.entries[(namespace, task_type)]
        return before


@dataclass
class CronTwin:
    rules: dict[tuple[str, str], CronRuleSpec] = field(default_factory=dict)

    def create(self, spec: CronRuleSpec) -> CronRuleInfo:
        if spec.schedule == "not cron":   # as the server refuses it
            raise InvalidArgument("rule.schedule: must be 5 fields, got 2")
        self.rules[(spec.namespace, spec.name)] = spec
        return _info(spec)

    update = create

    def list(self, namespace: str = "") -> list[CronRuleInfo]:
        return [_info(s) for (ns, _), s in sorted(self.rules.items()) if ns == namespace]

    def delete(self, namespace: str, name: str) -> CronRuleInfo:
        return _info(self.rules.pop((namespace, name)))


@pytest.fixture
def world():
    topics, policies, cron = TopicsTwin(), PoliciesTwin(), CronTwin()
    deps = Deps(topics=topics, registrar=Registrar(policies, cron), topic_prefix="taskring.tasks")
    return deps, topics, policies, cron


def state(topics: TopicsTwin, policies: PoliciesTwin, cron: CronTwin) -> tuple:
    return dict(topics.have), copy.deepcopy(policies.entries), dict(cron.rules)


def test_a_reconcile_registers_then_creates_and_is_idempotent(world):
    deps, topics, policies, cron = world
    result = reconcile(example_spec(), RESOURCE, 1, None, deps)
    assert result.outcome.phase == READY, result.outcome
    assert topics.have == {"shop.export_orders.events": 6}
    assert policies.entries[("shop", "export_orders")][0] == 1
    assert set(cron.rules) == {("shop", "nightly-export")}
    assert result.status["observedGeneration"] == 1 and result.status["policyRevision"] == 1
    assert result.status["submitDefaults"]["executorService"] == "shop-exports"

    again = reconcile(example_spec(), RESOURCE, 1, result.status, deps)
    assert again.outcome.phase == READY and "(unchanged)" in again.outcome.message
    assert policies.entries[("shop", "export_orders")][0] == 1   # no new revision for the same entry


@pytest.mark.parametrize(("path", "value", "reason"), [
    ("executor.timeoutMs", -1, "InvalidSpec"),
    ("topic.partitions", 2, "PartitionsBelowTopic"),
])
def test_a_refusal_changes_nothing_on_either_side(world, path, value, reason):
    deps, topics, policies, cron = world
    reconcile(example_spec(), RESOURCE, 1, None, deps)
    before = state(topics, policies, cron)
    result = reconcile(with_(example_spec(), path, value), RESOURCE, 2, None, deps)
    assert (result.outcome.phase, result.outcome.reason) == (ERROR, reason)
    assert f"spec.{path}" in result.outcome.message
    assert result.status["observedGeneration"] == 2
    assert state(topics, policies, cron) == before


def test_the_clusters_refusal_is_an_error_and_the_topic_is_left_alone(world):
    deps, topics, policies, cron = world
    policies.refuse = InvalidArgument("policy_json.rate.per_key: needs a key")
    result = reconcile(example_spec(), RESOURCE, 1, None, deps)
    assert (result.outcome.phase, result.outcome.reason) == (ERROR, "RefusedByCluster")
    assert "policy_json.rate.per_key" in result.outcome.message
    assert topics.have == {} and cron.rules == {}


@pytest.mark.parametrize(("error", "phase", "reason"), [
    (AlreadyExists("rule shop/nightly-export exists"), ERROR, "RefusedByCluster"),
    (PermissionDenied(grpc.StatusCode.PERMISSION_DENIED, "token 'op' may not policy_write"), RECONCILING,
     "PermissionDenied"),
    (FailedPrecondition("revision 3, not 2"), RECONCILING, "RevisionMoved"),
    (Unavailable("no node"), RECONCILING, "ClusterUnavailable"),
])
def test_the_clusters_answers_map_to_error_only_when_the_spec_must_change(world, error, phase, reason):
    deps, topics, policies, cron = world
    policies.refuse = error
    result = reconcile(example_spec(), RESOURCE, 1, None, deps)
    assert (result.outcome.phase, result.outcome.reason) == (phase, reason)
    assert str(error) in result.outcome.message
    assert topics.have == {}


def test_a_cron_rule_the_cluster_refuses_undoes_the_entry_and_rules_of_that_run(world):
    deps, topics, policies, cron = world
    reconcile(example_spec(), RESOURCE, 1, None, deps)
    entry_before, rules_before = policies.entries[("shop", "export_orders")][1], dict(cron.rules)
    spec = with_(with_(example_spec(), "limits.retryCap", 4), "cron",
                 [{"name": "nightly-export", "schedule": "5 2 * * *"}, {"name": "hourly", "schedule": "0 * * * *"},
                  {"name": "broken", "schedule": "not cron"}])
    result = reconcile(spec, RESOURCE, 2, None, deps)
    assert (result.outcome.phase, result.outcome.reason) == (ERROR, "RefusedByCluster")
    assert "rule.schedule" in result.outcome.message
    assert policies.entries[("shop", "export_orders")][1] == entry_before   # put, then put back
    assert cron.rules == rules_before                                      # "hourly" deleted, nightly restored
    assert topics.have == {"shop.export_orders.events": 6}


def test_a_refused_first_registration_leaves_no_entry(world):
    deps, topics, policies, cron = world
    spec = with_(example_spec(), "cron", [{"name": "broken", "schedule": "not cron"}])
    assert reconcile(spec, RESOURCE, 1, None, deps).outcome.reason == "RefusedByCluster"
    assert (policies.entries, cron.rules, topics.have) == ({}, {}, {})


def test_kafka_failing_is_retried_not_an_error(world):
    deps, topics, policies, cron = world
    topics.fail = RuntimeError("broker down")
    result = reconcile(example_spec(), RESOURCE, 1, None, deps)
    assert (result.outcome.phase, result.outcome.reason) == (RECONCILING, "KafkaUnavailable")


def test_retire_keep_removes_nothing_and_drain_removes_the_entry_and_own_rules(world):
    deps, topics, policies, cron = world
    reconcile(example_spec(), RESOURCE, 1, None, deps)
    cron.create(CronRuleSpec("shop", "by-hand", "export_orders", "0 0 * * *"))
    before = state(topics, policies, cron)
    deps.registrar.retire(parse_spec(with_(example_spec(), "deletePolicy", "Keep")), RESOURCE)
    assert state(topics, policies, cron) == before
    done = deps.registrar.retire(parse_spec(example_spec()), RESOURCE)
    assert done == ["deleted cron rule nightly-export", "deleted the policy entry"]
    assert policies.entries == {} and set(cron.rules) == {("shop", "by-hand")}
    assert topics.have == {"shop.export_orders.events": 6}


# ---------------------------------------------------------------- the kopf handlers, called as kopf calls them

def test_the_handler_writes_the_status_and_raises_permanent_on_a_refusal(world):
    """kopf's KopfRunner needs an API server; the handlers are called here with kopf-shaped
    arguments (a real kopf.Patch), and end to end in tests/integration/test_operator.py."""
    deps, topics, policies, cron = world
    handler = on_reconcile(deps)
    patch = kopf.Patch()
    bad = with_(example_spec(), "executor.timeoutMs", -1)
    with pytest.raises(kopf.PermanentError, match=r"InvalidSpec: spec\.executor\.timeoutMs"):
        handler(spec=bad, status={}, meta={"generation": 3}, name="export-orders", namespace="jobs", patch=patch,
                logger=None)
    assert patch["status"]["observedGeneration"] == 3 and patch["status"]["phase"] == ERROR

    patch = kopf.Patch()
    handler(spec=example_spec(), status={}, meta={"generation": 4}, name="export-orders", namespace="jobs",
            patch=patch, logger=_Logger())
    assert patch["status"]["phase"] == READY and topics.have


def test_the_delete_handler_retries_while_the_cluster_is_unreachable(world):
    deps, _, policies, _ = world
    reconcile(example_spec(), RESOURCE, 1, None, deps)

    def unavailable(*_a, **_k):
        raise Unavailable("no node answers")
    policies.delete = unavailable
    with pytest.raises(kopf.TemporaryError):
        on_delete(deps)(spec=example_spec(), name="export-orders", namespace="jobs", logger=_Logger())


class _Logger:
    def info(self, *_: object) -> None:
        pass


# ---------------------------------------------------------------- the process's settings

def test_operator_config_from_env_names_the_variable():
    with pytest.raises(ValueError, match="TASKRING_OPERATOR_NODES: is required"):
        OperatorConfig.from_env({"TASKRING_KAFKA": "k:9092"})
    with pytest.raises(ValueError, match="TASKRING_OPERATOR_TOPIC_REPLICATION"):
        OperatorConfig.from_env({"TASKRING_KAFKA": "k", "TASKRING_OPERATOR_NODES": "n",
                                 "TASKRING_OPERATOR_TOPIC_REPLICATION": "0"})
    c = OperatorConfig.from_env({"TASKRING_KAFKA": "k", "TASKRING_OPERATOR_NODES": "n:7070",
                                 "TASKRING_OPERATOR_NAMESPACES": "jobs, batch", "TASKRING_TOPIC_PREFIX": "x"})
    assert (c.nodes, c.kafka, c.namespaces, c.topic_prefix, c.replication) == ("n:7070", "k", ("jobs", "batch"),
                                                                              "x", 1)
    assert c.liveness_endpoint == "http://0.0.0.0:8080/healthz"
    with pytest.raises(ValueError, match="need TASKRING_CA_FILE"):
        OperatorConfig.from_env({"TASKRING_KAFKA": "k", "TASKRING_OPERATOR_NODES": "n",
                                 "TASKRING_CLIENT_CERT_FILE": "c.pem", "TASKRING_CLIENT_KEY_FILE": "c.key"})
    tls = OperatorConfig.from_env({"TASKRING_KAFKA": "k", "TASKRING_OPERATOR_NODES": "n", "TASKRING_CA_FILE": "ca.pem"})
    assert (tls.ca_file, tls.client_cert_file) == ("ca.pem", None)
    with pytest.raises(ValueError, match="TASKRING_OPERATOR_HEALTH_PORT"):
        OperatorConfig.from_env({"TASKRING_KAFKA": "k", "TASKRING_OPERATOR_NODES": "n",
                                 "TASKRING_OPERATOR_HEALTH_PORT": "http"})


def test_the_operator_is_a_client_importing_nothing_of_the_server():
    """It talks to the cluster through the API only (the SDK), as the shell's tools do."""
    import ast
    server = ("dispatcher", "cluster", "membership", "harness", "taskring_cli")
    for path in (REPO / "taskring_operator").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.split(".")[0] in server], (path.name, names)
