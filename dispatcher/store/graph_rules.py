"""When a task of a graph becomes due: its join rule over what its parents' ends count as.

Pure arithmetic, shared by the store's release (store/graphs.py, under the child's row lock),
the API's validation and the tests. A parent's end counts for one edge by that edge's failure
policy (`effective`); the join rule reads the counts (`evaluate`). Table-tested exhaustively
in tests/unit/test_graph_rules.py.
"""
from __future__ import annotations

import dataclasses
import enum


class JoinRule(enum.StrEnum):
    ALL_SUCCEEDED = "all_succeeded"
    ALL_DONE = "all_done"
    NONE_FAILED = "none_failed"
    ANY_SUCCEEDED = "any_succeeded"
    AT_LEAST = "at_least"


class OnFailure(enum.StrEnum):
    SKIP = "skip"
    """The parent's failure counts as failed: the join rule decides (all_succeeded skips)."""
    IGNORE = "ignore"
    """The parent's failure counts as done, as if it had succeeded without a result."""
    CONTINUE = "continue"
    """The parent's first failed attempt counts as done at once ("continued"), whether it is
    retried or not: the child does not wait for the retries."""


class EdgeOutcome(enum.StrEnum):
    """How a parent's end counts for one edge."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    IGNORED = "ignored"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    CONTINUED = "continued"
    """Counts as IGNORED does (done, no result): the parent failed an attempt, under `continue`."""


class Verdict(enum.Enum):
    WAIT = "wait"
    DUE = "due"
    SKIP = "skip"
    CANCEL = "cancel"


PARENT_ENDS = {"succeeded": EdgeOutcome.SUCCEEDED, "dead_lettered": EdgeOutcome.FAILED,
               "skipped": EdgeOutcome.SKIPPED, "cancelled": EdgeOutcome.CANCELLED}
"""A parent row's terminal status -> what it counts as, before the edge's policy."""

FAILED_ATTEMPT = "failed_attempt"
"""Not a status: a parent that has not ended but has failed an attempt (it waits for a retry or
runs one), as the store reads it for `continue` edges (store/graphs.py `_effective_statuses`)."""


def effective(parent_status: str, on_failure: OnFailure) -> EdgeOutcome | None:
    """What a parent in `parent_status` (a terminal status, or FAILED_ATTEMPT) counts as for an
    edge with `on_failure`; None while it counts as nothing yet."""
    if on_failure is OnFailure.CONTINUE and parent_status in (FAILED_ATTEMPT, "dead_lettered"):
        return EdgeOutcome.CONTINUED
    outcome = PARENT_ENDS.get(parent_status)
    if outcome is EdgeOutcome.FAILED and on_failure is OnFailure.IGNORE:
        return EdgeOutcome.IGNORED
    return outcome


@dataclasses.dataclass(slots=True)
class Counts:
    """A child's parents by how their ends count (the columns of its graph_nodes row)."""

    parents: int
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    ignored: int = 0
    cancelled: int = 0

    @property
    def unresolved(self) -> int:
        return self.parents - self.succeeded - self.failed - self.skipped - self.ignored - self.cancelled

    def add(self, outcome: EdgeOutcome) -> None:
        name = "ignored" if outcome is EdgeOutcome.CONTINUED else outcome.value
        setattr(self, name, getattr(self, name) + 1)


def evaluate(rule: JoinRule, at_least: int, c: Counts) -> Verdict:
    """The child's verdict now. A cancelled parent cancels its dependents whatever the rule (a
    task that waits for one nobody will run would wait forever). "Skip" is decided as soon as
    the rule can no longer be met, not when every parent has ended: a child of all_succeeded
    is skipped at its first failed parent. `ignored` counts as success for all_succeeded: the
    user said this parent's failure does not matter to this child."""
    if c.cancelled:
        return Verdict.CANCEL
    u = c.unresolved
    if rule is JoinRule.ALL_SUCCEEDED:
        if c.failed + c.skipped:
            return Verdict.SKIP
        return Verdict.DUE if u == 0 else Verdict.WAIT
    if rule is JoinRule.ALL_DONE:
        return Verdict.DUE if u == 0 else Verdict.WAIT
    if rule is JoinRule.NONE_FAILED:
        if c.failed:
            return Verdict.SKIP
        return Verdict.DUE if u == 0 else Verdict.WAIT
    need = 1 if rule is JoinRule.ANY_SUCCEEDED else at_least
    if c.succeeded >= need:
        return Verdict.DUE
    return Verdict.SKIP if c.succeeded + u < need else Verdict.WAIT


def skip_reason(rule: JoinRule, at_least: int, c: Counts) -> str:
    """Why a child was skipped, in words (kept with it, shown by GetGraph)."""
    if rule is JoinRule.ALL_SUCCEEDED:
        return f"join all_succeeded: {c.failed} parent(s) failed, {c.skipped} skipped"
    if rule is JoinRule.NONE_FAILED:
        return f"join none_failed: {c.failed} parent(s) failed"
    need = 1 if rule is JoinRule.ANY_SUCCEEDED else at_least
    return (f"join {rule.value}{'' if rule is JoinRule.ANY_SUCCEEDED else f'({need})'}: {c.succeeded} of"
            f" {c.parents} parent(s) succeeded and {c.unresolved} still may, {need} needed")
