"""The operator's process: `python -m taskring_operator` (console script `taskring-operator`).

Reads its settings from the environment (config.py), connects to the cluster's API and to Kafka,
and runs kopf until SIGTERM. One replica: kopf runs standalone (no peering objects), so the
Deployment keeps replicas at 1 with the Recreate strategy.
"""
from __future__ import annotations

import logging
import os
import sys

import kopf

from taskring import Client, tls_credentials
from taskring_operator.config import OperatorConfig
from taskring_operator.handlers import build_registry
from taskring_operator.reconcile import Deps
from taskring_operator.settings import Registrar
from taskring_operator.topics import KafkaTopics


def build_deps(config: OperatorConfig, client: Client) -> Deps:
    return Deps(topics=KafkaTopics(config.kafka, replication=config.replication),
                registrar=Registrar(client.policies, client.cron), topic_prefix=config.topic_prefix)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = OperatorConfig.from_env(os.environ)
        credentials = (tls_credentials(config.ca_file, config.client_cert_file, config.client_key_file)
                       if config.ca_file else None)
    except (ValueError, OSError) as exc:   # named by the variable or the file that is wrong
        print(f"taskring-operator: {exc}", file=sys.stderr)
        return 2
    with Client(config.nodes, token=config.token, rpc_timeout_s=config.rpc_timeout_s,
                credentials=credentials) as client:
        registry = build_registry(build_deps(config, client))
        kopf.run(registry=registry, standalone=True, clusterwide=not config.namespaces,
                 namespaces=config.namespaces, liveness_endpoint=config.liveness_endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
