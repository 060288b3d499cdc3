"""The plan of a cron rule's fires (dispatcher/cron/rules.py): lead, catch-up, overlap."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from dispatcher.base.errors import InvalidArgument
from dispatcher.cron import rules
from taskring.wire import pb

T0 = dt.datetime(2030, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
LEAD = dt.timedelta(seconds=10)
MISSED = dt.timedelta(seconds=5)


def S(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def rule(**fields) -> rules.ValidRule:
    values: dict[str, Any] = dict(namespace="ns", name="r", task_type="t", schedule="* * * * * *", time_zone="UTC")
    values.update(fields)
    message = pb.CronRule(**values)
    return rules.validate_rule(message, lambda ns, tt, payload, field: payload or "{}")


def plan(r: rules.ValidRule, planned_until: dt.datetime, now: dt.datetime, previous_live: bool = False):
    return rules.plan(r, planned_until, previous_live, now, lead=LEAD, missed_after=MISSED)


def test_allow_plans_a_lead_ahead_in_chunks_of_half_the_lead():
    p = plan(rule(), T0, T0)
    assert p is not None and p.fires == [S(i) for i in range(1, 11)] and p.planned_until == S(10)
    assert plan(rule(), S(10), S(4)) is None           # more than half the lead is planned: nothing to do
    again = plan(rule(), S(10), S(6))
    assert again is not None and again.fires == [S(i) for i in range(11, 17)]


@pytest.mark.parametrize("catch_up, limit, kept", [
    ("skip", 0, []),
    ("latest", 0, [95]),
    ("all", 3, [93, 94, 95]),
])
def test_after_an_outage_the_catch_up_policy_chooses_among_the_missed_fires(catch_up, limit, kept):
    # Planned up to T0, back at T0 + 100 s: fires 1..95 are missed (older than 5 s), 96..110 are not.
    p = plan(rule(catch_up=catch_up, catch_up_limit=limit), T0, S(100))
    assert p is not None
    assert p.fires == [S(i) for i in kept] + [S(i) for i in range(96, 111)]


def test_skip_materializes_only_when_due_and_not_while_the_previous_fire_is_live():
    r = rule(overlap="skip")
    due = plan(r, S(0), S(3))
    assert due is not None and due.fires == [S(3)] and due.planned_until == S(3) and due.skipped == 2
    busy = plan(r, S(3), S(5), previous_live=True)
    assert busy is not None and busy.fires == [] and busy.planned_until == S(5) and busy.skipped == 2


def test_queue_one_waits_for_the_previous_fire_then_runs_one_for_all_that_fell_due():
    r = rule(overlap="queue_one")
    assert plan(r, S(0), S(3), previous_live=True) is None
    after = plan(r, S(0), S(4))
    assert after is not None and after.fires == [S(4)] and after.skipped == 3


def test_the_stored_form_is_normalised_and_reads_back():
    r = rule(schedule="CRON_TZ=Europe/London 30 1 * * *", time_zone="")
    m = r.message
    assert (m.time_zone, m.schedule, m.on_repeated_hour, m.on_skipped_hour, m.catch_up, m.overlap) == (
        "Europe/London", "30 1 * * *", "once", "at_shift", "latest", "allow")
    assert rules.parsed_rule(m).schedule == r.schedule


def test_fire_task_ids_are_fixed_width_and_sort_by_time():
    ids = [rules.fire_task_id("abc", S(s)) for s in (0, 1, 10, 100000)]
    assert ids == sorted(ids) and len({len(i) for i in ids}) == 1 and ids[0] == "cron-abc-1893499200000"


@pytest.mark.parametrize("fields, field", [
    ({"owner_team": "x" * 129}, "rule.owner_team"),
    ({"overlap": "maybe"}, "rule.overlap"),
    ({"name": ""}, "rule.name"),
])
def test_bad_fields_are_refused_by_name(fields, field):
    with pytest.raises(InvalidArgument) as info:
        rule(**fields)
    assert info.value.field == field
