"""Concurrency limits per task type: at most N attempts of a type running at once, cluster-wide.

Declared in the same file as the per-type retry policies (dispatcher/policy/retry.py):

    {"shop/export_orders": {"concurrency": {"per_type": 3}}}

A type hashes to one slot and a slot has one owner at a time, so the owner counts a type's
running attempts in memory and enforces its limit at dispatch, before any executor capacity is
taken (dispatcher/engine/limits.py); there is no distributed counter. What "running" means,
and what happens at a handoff, is in docs/limits.md.

Pure: no I/O.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

CONCURRENCY_FIELD = "concurrency"
"""The field of a task type's entry that declares its limits."""
_CONCURRENCY_FIELDS = frozenset({"per_type"})


class InvalidSchedulingPolicy(ValueError):
    """A declared limit that cannot be used; `field` names what is wrong (`key.concurrency.per_type`)."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclasses.dataclass(frozen=True)
class TypeLimits:
    """The limits of one task type."""

    max_running: int
    """At most this many attempts of the type running at once, cluster-wide."""

    def __post_init__(self) -> None:
        if isinstance(self.max_running, bool) or not isinstance(self.max_running, int) or self.max_running < 1:
            raise InvalidSchedulingPolicy("per_type", f"must be a whole number >= 1, got {self.max_running!r}")


def parse_type_limits(key: str, spec: Mapping[str, object]) -> TypeLimits | None:
    """The limits a task type's entry declares (None: none). `key` is "namespace/task_type"."""
    declared = spec.get(CONCURRENCY_FIELD)
    if declared is None:
        return None
    where = f"{key}.{CONCURRENCY_FIELD}"
    if not isinstance(declared, dict):
        raise InvalidSchedulingPolicy(where, 'must be a JSON object, e.g. {"per_type": 3}')
    unknown = set(declared) - _CONCURRENCY_FIELDS
    if unknown:
        raise InvalidSchedulingPolicy(f"{where}.{sorted(unknown)[0]}", "is not a concurrency limit field (per_type)")
    if "per_type" not in declared:
        raise InvalidSchedulingPolicy(f"{where}.per_type", "is required")
    try:
        return TypeLimits(max_running=declared["per_type"])   # its type is checked by TypeLimits
    except InvalidSchedulingPolicy as exc:
        raise InvalidSchedulingPolicy(f"{where}.{exc.field}", exc.problem) from None
