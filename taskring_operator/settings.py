"""The spec as the cluster's settings for the type, and registering them through the API.

Two things are registered: the type's policy entry (PolicyService, one key of the policies file
in its JSON shape, docs/limits.md) and its cron rules (CronService, docs/cron.md). The mapping
functions are pure; `Registrar` makes the calls with the Python SDK's client.

What the entry cannot hold is not invented here: the cluster has no per-type setting for the
executor service, the attempt timeout, the priority or the retries before dead-lettering. The
timeout and retries go on every cron fire (a rule carries them); the priority picks the topic;
all four are reported in the resource's status for the services that submit the type.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from taskring.cron import CronRuleInfo, CronRuleSpec
from taskring.errors import AlreadyExists, InvalidArgument, NotFound, TaskringError
from taskring.policies import TypePolicy
from taskring_operator.spec import AsyncJobConfigSpec, Rate


def _rate(rate: Rate) -> dict[str, int]:
    out = {"starts": rate.starts, "period_ms": rate.period_ms}
    if rate.burst is not None:
        out["burst"] = rate.burst
    return out


def policy_entry(spec: AsyncJobConfigSpec) -> dict[str, Any]:
    """The type's entry in the policies file's JSON shape; fields the spec leaves out are left
    out, so they take the server default's values as a file entry's would."""
    entry: dict[str, Any] = {}
    r = spec.retry
    for key, value in (("initial_backoff_ms", r.initial_backoff_ms), ("max_backoff_ms", r.max_backoff_ms),
                       ("multiplier", r.multiplier)):
        if value is not None:
            entry[key] = value
    if r.schedule_ms:
        entry["schedule_ms"] = list(r.schedule_ms)
    lim = spec.limits
    concurrency = {k: v for k, v in (("per_type", lim.concurrency_per_type), ("per_key", lim.concurrency_per_key),
                                     ("key", lim.concurrency_key)) if v is not None}
    if concurrency:
        entry["concurrency"] = concurrency
    if lim.retry_cap is not None:
        entry["retry_cap"] = lim.retry_cap
    rate: dict[str, Any] = {}
    if lim.rate_per_type is not None:
        rate["per_type"] = _rate(lim.rate_per_type)
    if lim.rate_per_key is not None:
        rate["per_key"] = _rate(lim.rate_per_key)
    if lim.rate_key is not None:
        rate["key"] = lim.rate_key
    if rate:
        entry["rate"] = rate
    if lim.heartbeat_timeout_ms is not None:
        entry["heartbeat_timeout_ms"] = lim.heartbeat_timeout_ms
    return entry


def cron_marker(resource: str) -> str:
    """The description that marks a cron rule as this resource's (`resource` = "k8s-namespace/name"),
    so the operator changes and deletes its own rules and never one somebody made by hand."""
    return f"managed by AsyncJobConfig {resource}"


def cron_specs(spec: AsyncJobConfigSpec, resource: str) -> list[CronRuleSpec]:
    """The type's cron rules, each fire carrying the type's timeout and retries."""
    timeout = timedelta(milliseconds=spec.executor.timeout_ms)
    return [CronRuleSpec(namespace=spec.namespace, name=rule.name, task_type=spec.task_type, schedule=rule.schedule,
                         time_zone=rule.time_zone, payload=dict(rule.payload), overlap=rule.overlap,
                         catch_up=rule.catch_up, description=cron_marker(resource), timeout=timeout,
                         max_retries=spec.dead_letter.after_retries)
            for rule in spec.cron]


@dataclass(frozen=True, slots=True)
class CronPlan:
    create: tuple[CronRuleSpec, ...]
    update: tuple[CronRuleSpec, ...]
    delete: tuple[str, ...]
    """Names of this resource's rules the spec no longer has."""


def _same_rule(want: CronRuleSpec, have: CronRuleSpec) -> bool:
    # The server stores the rule normalised (zone and policies filled in); compare what the spec sets.
    return (want.schedule == have.schedule and want.payload == have.payload and want.task_type == have.task_type
            and (not want.time_zone or want.time_zone == have.time_zone)
            and (not want.overlap or want.overlap == have.overlap)
            and (not want.catch_up or want.catch_up == have.catch_up)
            and want.timeout == have.timeout and want.max_retries == have.max_retries
            and want.description == have.description)


def plan_cron(wanted: list[CronRuleSpec], existing: list[CronRuleInfo], resource: str) -> CronPlan:
    """What to change so that the namespace's rules marked as `resource`'s are exactly `wanted`.
    A wanted name taken by a rule that is not this resource's is updated only if it is marked as
    ours; otherwise `create` will fail with AlreadyExists, naming it (no silent takeover)."""
    marker = cron_marker(resource)
    have = {r.spec.name: r.spec for r in existing}
    create = tuple(w for w in wanted if w.name not in have or have[w.name].description != marker)
    update = tuple(w for w in wanted if w.name in have and have[w.name].description == marker
                   and not _same_rule(w, have[w.name]))
    names = {w.name for w in wanted}
    delete = tuple(sorted(n for n, s in have.items() if s.description == marker and n not in names))
    return CronPlan(create=create, update=update, delete=delete)


class PolicyApi(Protocol):
    def get(self, namespace: str, task_type: str) -> TypePolicy: ...
    def put(self, namespace: str, task_type: str, policy: dict[str, Any], *, reason: str,
            if_revision: int | None = None) -> TypePolicy: ...
    def delete(self, namespace: str, task_type: str, *, reason: str, if_revision: int | None = None) -> TypePolicy: ...


class CronApi(Protocol):
    def create(self, spec: CronRuleSpec) -> CronRuleInfo: ...
    def update(self, spec: CronRuleSpec) -> CronRuleInfo: ...
    def list(self, namespace: str = "") -> list[CronRuleInfo]: ...
    def delete(self, namespace: str, name: str) -> CronRuleInfo: ...


@dataclass(frozen=True, slots=True)
class Registered:
    policy_revision: int
    """The type's policy entry's revision after the change (0: no API entry)."""
    policy_changed: bool
    cron_rules: tuple[str, ...]


class Registrar:
    """Registers a spec's settings with the cluster, and retires them."""

    def __init__(self, policies: PolicyApi, cron: CronApi):
        self._policies = policies
        self._cron = cron

    def register(self, spec: AsyncJobConfigSpec, resource: str, generation: int) -> Registered:
        """Put the type's policy entry (when it differs from what is there), then its cron rules.

        The put is conditional on the revision just read, so a change somebody made in between is
        not overwritten blindly: it fails with FailedPrecondition and the next attempt reads again.
        The server validates the entry as it validates the file, and writes nothing it refuses.
        A cron rule it refuses (a schedule or zone only the server parses) comes after the entry
        was put: then this run's changes are undone before the refusal is raised, so that a
        refused spec leaves the type's settings as they were (the entry's revision moves on)."""
        entry = policy_entry(spec)
        current = self._policies.get(spec.namespace, spec.task_type)
        changed = current.source != "api" or current.policy != entry
        revision = current.revision
        if changed:
            put = self._policies.put(spec.namespace, spec.task_type, entry, if_revision=current.revision,
                                     reason=f"AsyncJobConfig {resource} generation {generation}")
            revision = put.revision
        listed = self._cron.list(spec.namespace)
        existing = {r.spec.name: r.spec for r in listed}
        plan = plan_cron(cron_specs(spec, resource), listed, resource)
        created: list[str] = []
        updated: list[CronRuleSpec] = []
        try:
            for rule in plan.create:
                self._cron.create(rule)
                created.append(rule.name)
            for rule in plan.update:
                self._cron.update(rule)
                updated.append(existing[rule.name])
        except (InvalidArgument, AlreadyExists) as refused:
            try:
                self._undo(spec, resource, current, revision if changed else None, created, updated)
            except TaskringError as undo_failed:
                refused.add_note(f"undoing this run's changes failed too: {undo_failed}")
            raise
        # Deleting comes last: the server refuses no delete, and a refused create must not cost a rule.
        for name in plan.delete:
            self._cron.delete(spec.namespace, name)
        return Registered(policy_revision=revision, policy_changed=changed,
                          cron_rules=tuple(r.name for r in spec.cron))

    def _undo(self, spec: AsyncJobConfigSpec, resource: str, before: TypePolicy, put_revision: int | None,
              created: list[str], updated: list[CronRuleSpec]) -> None:
        """Take back what `register` changed before the refusal: the rules it created and updated,
        and the entry (put back as it was, or deleted when the type had no API entry)."""
        for name in created:
            self._cron.delete(spec.namespace, name)
        for old in updated:
            self._cron.update(old)
        if put_revision is None:
            return
        reason = f"AsyncJobConfig {resource}: undone, the cluster refused its cron rules"
        if before.source == "api":
            self._policies.put(spec.namespace, spec.task_type, before.policy, if_revision=put_revision, reason=reason)
        else:
            self._policies.delete(spec.namespace, spec.task_type, if_revision=put_revision, reason=reason)

    def retire(self, spec: AsyncJobConfigSpec, resource: str) -> list[str]:
        """Retire the type as `spec.delete_policy` says; returns what was done, for the log.

        Keep: nothing is removed; the type goes on running under the settings last registered.
        Drain: no new work is started for the type by this resource (its cron rules are deleted),
        and the type's policy entry is deleted, so it falls back to the policies file. Tasks
        already submitted still run, under the file's policy. The topic is never deleted: other
        types' tasks share it, and records in it may still be due."""
        if spec.delete_policy == "Keep":
            return ["kept the policy entry, cron rules and topic"]
        done = []
        marker = cron_marker(resource)
        for rule in self._cron.list(spec.namespace):
            if rule.spec.description == marker:
                try:
                    self._cron.delete(spec.namespace, rule.spec.name)
                except NotFound:
                    pass   # gone already: deleting twice is the same as once
                done.append(f"deleted cron rule {rule.spec.name}")
        try:
            self._policies.delete(spec.namespace, spec.task_type,
                                  reason=f"AsyncJobConfig {resource} deleted (deletePolicy Drain)")
            done.append("deleted the policy entry")
        except NotFound:
            done.append("no policy entry to delete")
        return done
