"""A random layered graph for the graph fault test, and the end state each of its tasks must
reach, computed without the system (graph_rules.evaluate over the parents' ends)."""
from __future__ import annotations

import dataclasses
import random

from cluster.slots import slot_of
from dispatcher.store.graph_rules import Counts, EdgeOutcome, JoinRule, OnFailure, Verdict, effective, evaluate


@dataclasses.dataclass(frozen=True)
class ModelNode:
    key: str
    task_type: str
    parents: tuple[tuple[str, OnFailure], ...]
    rule: JoinRule
    at_least: int
    fatal: bool
    """Its handler fails non-retryably (it ends dead-lettered if it runs)."""
    flaky: bool
    """Its handler fails its first attempt, then succeeds."""


def types_for_every_slot(namespace: str, slot_count: int, per_slot: int = 1) -> list[str]:
    """Task type names whose slots cover every slot `per_slot` times."""
    found: dict[int, list[str]] = {}
    i = 0
    while any(len(found.get(s, [])) < per_slot for s in range(slot_count)):
        name = f"g-{i}"
        found.setdefault(slot_of(namespace, name, slot_count), []).append(name)
        i += 1
    return [name for s in range(slot_count) for name in found[s][:per_slot]]


def layered(namespace: str, slot_count: int, *, layers: int, width: int, seed: int) -> list[ModelNode]:
    rng = random.Random(seed)
    types = types_for_every_slot(namespace, slot_count, per_slot=2)
    nodes: list[ModelNode] = []
    previous: list[str] = []
    for layer in range(layers):
        current = []
        for i in range(width):
            key = f"l{layer}-{i}"
            parents: tuple[tuple[str, OnFailure], ...] = ()
            rule, k = JoinRule.ALL_SUCCEEDED, 0
            if previous:
                chosen = rng.sample(previous, rng.randint(1, min(4, len(previous))))
                parents = tuple((p, OnFailure.IGNORE if rng.random() < 0.15 else OnFailure.SKIP) for p in chosen)
                rule = rng.choices(list(JoinRule), weights=[60, 15, 10, 10, 5])[0]
                if rule is JoinRule.AT_LEAST:
                    k = rng.randint(1, len(parents))
            nodes.append(ModelNode(key, types[(layer * width + i) % len(types)], parents, rule, k,
                                   fatal=rng.random() < 0.04, flaky=rng.random() < 0.08))
            current.append(key)
        previous = current
    return nodes


def expected_ends(nodes: list[ModelNode]) -> dict[str, str]:
    """key -> the row status it must end in (succeeded, dead_lettered, skipped)."""
    ends: dict[str, str] = {}
    for n in nodes:   # layered: every parent comes before its children
        counts = Counts(len(n.parents))
        for parent, policy in n.parents:
            outcome = effective(ends[parent], policy)
            assert outcome is not None
            counts.add(outcome)
        verdict = evaluate(n.rule, n.at_least, counts)
        assert verdict is not Verdict.WAIT and verdict is not Verdict.CANCEL
        ends[n.key] = "skipped" if verdict is Verdict.SKIP else ("dead_lettered" if n.fatal else "succeeded")
    return ends


def rule_met(n: ModelNode, ended_before: dict[str, str]) -> bool:
    """Whether `n`'s rule is met by the parents that had ended (key -> status) when it was released."""
    counts = Counts(len(n.parents))
    for parent, policy in n.parents:
        if parent in ended_before:
            outcome = effective(ended_before[parent], policy)
            if outcome is not None:
                counts.add(outcome)
    return evaluate(n.rule, n.at_least, counts) is Verdict.DUE


__all__ = ["EdgeOutcome", "ModelNode", "expected_ends", "layered", "rule_met", "types_for_every_slot"]
