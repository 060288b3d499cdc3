"""The Helm chart (deploy/helm/taskring): `helm lint` passes with the default values and with
every optional part on; `helm template` renders objects that decode strictly into the Kubernetes
API's own types (deploy/helm/tools/k8svalidate, offline: the schema URLs kubeconform fetches are
out of this machine's reach, so the validator checks against the k8s.io/api Go types instead);
the rendered node reads back, through NodeConfig.from_env, as the settings the values gave; bad
values are refused by values.schema.json naming the value; the alert rules are the ones
deploy/prometheus serves. Helm and the validator are built from the Go module proxy once per
machine (deploy/helm/tools/ensure-tools.sh)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from dispatcher.base.config import NodeConfig
from harness.processes import REPO
from tests.unit.test_deploy_artifacts import _from_env_variables

# The first run on a machine builds helm from source (about 3 minutes on 2 cores).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

CHART = REPO / "deploy" / "helm" / "taskring"
# The AsyncJobConfig CRD is not in the Go scheme: it is accepted unchecked here, and checked by a
# real API server, which applies it, in tests/integration/test_operator.py (the chart's copy is
# the same file: test_the_charts_crd_is_deploy_operators).
CRDS = ("--allow-kind", "monitoring.coreos.com/v1/ServiceMonitor",
        "--allow-kind", "monitoring.coreos.com/v1/PrometheusRule",
        "--allow-kind", "apiextensions.k8s.io/v1/CustomResourceDefinition")
ALL_ON = ("--set", "security.enabled=true", "--set", "security.executorTlsSecret=taskring-executor-tls",
          "--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    out = subprocess.run(["bash", str(REPO / "deploy" / "helm" / "tools" / "ensure-tools.sh")], capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]
    found = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
    assert Path(found["helm"]).exists() and Path(found["k8svalidate"]).exists(), found
    return found


def helm(tools, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tools["helm"], *args], capture_output=True, text=True, timeout=120)


def render(tools, *values: str) -> list[dict]:
    out = helm(tools, "template", "taskring", str(CHART), "--namespace", "jobs", *values)
    assert out.returncode == 0, out.stderr
    checked = subprocess.run([tools["k8svalidate"], *CRDS], input=out.stdout, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def one(objects: list[dict], kind: str) -> dict:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def node_env(objects: list[dict]) -> tuple[dict, dict[str, str]]:
    """(node container, the environment it would see: its ConfigMap, then its own variables)."""
    pod = one(objects, "StatefulSet")["spec"]["template"]["spec"]
    [node] = [c for c in pod["containers"] if c["name"] == "node"]
    env = dict(one(objects, "ConfigMap")["data"])
    for var in node["env"]:
        env[var["name"]] = var.get("value") or ("taskring-0" if "fieldRef" in var["valueFrom"] else "secret")
    return node, env


def test_lint_passes_with_the_defaults_and_with_every_part_on(tools):
    for values in ((), ALL_ON, ("--set", "operator.enabled=true"),
                   (*ALL_ON, "--set", "operator.enabled=true", "--set", "operator.clientTlsSecret=op-tls")):
        out = helm(tools, "lint", "--strict", str(CHART), *values)
        assert out.returncode == 0, out.stdout + out.stderr


def test_the_defaults_render_a_node_that_reads_back_as_configured(tools):
    objects = render(tools)
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "Job", "PodDisruptionBudget", "Service", "Service",
                                                  "StatefulSet"]
    node, env = node_env(objects)
    assert {n for n in env if n.startswith("TASKRING_")} <= _from_env_variables()
    config = NodeConfig.from_env(env)
    assert (config.slot_count, config.grpc_port, config.admin_port, config.node_id) == (64, 7070, 7080, "taskring-0")
    assert node["readinessProbe"]["grpc"] == {"port": 7070}
    assert node["livenessProbe"]["httpGet"]["path"] == "/healthz"
    job = one(objects, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert one(objects, "StatefulSet")["spec"]["replicas"] == 3


def test_security_monitoring_and_shards_render_as_the_kustomize_component_does(tools):
    objects = render(tools, *ALL_ON, "--set", "mysql.shards=db2:3306/taskring",
                     "--set", "mysql.slotShards=0-31:0\\,32-63:1", "--set", "extraEnv.TASKRING_HIGH_RESERVE_SHARE=0.1")
    node, env = node_env(objects)
    config = NodeConfig.from_env({**env, **{k: "/dev/null" for k in env if k.endswith("_FILE")}})
    assert config.tls is not None and config.executor_tls is not None and len(config.slot_shards or ()) == 64
    assert env["TASKRING_HIGH_RESERVE_SHARE"] == "0.1"
    # A gRPC probe has no TLS: readiness is /readyz over HTTPS, as components/security does.
    assert node["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin", "scheme": "HTTPS"}
    assert "grpc" not in node["readinessProbe"]
    assert {m["mountPath"] for m in node["volumeMounts"]} == {"/etc/taskring/tokens", "/etc/taskring/tls",
                                                              "/etc/taskring/executor-tls"}
    rules = one(objects, "PrometheusRule")["spec"]
    assert rules == yaml.safe_load((REPO / "deploy" / "prometheus" / "rules.yml").read_text())
    assert one(objects, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "https"


@pytest.mark.parametrize("values, named", [
    (("--set", "slots=0"), "slots"),
    (("--set", "replicaz=3"), "replicaz"),
    (("--set", "extraEnv.NOT_OURS=1"), "NOT_OURS"),
    (("--set", "mysql.port=70000"), "port"),
])
def test_bad_values_are_refused_naming_the_value(tools, values, named):
    out = helm(tools, "template", "taskring", str(CHART), *values)
    assert out.returncode != 0 and named in out.stderr, out.stderr


def test_the_operator_is_off_by_default_and_renders_its_deployment_rbac_and_crd(tools):
    assert not [o for o in render(tools) if o["kind"] in ("Deployment", "CustomResourceDefinition", "ClusterRole")]
    objects = render(tools, "--set", "operator.enabled=true", "--set", "operator.tokenSecret=taskring-operator",
                     "--set", "operator.namespaces={jobs,batch}")
    crd = one(objects, "CustomResourceDefinition")
    assert crd == yaml.safe_load((REPO / "deploy" / "operator" / "crd.yaml").read_text())
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"] == ["python", "-m", "taskring_operator"]
    env = {v["name"]: v.get("value", "secret") for v in container["env"]}
    assert env == {"TASKRING_OPERATOR_NODES": "taskring:7070",
                   "TASKRING_KAFKA": "kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092",
                   "TASKRING_TOPIC_PREFIX": "taskring.tasks",
                   "TASKRING_OPERATOR_TOPIC_REPLICATION": "3", "TASKRING_OPERATOR_NAMESPACES": "jobs,batch",
                   "TASKRING_OPERATOR_TOKEN": "secret", "TASKRING_OPERATOR_HEALTH_PORT": "8080"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    rules = one(objects, "ClusterRole")["rules"]
    assert {"apiGroups": ["taskring.io"], "resources": ["asyncjobconfigs/status"],
            "verbs": ["get", "patch", "update"]} in rules
    without_crd = render(tools, "--set", "operator.enabled=true", "--set", "operator.installCRD=false")
    assert not [o for o in without_crd if o["kind"] == "CustomResourceDefinition"]


def test_the_operator_speaks_mutual_tls_with_security_on_and_bad_values_are_refused(tools):
    no_cert = helm(tools, "template", "taskring", str(CHART), "--set", "operator.enabled=true", *ALL_ON)
    assert no_cert.returncode != 0 and "operator.clientTlsSecret" in no_cert.stderr, no_cert.stderr
    objects = render(tools, *ALL_ON, "--set", "operator.enabled=true", "--set", "operator.clientTlsSecret=op-tls")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {v["name"]: v.get("value") for v in container["env"]}
    assert (env["TASKRING_CA_FILE"], env["TASKRING_CLIENT_CERT_FILE"], env["TASKRING_CLIENT_KEY_FILE"]) == (
        "/etc/taskring/tls/ca.crt", "/etc/taskring/client-tls/tls.crt", "/etc/taskring/client-tls/tls.key")
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert secrets["tls"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]   # not the nodes' key
    assert secrets["client-tls"]["secretName"] == "op-tls"
    bad = helm(tools, "template", "taskring", str(CHART), "--set", "operator.topicReplication=0")
    assert bad.returncode != 0 and "topicReplication" in bad.stderr, bad.stderr


def test_the_charts_crd_is_deploy_operators():
    assert ((CHART / "files" / "asyncjobconfig-crd.yaml").read_bytes()
            == (REPO / "deploy" / "operator" / "crd.yaml").read_bytes())


def test_the_charts_alert_rules_are_deploy_prometheus_rules():
    assert (CHART / "files" / "rules.yml").read_bytes() == (REPO / "deploy" / "prometheus" / "rules.yml").read_bytes()


def test_the_validator_passes_its_own_tests():
    """k8svalidate's Go tests: an unknown field, a wrong type, an unknown kind, a removed API
    version, a selector that does not select the template each refused, naming it."""
    here = REPO / "deploy" / "helm" / "tools" / "k8svalidate"
    for step in (["go", "vet", "./..."], ["go", "test", "-count=1", "./..."]):
        out = subprocess.run(step, cwd=here, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
