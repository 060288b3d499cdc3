"""The deploy artifacts (deploy/kubernetes, deploy/prometheus, deploy/grafana) against the code.

No servers and no cluster: every YAML and JSON file parses; every metric and label the rules
and the dashboard name is one dispatcher/base/metrics.py exports; the StatefulSet's ports, probes
and environment agree with dispatcher/base/config.py and with what dispatcher/admin/server.py serves; every
alert has its annotations and a runbook. A renamed metric, variable, port or probe path fails
here instead of in production.
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import cast

import pytest
import yaml  # PyYAML, in the dev extra

from dispatcher.admin.server import AdminServer
from dispatcher.base.config import ExecutorTlsConfig, NodeConfig, TlsConfig
from dispatcher.base.metrics import NodeMetrics

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
# The manifests; K8S itself only includes them (kustomize refuses an overlay inside the
# directory of the kustomization it includes, and K8S holds overlays/ and components/).
BASE = K8S / "base"
# The node's security settings (a kustomize Component) and the example overlay using it.
SECURITY = K8S / "components" / "security"
SECURE = K8S / "overlays" / "secure"
PROM = ROOT / "deploy" / "prometheus"
GRAFANA = ROOT / "deploy" / "grafana"
RULES = PROM / "rules.yml"
DASHBOARD = GRAFANA / "taskring.json"

# Labels Prometheus adds to every scraped series (deploy/prometheus/scrape.yml), plus `le`.
SCRAPE_LABELS = {"job", "instance", "kubernetes_namespace"}
# Metrics that are not the node's own: Prometheus' synthetic `up`.
OTHER_METRICS = {"up"}


# ---------------------------------------------------------------- loading

def _yaml_files() -> list[pathlib.Path]:
    return sorted(p for d in (K8S, PROM, GRAFANA) for p in d.rglob("*") if p.suffix in (".yaml", ".yml"))


def _load_all(path: pathlib.Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _kustomization() -> dict:
    return yaml.safe_load((BASE / "kustomization.yaml").read_text())


def _objects() -> list[dict]:
    out = []
    for name in _kustomization()["resources"]:
        out.extend(_load_all(BASE / name))
    return out


def _one(kind: str, *, objects: list[dict] | None = None, **where) -> dict:
    """The one object of `kind` whose metadata has `where`, among the base's manifests or `objects`."""
    found = [o for o in (_objects() if objects is None else objects) if o["kind"] == kind
             and all(o["metadata"].get(k) == v for k, v in where.items())]
    assert len(found) == 1, f"expected one {kind} {where or ''}, found {len(found)}"
    return found[0]


def _statefulset() -> dict:
    return _one("StatefulSet")


def _node_container() -> dict:
    containers = _statefulset()["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "the dispatcher pod has one container"
    return containers[0]


def _configmap_data() -> dict[str, str]:
    return _one("ConfigMap", name="taskring-config")["data"]


def _pod_specs() -> list[dict]:
    return [o["spec"]["template"]["spec"] for o in _objects() if o["kind"] in ("StatefulSet", "Job")]


def _all_containers() -> list[dict]:
    return [c for spec in _pod_specs() for c in spec.get("initContainers", []) + spec["containers"]]


def _container_env(container: dict, objects: list[dict] | None = None) -> dict[str, str]:
    """The environment a container would see, with placeholders for references; ConfigMaps
    from the base's manifests or from `objects` (a build)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        ref = source["configMapRef"]["name"]
        env.update(_one("ConfigMap", objects=objects, name=ref)["data"])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif "fieldRef" in var["valueFrom"]:
            assert var["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
            env[var["name"]] = "taskring-0"
        else:
            env[var["name"]] = "placeholder-secret"
    return env


def _node_config() -> NodeConfig:
    return NodeConfig.from_env(_container_env(_node_container()))


class _AskedFor(Mapping[str, str]):
    """An empty environment that notes every name looked up in it (`get`, `in`, `[]`)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.names.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _from_env_variables() -> set[str]:
    """Every TASKRING_* name that NodeConfig.from_env reads: the names in its source, and
    those it looks up through helpers that build them (parse_executor_tls reads
    f"TASKRING_EXECUTOR_{v}")."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(NodeConfig.from_env)))
    in_source = {n.value for n in ast.walk(tree)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("TASKRING_")}
    asked = _AskedFor()
    NodeConfig.from_env(cast(dict[str, str], asked))
    return in_source | {n for n in asked.names if n.startswith("TASKRING_")}


def _rules() -> dict:
    return yaml.safe_load(RULES.read_text())


def _rule_list() -> list[dict]:
    return [r for g in _rules()["groups"] for r in g["rules"]]


def _alerts() -> list[dict]:
    return [r for r in _rule_list() if "alert" in r]


def _recorded() -> dict[str, str]:
    return {r["record"]: r["expr"] for r in _rule_list() if "record" in r}


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _panels() -> list[dict]:
    out = []
    for p in _dashboard()["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows keep theirs inside
    return out


def _dashboard_exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p.get("targets", [])]


# ---------------------------------------------------------------- the node's metrics

def _exported() -> tuple[set[str], set[str], dict[str, list[float]]]:
    """(series names, label names, histogram buckets) of a fresh NodeMetrics, as
    Prometheus sees them: counters as *_total, histograms as *_bucket/_sum/_count."""
    metrics = NodeMetrics()
    names: set[str] = set()
    labels: set[str] = {"le"}
    for metric in vars(metrics).values():
        labelnames = getattr(metric, "_labelnames", None)
        if labelnames:
            labels.update(labelnames)
            metric.labels(*["x"] * len(labelnames))  # a child, so the family shows its samples
    buckets: dict[str, list[float]] = {}
    for family in metrics.registry.collect():
        if family.type == "counter":
            names.update({family.name + "_total", family.name + "_created"})
        elif family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count", "_created"))
            buckets[family.name] = sorted(float(s.labels["le"]) for s in family.samples
                                          if s.name.endswith("_bucket") and s.labels["le"] != "+Inf")
        else:
            names.add(family.name)
    return names, labels, buckets


# ---------------------------------------------------------------- a small PromQL lexer

_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
             "bool", "offset", "inf", "nan", "atan2"}
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|\[[^\]]*\]|[A-Za-z_:][A-Za-z0-9_:]*'
                    r'|\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*\b'  # a duration (offset 15m)
                    r'|\d+(?:\.\d+)?(?:e[+-]?\d+)?|=~|!~|!=|==|>=|<=|[(){}=,<>+\-*/^%]')


def _promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) an expression uses. Functions and aggregations
    (identifiers before `(`), keywords, strings, durations and numbers are dropped."""
    expr = expr.replace("$__rate_interval", "5m")
    tokens = _TOKEN.findall(expr)
    metrics: set[str] = set()
    labels: set[str] = set()
    depth_braces = 0
    in_grouping = False
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "{":
            depth_braces += 1
        elif tok == "}":
            depth_braces -= 1
        elif tok == ")" and in_grouping:
            in_grouping = False
        elif tok.lower() in _GROUPING:
            in_grouping = nxt == "("
        elif not re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", tok) or tok.lower() in _KEYWORDS:
            continue
        elif depth_braces or in_grouping:
            labels.add(tok)
        elif nxt == "(" or nxt.lower() in ("by", "without"):
            continue  # a function, or an aggregation (`sum by (x) (...)`)
        else:
            metrics.add(tok)
    return metrics, labels


def test_the_promql_lexer_finds_metrics_and_labels():
    metrics, labels = _promql_names(
        'histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{x="y:z", w=~"$job"}[$__rate_interval])))'
        ' > 1 and on (job) b:c:d unless ignoring (q) up == 0 or max without (r) (e offset 1h30m) > 2.5e3')
    assert metrics == {"a_bucket", "b:c:d", "up", "e"}
    assert labels == {"job", "le", "x", "w", "q", "r"}


# ---------------------------------------------------------------- files parse

def test_every_yaml_file_parses():
    files = _yaml_files()
    assert {p.name for p in files} >= {"kustomization.yaml", "statefulset.yaml", "rules.yml", "scrape.yml"}
    for path in files:
        docs = _load_all(path)
        assert docs, f"{path.relative_to(ROOT)} is empty"
        assert all(isinstance(d, dict) for d in docs), path


def test_the_dashboard_is_json():
    assert isinstance(_dashboard(), dict)


# ---------------------------------------------------------------- kubernetes

def test_the_kustomization_lists_every_manifest_and_nothing_missing():
    listed = set(_kustomization()["resources"])
    on_disk = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    kinds = sorted(o["kind"] for o in _objects())
    assert kinds == sorted(["ConfigMap", "Job", "StatefulSet", "Service", "Service", "PodDisruptionBudget"])


def test_manifests_are_namespace_agnostic_and_commit_no_secret():
    assert "namespace" not in _kustomization()
    for obj in _objects():
        assert {"apiVersion", "kind", "metadata"} <= obj.keys()
        assert "namespace" not in obj["metadata"], f"{obj['kind']} {obj['metadata']['name']} names a namespace"
    # Every YAML file below deploy/kubernetes: the base, the root, components/ and overlays/.
    files = sorted(K8S.rglob("*.yaml"))
    assert {SECURITY / "kustomization.yaml", SECURE / "kustomization.yaml", BASE / "statefulset.yaml"} <= set(files)
    for path in files:
        for doc in _load_all(path):
            where = path.relative_to(ROOT)
            assert doc.get("kind") != "Secret", f"{where}: secret values must not be committed"
            if path.name == "kustomization.yaml":
                assert not doc.get("secretGenerator"), f"{where}: a secretGenerator commits the secret's values"
                assert "namespace" not in doc, f"{where} names a namespace"
    for key in _configmap_data():
        assert not re.search(r"TOKEN|PASSWORD|SECRET", key), f"{key} belongs in the Secret, not the ConfigMap"


def test_the_statefulset_is_shaped_for_the_ring():
    sts = _statefulset()
    spec, pod = sts["spec"], sts["spec"]["template"]["spec"]
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    # SIGTERM hands slots off; in-flight attempts may take ~30 s to finish.
    assert pod["terminationGracePeriodSeconds"] == 60
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    container = _node_container()
    assert container["image"].split("/")[-1].startswith("taskring")
    assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    # The node id is the pod name: stable across restarts, unique in the set.
    node_id = next(v for v in container["env"] if v["name"] == "TASKRING_NODE_ID")
    assert node_id["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert _node_config().node_id == "taskring-0"


def test_the_admin_token_comes_from_a_secret_reference():
    for container in _all_containers():
        for var in container.get("env", []):
            if var["name"] in ("TASKRING_ADMIN_TOKEN", "TASKRING_MYSQL_PASSWORD"):
                assert "secretKeyRef" in var["valueFrom"], f"{var['name']} must come from a Secret"
    token = next(v for v in _node_container()["env"] if v["name"] == "TASKRING_ADMIN_TOKEN")
    # Not optional: a node without a token would serve /metrics and /ring to anyone.
    assert not token["valueFrom"]["secretKeyRef"].get("optional", False)
    assert _node_config().admin_token == "placeholder-secret"


def _assert_every_variable_is_read(containers: list[dict], objects: list[dict] | None = None) -> None:
    """Every TASKRING_* variable of each container (its ConfigMaps' included) is one
    NodeConfig.from_env reads, and every value parses and validates."""
    read = _from_env_variables()
    for container in containers:
        env = _container_env(container, objects)
        unknown = {k for k in env if k.startswith("TASKRING_")} - read
        assert not unknown, f"container {container['name']}: variables nobody reads: {sorted(unknown)}"
        NodeConfig.from_env(env)


def test_every_taskring_variable_is_one_from_env_reads():
    read = _from_env_variables()
    assert {"TASKRING_ZK", "TASKRING_KAFKA", "TASKRING_ADMIN_TOKEN", "TASKRING_PARTITIONS"} <= read
    # Read through parse_executor_tls, whose names are built, not written out.
    assert {"TASKRING_EXECUTOR_CA_FILE", "TASKRING_EXECUTOR_CLIENT_KEY_FILE"} <= read
    unknown = {k for k in _configmap_data() if k.startswith("TASKRING_")} - read
    assert not unknown, f"ConfigMap sets variables NodeConfig.from_env ignores: {sorted(unknown)}"
    _assert_every_variable_is_read(_all_containers())


def test_the_configmap_actually_changes_the_config():
    """Each ConfigMap value lands in NodeConfig (catches a key read under another name)."""
    config = NodeConfig.from_env(_configmap_data())
    data = _configmap_data()
    assert config.zookeeper.hosts == data["TASKRING_ZK"]
    assert config.kafka.bootstrap_servers == data["TASKRING_KAFKA"]
    assert config.mysql.host == data["TASKRING_MYSQL_HOST"]
    assert config.slot_count == int(data["TASKRING_PARTITIONS"])


def test_every_default_slot_count_is_the_nodes():
    """The local stack, the kustomize ConfigMap and the chart make topics of as many partitions as a
    node has slots by default: a node of P slots produces to partitions 0..P-1, so a topic of fewer
    would refuse the tasks of the missing slots."""
    default = NodeConfig(node_id="x").slot_count
    stack_sh = (ROOT / "deploy" / "local" / "stack.sh").read_text()
    stackctl = (ROOT / "deploy" / "local" / "stackctl.py").read_text()
    chart = ROOT / "deploy" / "helm" / "taskring"
    found = {
        "stack.sh": re.findall(r'TASKRING_PARTITIONS="\$\{TASKRING_PARTITIONS:-(\d+)\}"', stack_sh),
        "stackctl.py": re.findall(r'get\("TASKRING_PARTITIONS", "(\d+)"\)', stackctl),
        "configmap.yaml": [_configmap_data()["TASKRING_PARTITIONS"]],
        "values.yaml": [str(yaml.safe_load((chart / "values.yaml").read_text())["slots"])],
        "the chart's README": re.findall(r"^\| `slots` \| (\d+) \|", (chart / "README.md").read_text(), re.M),
    }
    assert found == {where: [str(default)] for where in found}


def test_ports_and_probes_match_the_node():
    defaults, config = NodeConfig(node_id="x"), _node_config()
    assert (config.grpc_port, config.admin_port) == (defaults.grpc_port, defaults.admin_port) == (7070, 7080)
    container = _node_container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": config.grpc_port, "admin": config.admin_port}

    def port_of(probe: dict) -> int:
        port = probe["httpGet"]["port"]
        return ports[port] if isinstance(port, str) else port

    for kind in ("livenessProbe", "startupProbe"):
        probe = container[kind]
        assert port_of(probe) == config.admin_port, kind
        assert "httpHeaders" not in probe["httpGet"], "probes need no token"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    # Readiness is gRPC health on the API's port (a number: a gRPC probe takes no port name),
    # for the whole server (no service named: dispatcher/api/health.py answers "" too).
    readiness = container["readinessProbe"]
    assert set(readiness) & {"httpGet", "tcpSocket", "exec"} == set()
    assert readiness["grpc"]["port"] == config.grpc_port and not readiness["grpc"].get("service")



def test_the_probe_paths_answer_without_a_token_and_metrics_want_one():
    """Serve the admin endpoint the way a node does and ask it what the kubelet and
    Prometheus would: probes answer without a token (readiness says 503 when not ready),
    /metrics refuses without the token and serves with it."""
    container = _node_container()
    state = {"ready": (False, "holding: ownership in doubt")}
    server = AdminServer(host="127.0.0.1", port=0, token="t0ken", ring=lambda: {}, ready=lambda: state["ready"],
                         alive=lambda: (True, "serving"), registry=NodeMetrics().registry)
    server.start()

    def get(path: str, token: str | None = None) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code

    try:
        assert get(container["livenessProbe"]["httpGet"]["path"]) == 200
        assert get(container["startupProbe"]["httpGet"]["path"]) == 200
        # Readiness over HTTP is the secure overlay's (the base asks gRPC health, tests/unit/
        # test_grpc_health.py): /readyz says 503 until ready.
        assert get("/readyz") == 503
        state["ready"] = (True, "ready")
        assert get("/readyz") == 200
        annotations = _statefulset()["spec"]["template"]["metadata"]["annotations"]
        assert get(annotations["prometheus.io/path"]) == 401
        assert get(annotations["prometheus.io/path"], "t0ken") == 200
    finally:
        server.stop()


def test_the_node_listens_beyond_loopback():
    """Probes and Services reach the pod IP: a node bound to 127.0.0.1 fails both."""
    script = " ".join(_node_container().get("args", []) + _node_container().get("command", []))
    override = re.search(r"grpc_host\s*=\s*['\"]([^'\"]+)['\"]", script)
    host = override.group(1) if override else _node_config().grpc_host
    assert host not in ("127.0.0.1", "localhost", "::1"), f"the node binds {host}"


def test_inline_scripts_compile_and_import_what_exists():
    scripts = 0
    for container in _all_containers():
        if container.get("command", [])[-1:] != ["-c"]:
            continue
        (source,) = container["args"]
        tree = compile(source, f"<{container['name']}>", "exec", ast.PyCF_ONLY_AST)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module is not None, f"{container['name']}: relative import in an inline script"
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{container['name']}: {node.module}.{alias.name} is gone"
        scripts += 1
    assert scripts == 1  # the schema wait


def test_services_and_pdb_select_the_dispatcher_pods():
    pod_labels = _statefulset()["spec"]["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in _node_container()["ports"]}
    headless = _one("Service", name=_statefulset()["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    grpc = _one("Service", name="taskring")
    assert grpc["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert [p["targetPort"] for p in grpc["spec"]["ports"]] == ["grpc"]
    for service in (headless, grpc):
        assert service["spec"]["selector"].items() <= pod_labels.items()
        for port in service["spec"]["ports"]:
            target = port["targetPort"]
            assert (ports[target] if isinstance(target, str) else target) == port["port"] == ports[port["name"]]
    pdb = _one("PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_the_migration_job_uses_the_same_settings():
    job = _one("Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "dispatcher.store.migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")
    assert container["image"] == _node_container()["image"]
    assert NodeConfig.from_env(_container_env(container)).mysql == _node_config().mysql


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_builds():
    out = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert len([d for d in yaml.safe_load_all(out.stdout) if d]) == len(_objects())


# ---------------------------------------------------------------- kubernetes: the security component

# What components/security sets on the node: each file variable, and the Secret and key
# the file must come from (the kubernetes.io/tls layout: tls.crt, tls.key, ca.crt).
SECURITY_FILES = {
    "TASKRING_TOKENS_FILE": ("taskring-tokens", "tokens.json"),
    "TASKRING_TLS_CERT_FILE": ("taskring-tls", "tls.crt"),
    "TASKRING_TLS_KEY_FILE": ("taskring-tls", "tls.key"),
    "TASKRING_TLS_CLIENT_CA_FILE": ("taskring-tls", "ca.crt"),
    "TASKRING_EXECUTOR_CA_FILE": ("taskring-executor-tls", "ca.crt"),
    "TASKRING_EXECUTOR_CLIENT_CERT_FILE": ("taskring-executor-tls", "tls.crt"),
    "TASKRING_EXECUTOR_CLIENT_KEY_FILE": ("taskring-executor-tls", "tls.key"),
}
SECURITY_SECRETS = {secret for secret, _ in SECURITY_FILES.values()}

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


@functools.cache
def _kustomize_output(path: pathlib.Path) -> str:
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _built(path: pathlib.Path) -> list[dict]:
    """The objects `kubectl kustomize path` builds (parsed afresh: callers may change them)."""
    return [d for d in yaml.safe_load_all(_kustomize_output(path)) if d]


def _built_node(objects: list[dict]) -> tuple[dict, dict]:
    """(pod spec, node container) of the StatefulSet of a build."""
    pod = _one("StatefulSet", objects=objects)["spec"]["template"]["spec"]
    (node,) = [c for c in pod["containers"] if c["name"] == "node"]
    return pod, node


def _file_source(pod: dict, container: dict, path: str) -> tuple[dict, dict, str]:
    """The mount, its volume and the Secret key the file `path` of `container` comes from.
    The deepest mount that holds the path wins, as in the container."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in sorted(container.get("volumeMounts", []), key=lambda m: -len(m["mountPath"])):
        root = mount["mountPath"].rstrip("/")
        if mount.get("subPath"):
            if path != root:
                continue
            inside = mount["subPath"]
        elif path.startswith(root + "/"):
            inside = path[len(root) + 1:]
        else:
            continue
        secret = volumes[mount["name"]].get("secret")
        assert secret is not None, f"{path} is on volume {mount['name']}, which is not a Secret"
        if "items" not in secret:
            return mount, volumes[mount["name"]], inside  # the whole Secret: one file per key
        keys = [item["key"] for item in secret["items"] if item["path"] == inside]
        assert keys, f"{path}: volume {mount['name']} projects no key of {secret['secretName']} to {inside}"
        return mount, volumes[mount["name"]], keys[0]
    raise AssertionError(f"{path} is on no volume of container {container['name']}")


@needs_kubectl
def test_the_secure_overlay_builds_the_base_plus_the_component():
    component = yaml.safe_load((SECURITY / "kustomization.yaml").read_text())
    assert (component["apiVersion"], component["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component")
    overlay = yaml.safe_load((SECURE / "kustomization.yaml").read_text())
    assert [(SECURE / r).resolve() for r in overlay["resources"]] == [BASE.resolve()]
    assert [(SECURE / c).resolve() for c in overlay["components"]] == [SECURITY.resolve()]
    secure, base = _built(SECURE), _built(K8S)

    def names(objects: list[dict]) -> list[tuple[str, str]]:
        return sorted((o["kind"], o["metadata"]["name"]) for o in objects)

    # The same objects, no more: the Secrets are the operator's to create.
    assert names(secure) == names(base)
    assert len(secure) == len(_objects())
    assert all(o["kind"] != "Secret" for o in secure)


@needs_kubectl
def test_the_security_settings_are_variables_from_env_reads_and_land_in_the_config():
    objects = _built(SECURE)
    pod, node = _built_node(objects)
    set_here = {v["name"]: v["value"] for v in node["env"] if v["name"] in SECURITY_FILES}
    assert set_here.keys() == SECURITY_FILES.keys()
    _assert_every_variable_is_read(pod["initContainers"] + pod["containers"], objects)
    config = NodeConfig.from_env(_container_env(node, objects))
    assert config.tokens_file == set_here["TASKRING_TOKENS_FILE"]
    assert config.tls == TlsConfig(cert_file=set_here["TASKRING_TLS_CERT_FILE"],
                                   key_file=set_here["TASKRING_TLS_KEY_FILE"],
                                   client_ca_file=set_here["TASKRING_TLS_CLIENT_CA_FILE"])
    assert config.executor_tls == ExecutorTlsConfig(
        ca_file=set_here["TASKRING_EXECUTOR_CA_FILE"],
        client_cert_file=set_here["TASKRING_EXECUTOR_CLIENT_CERT_FILE"],
        client_key_file=set_here["TASKRING_EXECUTOR_CLIENT_KEY_FILE"])


@needs_kubectl
def test_each_security_file_is_mounted_from_its_secret_and_key():
    objects = _built(SECURE)
    pod, node = _built_node(objects)
    env = _container_env(node, objects)
    security = pod["securityContext"]
    for var, (secret_name, key) in SECURITY_FILES.items():
        mount, volume, projected = _file_source(pod, node, env[var])
        assert volume["secret"]["secretName"] == secret_name, var
        assert projected == key, f"{var}: {env[var]} is key {projected} of {secret_name}, not {key}"
        assert mount.get("readOnly") is True, f"{var}: mount {mount['name']} must be read-only"
        assert not volume["secret"].get("optional", False), f"{var}: a missing Secret must stop the pod"
        # Readable by the node (uid/gid 10001, non-root), by nobody else but root.
        item: dict = next((i for i in volume["secret"].get("items", []) if i["key"] == key), {})
        mode = item.get("mode", volume["secret"].get("defaultMode", 0o644))
        # With an fsGroup the kubelet gives the files that group, one the node's processes have.
        by_group = bool(mode & 0o040) and security.get("fsGroup") is not None
        assert by_group or mode & 0o004, f"{var}: mode {mode:o} lets uid {security['runAsUser']} not read it"
        assert not mode & 0o007, f"{var}: mode {mode:o} lets every user of the host read it"


@needs_kubectl
def test_the_tokens_file_is_not_mounted_with_subpath():
    """A subPath mount never sees a Secret update (the kubelet swaps a symlink in the
    volume's directory), and the node reloads its tokens file live only if it does."""
    objects = _built(SECURE)
    pod, node = _built_node(objects)
    path = _container_env(node, objects)["TASKRING_TOKENS_FILE"]
    mount, _, _ = _file_source(pod, node, path)
    assert "subPath" not in mount and "subPathExpr" not in mount
    assert mount["mountPath"].rstrip("/") == os.path.dirname(path)
    for container in pod["containers"] + pod.get("initContainers", []):
        for m in container.get("volumeMounts", []):
            source = next(v for v in pod["volumes"] if v["name"] == m["name"]).get("secret", {})
            if source.get("secretName") == "taskring-tokens":
                assert "subPath" not in m, f"{container['name']} mounts the tokens with subPath"


@needs_kubectl
def test_probes_are_https_in_the_secure_overlay_and_http_in_the_base():
    _, base = _built_node(_built(K8S))
    _, secure = _built_node(_built(SECURE))
    for kind in ("startupProbe", "livenessProbe"):
        assert base[kind]["httpGet"].get("scheme", "HTTP") == "HTTP", kind
        assert secure[kind]["httpGet"]["scheme"] == "HTTPS", kind
        # Only the scheme: the same path, port and thresholds.
        assert {**secure[kind], "httpGet": {**secure[kind]["httpGet"], "scheme": "HTTP"}} == \
            {**base[kind], "httpGet": {**base[kind]["httpGet"], "scheme": "HTTP"}}, kind
    # Readiness: gRPC health in the base; a gRPC probe has no TLS, so with TLS it is /readyz over
    # HTTPS, one handler only, the same thresholds.
    assert _secure_readiness_as_base(secure["readinessProbe"]) == base["readinessProbe"]
    assert "grpc" not in secure["readinessProbe"]


def _secure_readiness_as_base(probe: dict) -> dict:
    """The secure overlay's readiness probe with its HTTPS /readyz put back as the base's gRPC one."""
    assert probe["httpGet"] == {"path": "/readyz", "port": "admin", "scheme": "HTTPS"}, probe
    return {**{k: v for k, v in probe.items() if k != "httpGet"}, "grpc": {"port": 7070}}


@needs_kubectl
def test_the_component_changes_only_the_node_container_and_its_volumes():
    """Without the component, the base has none of it; with it, nothing else changes
    (the init container and the migration Job only talk to MySQL)."""
    base, secure = _built(K8S), _built(SECURE)
    base_pod, base_node = _built_node(base)
    assert not {v["name"] for v in base_node["env"]} & SECURITY_FILES.keys()
    assert not {k for k in _container_env(base_node, base) if k in SECURITY_FILES}
    assert not [v for v in base_pod["volumes"] if v.get("secret", {}).get("secretName") in SECURITY_SECRETS]
    assert _node_config().tls is None and _node_config().executor_tls is None and _node_config().tokens_file is None

    stripped = copy.deepcopy(secure)
    pod, node = _built_node(stripped)
    added = {v["name"] for v in pod["volumes"] if v.get("secret", {}).get("secretName") in SECURITY_SECRETS}
    assert len(added) == len(SECURITY_SECRETS)
    pod["volumes"] = [v for v in pod["volumes"] if v["name"] not in added]
    node["volumeMounts"] = [m for m in node["volumeMounts"] if m["name"] not in added]
    node["env"] = [v for v in node["env"] if v["name"] not in SECURITY_FILES]
    for kind in ("startupProbe", "livenessProbe"):
        assert node[kind]["httpGet"].pop("scheme") == "HTTPS"
    node["readinessProbe"] = _secure_readiness_as_base(node["readinessProbe"])
    assert stripped != secure

    def by_name(o: dict) -> tuple[str, str]:
        return o["kind"], o["metadata"]["name"]

    assert sorted(stripped, key=by_name) == sorted(base, key=by_name)


# ---------------------------------------------------------------- prometheus

def test_the_scrape_job_sends_the_token_and_keeps_the_namespace_label():
    jobs = {j["job_name"]: j for j in yaml.safe_load((PROM / "scrape.yml").read_text())["scrape_configs"]}
    job = jobs["taskring"]
    assert job["authorization"]["type"] == "Bearer" and job["authorization"]["credentials_file"]
    targets = {r.get("target_label") for r in job["relabel_configs"]}
    # taskring_no_executor_total has its own `namespace` label; a target label of that
    # name would overwrite it.
    _, labels, _ = _exported()
    assert not targets & labels, f"scrape labels collide with metric labels: {targets & labels}"
    assert {"instance", "kubernetes_namespace"} <= targets
    annotations = _statefulset()["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == _node_config().admin_port
    assert annotations["prometheus.io/scrape"] == "true"


def _promtool() -> str | None:
    """promtool on PATH, or the one deploy/local/bootstrap.sh links beside the venv's python
    (tests run as .venv/bin/python without the venv on PATH)."""
    return shutil.which("promtool", path=os.pathsep.join([str(pathlib.Path(sys.executable).parent),
                                                          os.environ.get("PATH", "")]))


def test_promtool_accepts_the_rules():
    promtool = _promtool()
    if promtool is None:
        # CI runs bootstrap.sh, which installs it: there, a missing promtool is a failure,
        # not a reason to leave the rules unchecked.
        assert os.environ.get("CI") != "true", "promtool not found: deploy/local/bootstrap.sh should have linked it"
        pytest.skip("promtool not installed (bash deploy/local/bootstrap.sh links it into .venv/bin)")
    out = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rule_list())} rules found" in out.stdout, out.stdout  # every rule was read


def test_rules_use_only_exported_metrics_and_labels():
    names, labels, _ = _exported()
    recorded = _recorded()
    known_labels = labels | SCRAPE_LABELS
    for rule in _rule_list():
        metrics, used_labels = _promql_names(rule["expr"])
        for name in metrics:
            if ":" in name:
                assert name in recorded, f"{rule.get('alert') or rule.get('record')}: {name} is not recorded"
            else:
                assert name in names | OTHER_METRICS, f"{rule.get('alert') or rule.get('record')}: no metric {name}"
        assert used_labels <= known_labels, f"{rule}: unknown labels {used_labels - known_labels}"
        for text in rule.get("annotations", {}).values():
            for label in re.findall(r"\$labels\.([A-Za-z_]\w*)", text):
                assert label in known_labels, f"{rule['alert']}: annotation uses unknown label {label}"


def test_recording_rule_names_name_their_metric():
    """level:metric:operation, where metric is an exported one (counters without _total)."""
    names, _, _ = _exported()
    for record, expr in _recorded().items():
        level, metric, operation = record.split(":")
        assert level and operation, record
        assert {metric, metric + "_total", metric + "_bucket"} & names, record
        used, _ = _promql_names(expr)
        assert any(u.startswith(metric) for u in used), f"{record} does not compute {metric}: {expr}"


def _expand(expr: str, recorded: dict[str, str]) -> set[str]:
    metrics, _ = _promql_names(expr)
    out: set[str] = set()
    for name in metrics:
        out |= _expand(recorded[name], recorded) if name in recorded else {name}
    return out


def test_every_required_alert_is_there():
    recorded = _recorded()
    by_metric: dict[str, list[str]] = {}
    for alert in _alerts():
        for metric in _expand(alert["expr"], recorded):
            by_metric.setdefault(metric, []).append(alert["alert"])
    for metric in ("taskring_tasks_dead_lettered_total", "taskring_task_retries_total",
                   "taskring_dispatch_lateness_seconds_bucket", "taskring_kafka_lag", "taskring_mysql_pending",
                   "taskring_zookeeper_connected", "taskring_tasks_dispatched_total", "taskring_fenced_writes_total",
                   "taskring_no_executor_total", "taskring_tasks_recovered_total",
                   "taskring_clock_offset_seconds", "taskring_task_outcomes_total", "taskring_executors",
                   "taskring_owned_slots"):
        assert by_metric.get(metric), f"no alert watches {metric}"


def test_alerts_have_annotations_severity_and_a_runbook():
    readme = (PROM / "README.md").read_text()
    headings = {h.strip() for h in re.findall(r"^###\s+(\S+)\s*$", readme, re.M)}
    alerts = _alerts()
    assert len({a["alert"] for a in alerts}) == len(alerts), "alert names repeat"
    for alert in alerts:
        name = alert["alert"]
        assert alert["labels"]["severity"] in ("warning", "critical"), name
        assert re.fullmatch(r"\d+[smh]", alert["for"]), name
        annotations = alert["annotations"]
        assert annotations["summary"].strip() and annotations["description"].strip(), name
        assert name in headings, f"deploy/prometheus/README.md has no runbook section '### {name}'"
        assert annotations["runbook"] == f"deploy/prometheus/README.md#{name.lower()}", name
    assert headings <= {a["alert"] for a in alerts}, "runbooks for alerts that do not exist"


def test_the_readme_documents_every_metric_with_its_type_and_labels():
    """The table under '## Metrics' in deploy/prometheus/README.md: one row per metric the
    node exports, with its type and label names (a label's values may follow in parentheses)."""
    readme = (PROM / "README.md").read_text()
    section = readme.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    documented: dict[str, tuple[str, set[str]]] = {}
    for row in re.findall(r"^\|\s*`(taskring_\w+)`\s*\|([^|]*)\|([^|]*)\|", section, re.M):
        name, kind, labels = row
        assert name not in documented, f"{name} is documented twice"
        documented[name] = (kind.strip(), set(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", labels))))
    metrics = NodeMetrics()
    exported = {family.name: (family.type, set(getattr(metric, "_labelnames", ())))
                for metric in vars(metrics).values() if hasattr(metric, "_labelnames")
                for family in metric.describe()}
    assert documented == exported


def test_the_lateness_threshold_is_a_bucket_boundary():
    """histogram_quantile interpolates inside a bucket; at a boundary, 'p99 > 1 s' means
    exactly 'more than 1% of dispatches were later than 1 s'."""
    _, _, buckets = _exported()
    alert = next(a for a in _alerts() if a["alert"] == "TaskringDispatchLatenessHigh")
    found = re.search(r">\s*([\d.]+)\s*$", alert["expr"].strip())
    assert found is not None, f"no '> threshold' at the end of {alert['expr']!r}"
    threshold = float(found.group(1))
    assert threshold in buckets["taskring_dispatch_lateness_seconds"]


# ---------------------------------------------------------------- grafana

REQUIRED_PANELS = {
    "Submitted/s by route": {"taskring_tasks_submitted_total"},
    "Dispatched/s": {"taskring_tasks_dispatched_total"},
    "Outcomes by kind": {"taskring_task_outcomes_total"},
    "Dead-lettered/s": {"taskring_tasks_dead_lettered_total"},
    "Retries by route": {"taskring_task_retries_total"},
    "Dispatch lateness p50 / p99 by source": {"taskring_dispatch_lateness_seconds_bucket"},
    "Heap size per node": {"taskring_heap_size"},
    "In-flight per node": {"taskring_in_flight"},
    "Owned slots per node": {"taskring_owned_slots"},
    "Kafka lag per partition": {"taskring_kafka_lag"},
    "MySQL pending per slot": {"taskring_mysql_pending"},
    "ZooKeeper connected per node": {"taskring_zookeeper_connected"},
    "Fenced writes": {"taskring_fenced_writes_total"},
}


def test_the_dashboard_has_a_prometheus_datasource_variable_used_everywhere():
    dash = _dashboard()
    assert 36 <= dash["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    ds = [v for v in variables.values() if v["type"] == "datasource"]
    assert len(ds) == 1 and ds[0]["query"] == "prometheus"
    ref = f"${{{ds[0]['name']}}}"
    for panel in _panels():
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == ref, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == ref, panel["title"]
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"]["uid"] == ref


def test_the_dashboard_has_the_required_panels_on_their_metrics():
    panels = {p["title"]: p for p in _panels()}
    for title, metrics in REQUIRED_PANELS.items():
        assert title in panels, f"no panel {title!r}"
        used = set().union(*(_promql_names(t["expr"])[0] for t in panels[title]["targets"]))
        assert metrics <= used, f"{title}: uses {used}"
    lateness = " ".join(t["expr"] for t in panels["Dispatch lateness p50 / p99 by source"]["targets"])
    assert "histogram_quantile(0.5," in lateness and "histogram_quantile(0.99," in lateness


def test_the_dashboard_uses_only_exported_metrics_and_labels():
    names, labels, _ = _exported()
    known_labels = labels | SCRAPE_LABELS
    recorded = _recorded()
    for panel in _panels():
        for target in panel.get("targets", []):
            metrics, used_labels = _promql_names(target["expr"])
            for name in metrics:
                assert name in names | set(recorded), f"{panel['title']}: no metric {name}"
            assert used_labels <= known_labels, f"{panel['title']}: unknown labels {used_labels - known_labels}"
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")):
                assert label in used_labels | known_labels, f"{panel['title']}: legend uses {label}"
    for var in _dashboard()["templating"]["list"]:
        if var["type"] == "query":
            metrics, _ = _promql_names(re.sub(r"^label_values\((.*)\)$", r"\1", var["definition"]).rsplit(",", 1)[0])
            assert metrics <= names, var["name"]


def test_the_dashboard_layout_is_sane():
    panels = _dashboard()["panels"]
    ids = [p["id"] for p in _panels()]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"{p['title']} overlaps another panel"
        cells |= mine
