"""The join rules, against every count of up to four parents: due exactly when the rule is
met, skipped exactly when it no longer can be, and never both; a verdict other than WAIT is
final (more parents ending never turns due into skip or back)."""
from __future__ import annotations

import itertools

import pytest

from dispatcher.store.graph_rules import (
    FAILED_ATTEMPT,
    Counts,
    EdgeOutcome,
    JoinRule,
    OnFailure,
    Verdict,
    effective,
    evaluate,
    skip_reason,
)

ENDS = [EdgeOutcome.SUCCEEDED, EdgeOutcome.FAILED, EdgeOutcome.IGNORED, EdgeOutcome.SKIPPED, EdgeOutcome.CONTINUED]


def _counts(n: int, ended: tuple[EdgeOutcome, ...]) -> Counts:
    c = Counts(n)
    for outcome in ended:
        c.add(outcome)
    return c


def _met(rule: JoinRule, k: int, n: int, ended: tuple[EdgeOutcome, ...]) -> bool:
    """The rule's definition, over the parents' ends (None for one still running)."""
    s = sum(e is EdgeOutcome.SUCCEEDED for e in ended)
    ig = sum(e in (EdgeOutcome.IGNORED, EdgeOutcome.CONTINUED) for e in ended)   # both: done, no result
    f = sum(e is EdgeOutcome.FAILED for e in ended)
    done = len(ended) == n
    return {JoinRule.ALL_SUCCEEDED: done and s + ig == n, JoinRule.ALL_DONE: done,
            JoinRule.NONE_FAILED: done and f == 0, JoinRule.ANY_SUCCEEDED: s >= 1,
            JoinRule.AT_LEAST: s >= k}[rule]


def _can_still_be_met(rule, k, n, ended) -> bool:
    rest = n - len(ended)
    return any(_met(rule, k, n, ended + more) for more in itertools.product(ENDS, repeat=rest))


CASES = [(rule, k, n) for n in range(1, 5) for rule in JoinRule
         for k in (range(1, n + 1) if rule is JoinRule.AT_LEAST else [0])]


@pytest.mark.parametrize("rule, k, n", CASES)
def test_every_rule_against_every_count(rule, k, n):
    for size in range(n + 1):
        for ended in itertools.product(ENDS, repeat=size):
            verdict = evaluate(rule, k, _counts(n, ended))
            if _met(rule, k, n, ended):
                assert verdict is Verdict.DUE, (rule, k, ended)
            elif not _can_still_be_met(rule, k, n, ended):
                assert verdict is Verdict.SKIP, (rule, k, ended)
            else:
                assert verdict is Verdict.WAIT, (rule, k, ended)


@pytest.mark.parametrize("rule, k, n", CASES)
def test_a_verdict_once_reached_is_final(rule, k, n):
    for ended in itertools.product(ENDS, repeat=n):
        seen = None
        for i in range(n + 1):
            verdict = evaluate(rule, k, _counts(n, ended[:i]))
            if seen is not None:
                assert verdict is seen, (rule, k, ended, i)
            elif verdict is not Verdict.WAIT:
                seen = verdict


def test_a_cancelled_parent_cancels_whatever_the_rule():
    for rule in JoinRule:
        c = Counts(3)
        c.add(EdgeOutcome.SUCCEEDED)
        c.add(EdgeOutcome.CANCELLED)
        assert evaluate(rule, 1, c) is Verdict.CANCEL


def test_the_edge_policy_turns_a_failure_into_ignored_and_nothing_else():
    assert effective("dead_lettered", OnFailure.SKIP) is EdgeOutcome.FAILED
    assert effective("dead_lettered", OnFailure.IGNORE) is EdgeOutcome.IGNORED
    assert effective("skipped", OnFailure.IGNORE) is EdgeOutcome.SKIPPED
    assert effective("succeeded", OnFailure.IGNORE) is EdgeOutcome.SUCCEEDED
    assert effective("cancelled", OnFailure.SKIP) is EdgeOutcome.CANCELLED
    for running in ("waiting", "pending", "enqueued", "claimed", "dispatched"):
        assert effective(running, OnFailure.SKIP) is None


def test_continue_counts_the_first_failed_attempt_and_only_a_failure():
    assert effective(FAILED_ATTEMPT, OnFailure.CONTINUE) is EdgeOutcome.CONTINUED
    assert effective("dead_lettered", OnFailure.CONTINUE) is EdgeOutcome.CONTINUED
    assert effective("succeeded", OnFailure.CONTINUE) is EdgeOutcome.SUCCEEDED
    assert effective("skipped", OnFailure.CONTINUE) is EdgeOutcome.SKIPPED
    assert effective("cancelled", OnFailure.CONTINUE) is EdgeOutcome.CANCELLED
    for policy in (OnFailure.SKIP, OnFailure.IGNORE):   # a failed attempt is nothing to them
        assert effective(FAILED_ATTEMPT, policy) is None
    c = _counts(2, (EdgeOutcome.CONTINUED,))
    assert (c.ignored, c.unresolved) == (1, 1), "counted as ignored is: done, no result"


def test_a_skip_says_why_in_words():
    c = _counts(3, (EdgeOutcome.SUCCEEDED, EdgeOutcome.FAILED))
    assert skip_reason(JoinRule.ALL_SUCCEEDED, 0, c) == "join all_succeeded: 1 parent(s) failed, 0 skipped"
    c = _counts(3, (EdgeOutcome.FAILED, EdgeOutcome.FAILED))
    assert skip_reason(JoinRule.AT_LEAST, 2, c) == (
        "join at_least(2): 0 of 3 parent(s) succeeded and 1 still may, 2 needed")
