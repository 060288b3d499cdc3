"""The operator's own settings, from its environment (the chart's operator Deployment sets them)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    nodes: str
    """gRPC target of the cluster's API (TASKRING_OPERATOR_NODES, e.g. "taskring:7070")."""
    kafka: str
    """Kafka bootstrap servers (TASKRING_KAFKA, as the nodes')."""
    topic_prefix: str = "taskring.tasks"
    """TASKRING_TOPIC_PREFIX, as the nodes': task topics are <prefix>.high|normal|low."""
    token: str | None = None
    """The API token (TASKRING_OPERATOR_TOKEN, or the first line of TASKRING_OPERATOR_TOKEN_FILE);
    it needs the `read`, `policy_write` and `cron_write` calls for the namespaces it manages (docs/security.md)."""
    replication: int = 1
    """Replication factor of topics the operator creates (TASKRING_OPERATOR_TOPIC_REPLICATION)."""
    namespaces: tuple[str, ...] = ()
    """Kubernetes namespaces watched (TASKRING_OPERATOR_NAMESPACES, comma-separated); empty: all."""
    ca_file: str | None = None
    """TLS to the nodes: the CA their certificate is checked against (TASKRING_CA_FILE, as the
    shell commands'); None: plain text."""
    client_cert_file: str | None = None
    client_key_file: str | None = None
    """Mutual TLS: the operator's client certificate and key (TASKRING_CLIENT_CERT_FILE, _KEY_FILE)."""
    health_port: int = 8080
    """kopf's liveness endpoint, GET /healthz on this port (TASKRING_OPERATOR_HEALTH_PORT; 0: none)."""
    rpc_timeout_s: float = 10.0

    @property
    def liveness_endpoint(self) -> str | None:
        return f"http://0.0.0.0:{self.health_port}/healthz" if self.health_port else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OperatorConfig:
        """Raises ValueError naming the variable that is missing or wrong."""
        def need(name: str) -> str:
            value = env.get(name, "").strip()
            if not value:
                raise ValueError(f"{name}: is required")
            return value

        token = env.get("TASKRING_OPERATOR_TOKEN") or None
        token_file = env.get("TASKRING_OPERATOR_TOKEN_FILE")
        if token is None and token_file:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().strip() or None
        replication = env.get("TASKRING_OPERATOR_TOPIC_REPLICATION", "1")
        if not replication.isdigit() or int(replication) < 1:
            raise ValueError(f"TASKRING_OPERATOR_TOPIC_REPLICATION: must be a whole number >= 1, got {replication!r}")
        health = env.get("TASKRING_OPERATOR_HEALTH_PORT", "8080")
        if not health.isdigit() or int(health) > 65535:
            raise ValueError(f"TASKRING_OPERATOR_HEALTH_PORT: must be a port (0: none), got {health!r}")
        ca = env.get("TASKRING_CA_FILE") or None
        cert, key = env.get("TASKRING_CLIENT_CERT_FILE") or None, env.get("TASKRING_CLIENT_KEY_FILE") or None
        if ca is None and (cert or key):
            raise ValueError("TASKRING_CLIENT_CERT_FILE/KEY_FILE: need TASKRING_CA_FILE (mutual TLS is TLS first)")
        if (cert is None) != (key is None):
            raise ValueError("TASKRING_CLIENT_CERT_FILE and TASKRING_CLIENT_KEY_FILE: give both or neither")
        namespaces = tuple(n.strip() for n in env.get("TASKRING_OPERATOR_NAMESPACES", "").split(",") if n.strip())
        return cls(nodes=need("TASKRING_OPERATOR_NODES"), kafka=need("TASKRING_KAFKA"),
                   topic_prefix=env.get("TASKRING_TOPIC_PREFIX") or "taskring.tasks", token=token,
                   replication=int(replication), namespaces=namespaces, health_port=int(health),
                   ca_file=ca, client_cert_file=cert, client_key_file=key)
