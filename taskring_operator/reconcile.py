"""One reconcile of an AsyncJobConfig, in the order that keeps a refusal from changing anything.

    1. parse and check the spec                  refused: Error, nothing read or written
    2. read the topic, plan create/grow/nothing  fewer partitions than it has: Error, nothing written
    3. register the policy entry and cron rules  the server refuses a bad entry whole (INVALID_ARGUMENT)
    4. create or grow the topic                  last: Kafka's change cannot be taken back

Every refusal the author must fix ends in Error (not retried until the spec changes); anything
else that fails ends in Reconciling and is retried (an unreachable node or Kafka, a revision that
moved, a token that may not). Both are written to the status with the reason.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskring.errors import AlreadyExists, FailedPrecondition, InvalidArgument, PermissionDenied, TaskringError
from taskring_operator.settings import Registrar
from taskring_operator.spec import PRIORITIES, AsyncJobConfigSpec, SpecError, parse_spec
from taskring_operator.status import ERROR, READY, RECONCILING, Outcome, status_patch
from taskring_operator.topics import Topics, apply_topic, plan_topic


@dataclass(frozen=True, slots=True)
class Deps:
    """What a reconcile talks to, built once by the process (handlers.py, __main__.py)."""

    topics: Topics
    registrar: Registrar
    topic_prefix: str
    """Task topics are `<prefix>.<priority>`, as the nodes' TASKRING_TOPIC_PREFIX."""


def _cluster_refusal(exc: TaskringError) -> Outcome:
    """How a failed call to the cluster's API ends: Error when only a spec change can fix it."""
    if isinstance(exc, InvalidArgument | AlreadyExists):
        # A bad entry or rule (named by the server), or a cron rule name somebody else's rule has.
        return Outcome(ERROR, "RefusedByCluster", f"the cluster refused the settings: {exc}")
    if isinstance(exc, PermissionDenied):
        # The operator's token, not the spec: retried, so a fixed token is picked up.
        return Outcome(RECONCILING, "PermissionDenied", f"the operator's token may not do this: {exc}")
    if isinstance(exc, FailedPrecondition):
        return Outcome(RECONCILING, "RevisionMoved", f"the policy entry changed while it was read: {exc}")
    return Outcome(RECONCILING, "ClusterUnavailable", f"registering the settings: {exc}")


@dataclass(frozen=True, slots=True)
class Result:
    status: dict[str, Any]
    outcome: Outcome
    spec: AsyncJobConfigSpec | None = None


def reconcile(raw_spec: object, resource: str, generation: int | None, previous_status: Mapping[str, Any] | None,
              deps: Deps) -> Result:
    """Reconcile one resource (`resource` = "k8s-namespace/name"); never raises for a refusal."""
    def done(outcome: Outcome, extra: Mapping[str, Any] | None = None, spec: AsyncJobConfigSpec | None = None):
        return Result(status_patch(outcome, generation, previous_status, extra), outcome, spec)

    try:
        spec = parse_spec(raw_spec)
    except SpecError as exc:
        return done(Outcome(ERROR, "InvalidSpec", str(exc)))
    topic = spec.topic_name(deps.topic_prefix)
    try:
        task_topic = topic in {f"{deps.topic_prefix}.{p}" for p in PRIORITIES}
        plan = plan_topic(topic, deps.topics.partitions(topic), spec.topic.partitions, task_topic=task_topic)
    except SpecError as exc:
        return done(Outcome(ERROR, "PartitionsBelowTopic", str(exc)), spec=spec)
    except Exception as exc:   # Kafka unreachable or slow: try again later
        return done(Outcome(RECONCILING, "KafkaUnavailable", f"reading topic {topic}: {exc}"), spec=spec)
    try:
        registered = deps.registrar.register(spec, resource, generation or 0)
    except TaskringError as exc:
        return done(_cluster_refusal(exc), spec=spec)
    try:
        partitions = apply_topic(deps.topics, plan)
    except Exception as exc:
        return done(Outcome(RECONCILING, "KafkaUnavailable", f"{plan.action} topic {topic}: {exc}"), spec=spec)
    extra = {
        "topic": {"name": topic, "partitions": partitions},
        "policyRevision": registered.policy_revision,
        "cronRules": list(registered.cron_rules),
        # No per-type setting holds these in the cluster: published here for the services that submit the type.
        "submitDefaults": {"executorService": spec.executor.service, "timeoutMs": spec.executor.timeout_ms,
                           "priority": spec.priority, "maxRetries": spec.dead_letter.after_retries},
    }
    what = {"create": f"created topic {topic} with {partitions} partitions",
            "grow": f"grew topic {topic} from {plan.current} to {partitions} partitions",
            "none": f"topic {topic} has {partitions} partitions"}[plan.action]
    return done(Outcome(READY, "Reconciled", f"{what}; policy entry revision {registered.policy_revision}"
                                             f"{'' if registered.policy_changed else ' (unchanged)'};"
                                             f" {len(registered.cron_rules)} cron rule(s)"), extra, spec)
