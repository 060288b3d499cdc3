"""Limits per task type: at most N attempts of a type running at once, and at most M of them
retries, cluster-wide.

Declared in the same file as the per-type retry policies (dispatcher/policy/retry.py):

    {"shop/export_orders": {"concurrency": {"per_type": 20, "per_key": 3, "key": "tenant:{shop_id}"}},
     "payments/notify_bank": {"retry_cap": 5}}

`per_key` with `key` (a template over payload fields, like a unique key's) bounds the attempts
of one key (one tenant, one shop) running at once, under the type's `per_type` if it has one.
A task whose payload lacks a field of the template is refused at submit, naming it.

`retry_cap` bounds the attempts after the first that run at once: when a downstream is down and
every task fails, it sees a trickle of retries, not a storm; the rest wait, due, in backoff order.

A type hashes to one slot and a slot has one owner at a time, so the owner counts a type's
running attempts in memory and enforces its limits at dispatch, before any executor capacity is
taken (dispatcher/engine/limits.py); there is no distributed counter. What "running" means,
and what happens at a handoff, is in docs/limits.md.

Pure: no I/O.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from dispatcher.policy.key_template import template_problem

CONCURRENCY_FIELD = "concurrency"
RETRY_CAP_FIELD = "retry_cap"
LIMIT_FIELDS = frozenset({CONCURRENCY_FIELD, RETRY_CAP_FIELD})
"""The fields of a task type's entry that declare its limits."""
_CONCURRENCY_FIELDS = frozenset({"per_type", "per_key", "key"})


class InvalidSchedulingPolicy(ValueError):
    """A declared limit that cannot be used; `field` names what is wrong (`key.concurrency.per_type`)."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def _whole_at_least_one(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidSchedulingPolicy(field, f"must be a whole number >= 1, got {value!r}")


@dataclasses.dataclass(frozen=True)
class TypeLimits:
    """The limits of one task type; None: that limit is not set."""

    max_running: int | None = None
    """At most this many attempts of the type running at once, cluster-wide."""
    max_retrying: int | None = None
    """At most this many of them retries (attempt 2 and later)."""
    max_running_per_key: int | None = None
    """At most this many attempts with the same `key` running at once."""
    key: str | None = None
    """The template of a task's limit key, over its payload's fields (policy/key_template.py)."""

    def __post_init__(self) -> None:
        if self.max_running is None and self.max_retrying is None and self.max_running_per_key is None:
            raise InvalidSchedulingPolicy("per_type", "a type's limits need a concurrency limit or a retry cap")
        if self.max_running is not None:
            _whole_at_least_one("per_type", self.max_running)
        if self.max_running_per_key is not None:
            _whole_at_least_one("per_key", self.max_running_per_key)
            if self.key is None:
                raise InvalidSchedulingPolicy("key", "is required with per_key: the template of each task's key")
        if self.key is not None:
            if self.max_running_per_key is None:
                raise InvalidSchedulingPolicy("per_key", "is required with key")
            problem = template_problem(self.key) if isinstance(self.key, str) else "must be a string"
            if problem is not None:
                raise InvalidSchedulingPolicy("key", problem)
        if self.max_retrying is not None:
            _whole_at_least_one(RETRY_CAP_FIELD, self.max_retrying)


def parse_type_limits(key: str, spec: Mapping[str, object]) -> TypeLimits | None:
    """The limits a task type's entry declares (None: none). `key` is "namespace/task_type"."""
    concurrency = spec.get(CONCURRENCY_FIELD)
    retry_cap = spec.get(RETRY_CAP_FIELD)
    if concurrency is None and retry_cap is None:
        return None
    max_running = None
    if concurrency is not None:
        where = f"{key}.{CONCURRENCY_FIELD}"
        if not isinstance(concurrency, dict):
            raise InvalidSchedulingPolicy(where, 'must be a JSON object, e.g. {"per_type": 3}')
        unknown = set(concurrency) - _CONCURRENCY_FIELDS
        if unknown:
            raise InvalidSchedulingPolicy(f"{where}.{sorted(unknown)[0]}",
                                          "is not a concurrency limit field (per_type)")
        if "per_type" not in concurrency and "per_key" not in concurrency:
            raise InvalidSchedulingPolicy(f"{where}.per_type", "is required (or per_key with key)")
        try:
            limits = TypeLimits(max_running=concurrency.get("per_type"), max_running_per_key=concurrency.get("per_key"),
                                key=concurrency.get("key"))
        except InvalidSchedulingPolicy as exc:
            raise InvalidSchedulingPolicy(f"{where}.{exc.field}", exc.problem) from None
        max_running, per_key, template = limits.max_running, limits.max_running_per_key, limits.key
    else:
        per_key = template = None
    if retry_cap is not None:
        _whole_at_least_one(f"{key}.{RETRY_CAP_FIELD}", retry_cap)
    return TypeLimits(max_running=max_running, max_retrying=retry_cap,  # type: ignore[arg-type]  # checked above
                      max_running_per_key=per_key, key=template)
