"""Unique keys: at most one task per key in a namespace.

A task may carry `unique_key` (e.g. `order:12345`). While a task holding the key is
live (not succeeded, dead-lettered or cancelled), a submit of another task with the
same key in the same namespace creates nothing: it answers with the holder's task id
and `duplicate=true`. A task that declares `unique_ttl_ms` holds its key for exactly
that long from acceptance instead, whatever its state: "at most one welcome email per
user per day" keeps the key past the task's success, and a task still running when
its TTL ends no longer blocks the next.

The key can also be declared per task type, in the same file as the per-type retry
policies (dispatcher/policy/retry.py), as a template over the payload's fields:

    {"shop/cancel_unpaid_order": {"unique_key": "order:{order_id}", "unique_ttl_ms": 3600000}}

A task's own `unique_key` wins over its type's template. The store keeps the keys and
decides, in the transaction that inserts the task (dispatcher/store/mysql.py).

Pure: no I/O.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from dispatcher.policy.key_template import FIELD, render_key, template_problem


class InvalidUniqueRule(ValueError):
    """A per-type unique-key rule that cannot be used; `field` names what is wrong."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclasses.dataclass(frozen=True)
class UniqueRule:
    """A task type's unique key: `template` over payload fields, and an optional TTL."""

    template: str
    """Text with `{field}` or `{field.sub}` placeholders, e.g. `order:{order_id}`."""
    ttl_ms: int = 0
    """0: the key is held while the task is live; else held this long from acceptance."""

    def __post_init__(self) -> None:
        problem = template_problem(self.template)
        if problem is not None:
            raise InvalidUniqueRule("unique_key", problem)
        if self.ttl_ms < 0:
            raise InvalidUniqueRule("unique_ttl_ms", f"must be >= 0, got {self.ttl_ms}")

    @property
    def fields(self) -> list[str]:
        return FIELD.findall(self.template)

    def render(self, payload: dict[str, Any], field: str) -> str:
        """The key of one task. A placeholder whose field is missing, or is not a string or
        an integer, is the caller's error, reported on `field` (the task's payload)."""
        return render_key(self.template, payload, field, "unique key")


def parse_unique_rule(key: str, spec: dict[str, Any]) -> UniqueRule | None:
    """The rule in one per-type entry of the policies file (None when it declares none);
    errors name `key.field`."""
    if "unique_key" not in spec:
        if "unique_ttl_ms" in spec:
            raise InvalidUniqueRule(f"{key}.unique_ttl_ms", "needs unique_key")
        return None
    template, ttl = spec["unique_key"], spec.get("unique_ttl_ms", 0)
    if not isinstance(template, str):
        raise InvalidUniqueRule(f"{key}.unique_key", "must be a string")
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise InvalidUniqueRule(f"{key}.unique_ttl_ms", "must be an integer number of milliseconds")
    try:
        return UniqueRule(template, ttl)
    except InvalidUniqueRule as exc:
        raise InvalidUniqueRule(f"{key}.{exc.field}", exc.problem) from None
