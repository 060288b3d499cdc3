"""Limits per task type: at most N attempts of a type running at once, at most M of them
retries, at most R starts per period, cluster-wide.

Declared in the same file as the per-type retry policies (dispatcher/policy/retry.py):

    {"shop/export_orders": {"concurrency": {"per_type": 20, "per_key": 3, "key": "tenant:{shop_id}"}},
     "payments/notify_bank": {"retry_cap": 5}}

`per_key` with `key` (a template over payload fields, like a unique key's) bounds the attempts
of one key (one tenant, one shop) running at once, under the type's `per_type` if it has one.
A task whose payload lacks a field of the template is refused at submit, naming it.

`retry_cap` bounds the attempts after the first that run at once: when a downstream is down and
every task fails, it sees a trickle of retries, not a storm; the rest wait, due, in backoff order.

`rate` bounds starts: `{"rate": {"per_type": {"starts": 100, "period_ms": 1000, "burst": 200},
"per_key": {"starts": 5, "period_ms": 1000}, "key": "tenant:{shop_id}"}}`, a token bucket per type
and per key (`burst` defaults to `starts`). A type has one limit key: `rate.key` and
`concurrency.key`, when both are given, must be the same template.

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
RATE_FIELD = "rate"
LIMIT_FIELDS = frozenset({CONCURRENCY_FIELD, RETRY_CAP_FIELD, RATE_FIELD})
"""The fields of a task type's entry that declare its limits."""
_CONCURRENCY_FIELDS = frozenset({"per_type", "per_key", "key"})
_RATE_FIELDS = frozenset({"starts", "period_ms", "burst"})


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
class Rate:
    """At most `starts` starts per `period_ms`, and up to `burst` at once after a quiet spell."""

    starts: int
    period_ms: int
    burst: int

    def __post_init__(self) -> None:
        for name in ("starts", "period_ms", "burst"):
            _whole_at_least_one(name, getattr(self, name))


def _parse_rate(where: str, spec: object) -> Rate:
    if not isinstance(spec, dict):
        raise InvalidSchedulingPolicy(where, 'must be a JSON object, e.g. {"starts": 10, "period_ms": 1000}')
    unknown = set(spec) - _RATE_FIELDS
    if unknown:
        raise InvalidSchedulingPolicy(f"{where}.{sorted(unknown)[0]}", "is not a rate field (starts, period_ms, burst)")
    for required in ("starts", "period_ms"):
        if required not in spec:
            raise InvalidSchedulingPolicy(f"{where}.{required}", "is required: a rate is starts per period_ms")
    try:
        return Rate(spec["starts"], spec["period_ms"], spec["burst"] if "burst" in spec else spec["starts"])
    except InvalidSchedulingPolicy as exc:
        raise InvalidSchedulingPolicy(f"{where}.{exc.field}", exc.problem) from None


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
    rate: Rate | None = None
    """At most so many starts of the type per period."""
    rate_per_key: Rate | None = None
    """At most so many starts per period with the same `key`."""

    def __post_init__(self) -> None:
        if self.max_running is None and self.max_retrying is None and self.max_running_per_key is None \
                and self.rate is None and self.rate_per_key is None:
            raise InvalidSchedulingPolicy("per_type", "a type's limits need a concurrency limit, a retry cap or a rate")
        if self.max_running is not None:
            _whole_at_least_one("per_type", self.max_running)
        if self.max_running_per_key is not None:
            _whole_at_least_one("per_key", self.max_running_per_key)
            if self.key is None:
                raise InvalidSchedulingPolicy("key", "is required with per_key: the template of each task's key")
        if self.rate_per_key is not None and self.key is None:
            raise InvalidSchedulingPolicy("key", "is required with a per-key rate: the template of each task's key")
        if self.key is not None:
            if self.max_running_per_key is None and self.rate_per_key is None:
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
    rate_spec = spec.get(RATE_FIELD)
    if concurrency is None and retry_cap is None and rate_spec is None:
        return None
    max_running = per_key = template = None
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
    rate = rate_per_key = None
    if rate_spec is not None:
        rate, rate_per_key, template = _parse_rates(f"{key}.{RATE_FIELD}", rate_spec, template)
    if retry_cap is not None:
        _whole_at_least_one(f"{key}.{RETRY_CAP_FIELD}", retry_cap)
    return TypeLimits(max_running=max_running, max_retrying=retry_cap,  # type: ignore[arg-type]  # checked above
                      max_running_per_key=per_key, key=template, rate=rate, rate_per_key=rate_per_key)


def _parse_rates(where: str, spec: object, template: str | None) -> tuple[Rate | None, Rate | None, str | None]:
    """(per type, per key, the key template) of a type's `rate` entry; `template` is its
    concurrency limit's key, if any, which a rate's key must equal."""
    if not isinstance(spec, dict):
        raise InvalidSchedulingPolicy(where, 'must be a JSON object, e.g.'
                                             ' {"per_type": {"starts": 10, "period_ms": 1000}}')
    unknown = set(spec) - _CONCURRENCY_FIELDS
    if unknown:
        raise InvalidSchedulingPolicy(f"{where}.{sorted(unknown)[0]}",
                                      "is not a rate limit field (per_type, per_key, key)")
    if "per_type" not in spec and "per_key" not in spec:
        raise InvalidSchedulingPolicy(f"{where}.per_type", "is required (or per_key with key)")
    rate = _parse_rate(f"{where}.per_type", spec["per_type"]) if "per_type" in spec else None
    rate_per_key = _parse_rate(f"{where}.per_key", spec["per_key"]) if "per_key" in spec else None
    rate_key = spec.get("key")
    if rate_key is not None:
        problem = template_problem(rate_key) if isinstance(rate_key, str) else "must be a string"
        if problem is not None:
            raise InvalidSchedulingPolicy(f"{where}.key", problem)
        if template is not None and rate_key != template:
            raise InvalidSchedulingPolicy(f"{where}.key", f"must be the same template as concurrency.key"
                                                          f" ({template!r}): a task has one limit key")
        template = rate_key
    if rate_per_key is not None and template is None:
        raise InvalidSchedulingPolicy(f"{where}.key", "is required with per_key: the template of each task's key")
    if rate_key is not None and rate_per_key is None:
        raise InvalidSchedulingPolicy(f"{where}.per_key", "is required with key")
    return rate, rate_per_key, template
