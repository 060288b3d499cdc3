"""kopf's wiring: the AsyncJobConfig handlers, registered on a registry built for one set of deps.

No module-level registration: `build_registry(deps)` returns a registry whose handlers close over
`deps`, so the process (__main__.py) and the tests wire the same handlers to their own clients.
The handlers are plain functions: kopf runs them in its thread pool, which suits the blocking
gRPC and Kafka admin calls they make.
"""
from __future__ import annotations

import logging
from typing import Any

import kopf

from taskring.errors import TaskringError
from taskring_operator.reconcile import Deps, reconcile
from taskring_operator.spec import SpecError, parse_spec
from taskring_operator.status import ERROR, RECONCILING

GROUP, VERSION, PLURAL = "taskring.io", "v1alpha1", "asyncjobconfigs"
RETRY_DELAY_S = 10.0
"""How soon a reconcile that hit something unavailable (a node, Kafka) is tried again."""


def configure(settings: kopf.OperatorSettings) -> None:
    """kopf's settings for this operator.

    Progress and the last handled spec are kept in annotations, not in `status`, so the status
    holds only what the operator reports (conditions, observedGeneration, what it registered)."""
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="taskring.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="taskring.io")
    settings.persistence.finalizer = "taskring.io/asyncjobconfig"
    # The handlers block on gRPC and Kafka admin calls in kopf's thread pool; a few at once is
    # plenty for one resource per task type, and bounds the calls made to the cluster.
    settings.execution.max_workers = 4


def on_reconcile(deps: Deps):
    def reconcile_handler(spec: Any, status: Any, meta: Any, name: str | None, namespace: str | None,
                          patch: kopf.Patch, logger: logging.Logger | Any, **_: Any) -> None:
        resource = f"{namespace}/{name}"
        result = reconcile(dict(spec), resource, meta.get("generation"), dict(status), deps)
        # kopf applies the patch however the handler ends, so a refusal's status is written too.
        patch.status.update(result.status)
        outcome = result.outcome
        if outcome.phase == ERROR:
            # Not retried: nothing changes until the spec does (an update runs this again).
            raise kopf.PermanentError(f"{outcome.reason}: {outcome.message}")
        if outcome.phase == RECONCILING:
            raise kopf.TemporaryError(f"{outcome.reason}: {outcome.message}", delay=RETRY_DELAY_S)
        logger.info(f"{resource}: {outcome.message}")
    return reconcile_handler


def on_delete(deps: Deps):
    def retire_handler(spec: Any, name: str | None, namespace: str | None, logger: logging.Logger | Any,
                       **_: Any) -> None:
        resource = f"{namespace}/{name}"
        try:
            parsed = parse_spec(dict(spec))
        except SpecError as exc:
            # A spec that never parsed registered nothing under its name: nothing to retire.
            logger.info(f"{resource}: not retired, its spec was refused ({exc})")
            return
        try:
            done = deps.registrar.retire(parsed, resource)
        except TaskringError as exc:
            # The finalizer stays until retiring succeeds: the resource is not gone before the type is.
            raise kopf.TemporaryError(f"retiring {parsed.namespace}/{parsed.task_type}: {exc}",
                                      delay=RETRY_DELAY_S) from exc
        logger.info(f"{resource}: {parsed.delete_policy}: {'; '.join(done)}")
    return retire_handler


def build_registry(deps: Deps) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    # kopf's own logins, no client library: the pod's service account inside the cluster, a
    # kubeconfig ($KUBECONFIG or ~/.kube/config) outside it. Each returns None where it has nothing.
    kopf.on.login(registry=registry, id="service-account")(kopf.login_with_service_account)
    kopf.on.login(registry=registry, id="kubeconfig")(kopf.login_with_kubeconfig)
    handler = on_reconcile(deps)
    for cause in (kopf.on.create, kopf.on.update, kopf.on.resume):
        cause(GROUP, VERSION, PLURAL, registry=registry, id="reconcile")(handler)
    kopf.on.delete(GROUP, VERSION, PLURAL, registry=registry, id="retire")(on_delete(deps))
    kopf.on.startup(registry=registry, id="configure")(lambda settings, **_: configure(settings))
    return registry
