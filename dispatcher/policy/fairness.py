"""Fair shares of executor time among the tenants of a task type (docs/limits.md, "Fair shares").

Declared beside the type's retry policy and limits:

    {"reports/render": {"fairness": {"key": "tenant:{tenant_id}", "weights": {"tenant:big": 3}}}}

`key` is a template over payload fields (policy/key_template.py): each task's flow. Flows share
the executors the type gets by the time their tasks spend running, in proportion to their weights
(1 unless listed): a tenant whose tasks are ten times slower gets a tenth of the starts, not nine
tenths of the executors. Pure: no I/O.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from dispatcher.policy.key_template import template_problem

FAIRNESS_FIELD = "fairness"
_FIELDS = frozenset({"key", "weights"})
MAX_WEIGHT = 1_000


class InvalidFairness(ValueError):
    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclasses.dataclass(frozen=True)
class FairPolicy:
    key: str
    """The template of a task's flow (its tenant), over its payload's fields."""
    weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """A flow's share relative to others; 1 for a flow not listed."""

    def weight(self, flow: str) -> float:
        return self.weights.get(flow, 1.0)


def parse_fairness(key: str, spec: Mapping[str, object]) -> FairPolicy | None:
    """The fairness a task type's entry declares (None: none). `key` is "namespace/task_type"."""
    fairness = spec.get(FAIRNESS_FIELD)
    if fairness is None:
        return None
    where = f"{key}.{FAIRNESS_FIELD}"
    if not isinstance(fairness, dict):
        raise InvalidFairness(where, 'must be a JSON object, e.g. {"key": "tenant:{tenant_id}"}')
    unknown = set(fairness) - _FIELDS
    if unknown:
        raise InvalidFairness(f"{where}.{sorted(unknown)[0]}", "is not a fairness field (key, weights)")
    template = fairness.get("key")
    if template is None:
        raise InvalidFairness(f"{where}.key", "is required: the template of each task's flow, e.g. tenant:{tenant_id}")
    problem = template_problem(template) if isinstance(template, str) else "must be a string"
    if problem is not None:
        raise InvalidFairness(f"{where}.key", problem)
    weights = fairness.get("weights", {})
    if not isinstance(weights, dict):
        raise InvalidFairness(f"{where}.weights", 'must be a JSON object of flow -> weight, e.g. {"tenant:big": 3}')
    for flow, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) \
                or not 0 < weight <= MAX_WEIGHT:
            raise InvalidFairness(f"{where}.weights.{flow}", f"must be a number in (0, {MAX_WEIGHT}], got {weight!r}")
    return FairPolicy(template, {flow: float(w) for flow, w in weights.items()})
