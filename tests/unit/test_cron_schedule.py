"""Cron schedules: parsing and rejection, daylight-saving policies in real zones, seconds rules, catch-up.

Every expected fire time below is written out in UTC by hand, from the zones' offsets:
- America/New_York: EST -5, EDT -4; 2026-03-08 02:00 EST -> 03:00 EDT (07:00 UTC),
  2026-11-01 02:00 EDT -> 01:00 EST (06:00 UTC).
- Europe/London: GMT 0, BST +1; 2026-03-29 01:00 GMT -> 02:00 BST (01:00 UTC),
  2026-10-25 02:00 BST -> 01:00 GMT (01:00 UTC).
- Australia/Lord_Howe: +10:30 standard, +11 summer; 2026-04-05 02:00 +11 -> 01:30 +10:30
  (2026-04-04 15:00 UTC), 2026-10-04 02:00 +10:30 -> 02:30 +11 (2026-10-03 15:30 UTC).
`test_zone_data_has_the_transitions_the_tables_assume` pins those transitions against zoneinfo, and
`test_agrees_with_a_minute_by_minute_oracle` checks the same rules against a brute-force model that
shares no code with the module.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
import zoneinfo
from typing import Any

import pytest

from dispatcher.base.errors import InvalidArgument
from dispatcher.cron.schedule import (
    CATCH_UP_LIMIT_MAX,
    CatchUp,
    CronRule,
    RepeatedHour,
    SkippedHour,
    catch_up_fires,
    fires_between,
    next_fire,
    parse_rule,
)

NY, LONDON, LORD_HOWE = "America/New_York", "Europe/London", "Australia/Lord_Howe"


def utc(text: str) -> dt.datetime:
    """'2026-03-08 07:00' (or with seconds) as an aware UTC datetime."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def utcs(*texts: str) -> list[dt.datetime]:
    return [utc(text) for text in texts]


def fires(rule: CronRule, after: str, until: str) -> list[dt.datetime]:
    return fires_between(rule, utc(after), utc(until))


# --- the zone data the tables rely on ------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "shift_utc", "before", "after"),
    [
        (NY, "2026-03-08 07:00", -5 * 60, -4 * 60),
        (NY, "2026-11-01 06:00", -4 * 60, -5 * 60),
        (LONDON, "2026-03-29 01:00", 0, 60),
        (LONDON, "2026-10-25 01:00", 60, 0),
        (LORD_HOWE, "2026-04-04 15:00", 11 * 60, 10 * 60 + 30),
        (LORD_HOWE, "2026-10-03 15:30", 10 * 60 + 30, 11 * 60),
    ],
)
def test_zone_data_has_the_transitions_the_tables_assume(zone: str, shift_utc: str, before: int, after: int) -> None:
    tz = zoneinfo.ZoneInfo(zone)
    shift = utc(shift_utc)
    assert (shift - dt.timedelta(seconds=1)).astimezone(tz).utcoffset() == dt.timedelta(minutes=before)
    assert shift.astimezone(tz).utcoffset() == dt.timedelta(minutes=after)


# --- daily rules at a time of day that is skipped or repeated -------------------------------------

DAILY_IN_GAP_OR_OVERLAP = [
    # zone, expression, policy, window (after, until], expected fires (UTC)
    (NY, "30 2 * * *", {"on_skipped_hour": "at_shift"}, "2026-03-07", "2026-03-10",
     ["2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30"]),
    (NY, "30 2 * * *", {"on_skipped_hour": "skip"}, "2026-03-07", "2026-03-10",
     ["2026-03-07 07:30", "2026-03-09 06:30"]),
    (NY, "30 1 * * *", {"on_repeated_hour": "once"}, "2026-10-31", "2026-11-03",
     ["2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"]),
    (NY, "30 1 * * *", {"on_repeated_hour": "twice"}, "2026-10-31", "2026-11-03",
     ["2026-10-31 05:30", "2026-11-01 05:30", "2026-11-01 06:30", "2026-11-02 06:30"]),
    (LONDON, "30 1 * * *", {"on_skipped_hour": "at_shift"}, "2026-03-28", "2026-03-31",
     ["2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"]),
    (LONDON, "30 1 * * *", {"on_skipped_hour": "skip"}, "2026-03-28", "2026-03-31",
     ["2026-03-28 01:30", "2026-03-30 00:30"]),
    (LONDON, "30 1 * * *", {"on_repeated_hour": "once"}, "2026-10-24", "2026-10-27",
     ["2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"]),
    (LONDON, "30 1 * * *", {"on_repeated_hour": "twice"}, "2026-10-24", "2026-10-27",
     ["2026-10-24 00:30", "2026-10-25 00:30", "2026-10-25 01:30", "2026-10-26 01:30"]),
    # Lord Howe: local 02:15 on Oct 3/4/5; the shift is Oct 4 02:00 +10:30 = Oct 3 15:30 UTC.
    (LORD_HOWE, "15 2 * * *", {"on_skipped_hour": "at_shift"}, "2026-10-02", "2026-10-05",
     ["2026-10-02 15:45", "2026-10-03 15:30", "2026-10-04 15:15"]),
    (LORD_HOWE, "15 2 * * *", {"on_skipped_hour": "skip"}, "2026-10-02", "2026-10-05",
     ["2026-10-02 15:45", "2026-10-04 15:15"]),
    # Lord Howe: local 01:45 on Apr 4/5/6; on Apr 5 it happens at +11 and again at +10:30.
    (LORD_HOWE, "45 1 * * *", {"on_repeated_hour": "once"}, "2026-04-03", "2026-04-06",
     ["2026-04-03 14:45", "2026-04-04 14:45", "2026-04-05 15:15"]),
    (LORD_HOWE, "45 1 * * *", {"on_repeated_hour": "twice"}, "2026-04-03", "2026-04-06",
     ["2026-04-03 14:45", "2026-04-04 14:45", "2026-04-04 15:15", "2026-04-05 15:15"]),
]


@pytest.mark.parametrize(("zone", "expression", "policy", "after", "until", "expected"), DAILY_IN_GAP_OR_OVERLAP)
def test_daily_rule_in_a_skipped_or_repeated_hour(
    zone: str, expression: str, policy: dict[str, Any], after: str, until: str, expected: list[str]
) -> None:
    # Given a daily rule whose time of day falls in the change day's gap or overlap
    rule = parse_rule(expression, zone, **policy)

    # When / Then: the day before, the change day and the day after
    assert fires(rule, after, until) == utcs(*expected)


def test_fixed_hour_defaults_run_once_on_every_day() -> None:
    gap = parse_rule("30 2 * * *", NY)
    overlap = parse_rule("30 1 * * *", NY)

    assert (gap.on_repeated_hour, gap.on_skipped_hour) == (RepeatedHour.ONCE, SkippedHour.AT_SHIFT)
    assert fires(gap, "2026-03-07", "2026-03-10") == utcs("2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30")
    assert fires(overlap, "2026-10-31", "2026-11-03") == utcs(
        "2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"
    )


def test_several_skipped_wall_times_collapse_into_one_fire_at_the_shift() -> None:
    # Given every 10 minutes of the 2 o'clock hour (a fixed hour: at_shift by default)
    rule = parse_rule("*/10 2 * * *", NY)

    # Then: six fires the day before, one at the shift (03:00 EDT = 07:00 UTC) on the change day
    assert fires(rule, "2026-03-07", "2026-03-08") == utcs(*(f"2026-03-07 07:{m:02}" for m in range(0, 60, 10)))
    assert fires(rule, "2026-03-08", "2026-03-09") == utcs("2026-03-08 07:00")


# --- rules that run every so often ----------------------------------------------------------------

EVERY_SO_OFTEN = [
    # New York: the clocks skip 02:00-03:00 EST->EDT, then repeat 01:00-02:00 EDT->EST.
    (NY, "0 * * * *", "2026-03-08 04:30", "2026-03-08 09:30",
     ["2026-03-08 05:00", "2026-03-08 06:00", "2026-03-08 07:00", "2026-03-08 08:00", "2026-03-08 09:00"]),
    (NY, "0 * * * *", "2026-11-01 03:30", "2026-11-01 08:30",
     ["2026-11-01 04:00", "2026-11-01 05:00", "2026-11-01 06:00", "2026-11-01 07:00", "2026-11-01 08:00"]),
    (NY, "*/15 * * * *", "2026-03-08 06:30", "2026-03-08 07:30",
     ["2026-03-08 06:45", "2026-03-08 07:00", "2026-03-08 07:15", "2026-03-08 07:30"]),
    (NY, "*/15 * * * *", "2026-11-01 05:30", "2026-11-01 06:30",
     ["2026-11-01 05:45", "2026-11-01 06:00", "2026-11-01 06:15", "2026-11-01 06:30"]),
    # London: 01:00 GMT -> 02:00 BST, then 02:00 BST -> 01:00 GMT.
    (LONDON, "0 * * * *", "2026-03-28 23:30", "2026-03-29 03:00",
     ["2026-03-29 00:00", "2026-03-29 01:00", "2026-03-29 02:00", "2026-03-29 03:00"]),
    (LONDON, "0 * * * *", "2026-10-24 23:30", "2026-10-25 03:00",
     ["2026-10-25 00:00", "2026-10-25 01:00", "2026-10-25 02:00", "2026-10-25 03:00"]),
    (LONDON, "*/15 * * * *", "2026-03-29 00:30", "2026-03-29 01:30",
     ["2026-03-29 00:45", "2026-03-29 01:00", "2026-03-29 01:15", "2026-03-29 01:30"]),
    (LONDON, "*/15 * * * *", "2026-10-25 00:30", "2026-10-25 01:30",
     ["2026-10-25 00:45", "2026-10-25 01:00", "2026-10-25 01:15", "2026-10-25 01:30"]),
    # Lord Howe, 30-minute shifts. October: 01:00 (+10:30) = 14:30, 02:00 never happens, 03:00 (+11) = 16:00.
    (LORD_HOWE, "0 * * * *", "2026-10-03 14:00", "2026-10-03 17:00",
     ["2026-10-03 14:30", "2026-10-03 16:00", "2026-10-03 17:00"]),
    # April: 00:00 and 01:00 at +11, the repeated half hour 01:30-02:00 holds no :00, 02:00 at +10:30.
    (LORD_HOWE, "0 * * * *", "2026-04-04 12:30", "2026-04-04 16:30",
     ["2026-04-04 13:00", "2026-04-04 14:00", "2026-04-04 15:30", "2026-04-04 16:30"]),
    (LORD_HOWE, "*/15 * * * *", "2026-10-03 15:00", "2026-10-03 16:00",
     ["2026-10-03 15:15", "2026-10-03 15:30", "2026-10-03 15:45", "2026-10-03 16:00"]),
    (LORD_HOWE, "*/15 * * * *", "2026-04-04 14:00", "2026-04-04 15:30",
     ["2026-04-04 14:15", "2026-04-04 14:30", "2026-04-04 14:45", "2026-04-04 15:00", "2026-04-04 15:15",
      "2026-04-04 15:30"]),
]


@pytest.mark.parametrize(("zone", "expression", "after", "until", "expected"), EVERY_SO_OFTEN)
def test_wildcard_hour_rule_follows_elapsed_time_by_default(
    zone: str, expression: str, after: str, until: str, expected: list[str]
) -> None:
    rule = parse_rule(expression, zone)

    assert (rule.on_repeated_hour, rule.on_skipped_hour) == (RepeatedHour.TWICE, SkippedHour.SKIP)
    assert fires(rule, after, until) == utcs(*expected)


@pytest.mark.parametrize("zone", [NY, LONDON])
@pytest.mark.parametrize("week_start", ["2026-03-05", "2026-10-22", "2026-10-29"])
def test_hourly_rule_is_hourly_in_utc_across_a_week_with_a_whole_hour_shift(zone: str, week_start: str) -> None:
    # An independent check: with whole-hour offsets, "every hour on the hour" is every UTC hour.
    rule = parse_rule("0 * * * *", zone)
    start = utc(week_start)

    assert fires_between(rule, start, start + dt.timedelta(days=7)) == [
        start + dt.timedelta(hours=h) for h in range(1, 7 * 24 + 1)
    ]


def test_a_window_of_a_whole_year_sees_both_shifts() -> None:
    # Noon in London is 11:00 UTC from 2026-03-29 to 2026-10-24 (BST), 12:00 UTC otherwise (GMT);
    # the offset is the same at both ends of the window, so both shifts must be found inside it.
    rule = parse_rule("0 12 * * *", LONDON)
    days = [dt.date(2026, 1, 1) + dt.timedelta(days=n) for n in range(365)]

    assert fires(rule, "2026-01-01", "2027-01-01") == [
        dt.datetime(d.year, d.month, d.day, 11 if dt.date(2026, 3, 29) <= d < dt.date(2026, 10, 25) else 12,
                    tzinfo=dt.UTC)
        for d in days
    ]


OVERRIDDEN = [
    # An hourly rule told to fire a repeated wall time once loses an hour of elapsed time.
    (NY, "0 * * * *", {"on_repeated_hour": "once"}, "2026-11-01 03:30", "2026-11-01 08:30",
     ["2026-11-01 04:00", "2026-11-01 05:00", "2026-11-01 07:00", "2026-11-01 08:00"]),
    (NY, "*/15 * * * *", {"on_repeated_hour": "once"}, "2026-11-01 05:30", "2026-11-01 07:00",
     ["2026-11-01 05:45", "2026-11-01 07:00"]),
    # at_shift: 02:00 and 02:30 never happen; their fire at the shift (07:00) is the one of 03:00 EDT.
    (NY, "*/30 * * * *", {"on_skipped_hour": "at_shift"}, "2026-03-08 06:00", "2026-03-08 08:00",
     ["2026-03-08 06:30", "2026-03-08 07:00", "2026-03-08 07:30", "2026-03-08 08:00"]),
    # at_shift on Lord Howe: 02:00 never happens and fires at the shift, half an hour before 03:00.
    (LORD_HOWE, "0 * * * *", {"on_skipped_hour": "at_shift"}, "2026-10-03 14:00", "2026-10-03 17:00",
     ["2026-10-03 14:30", "2026-10-03 15:30", "2026-10-03 16:00", "2026-10-03 17:00"]),
]


@pytest.mark.parametrize(("zone", "expression", "policy", "after", "until", "expected"), OVERRIDDEN)
def test_explicit_policy_overrides_the_default(
    zone: str, expression: str, policy: dict[str, Any], after: str, until: str, expected: list[str]
) -> None:
    assert fires(parse_rule(expression, zone, **policy), after, until) == utcs(*expected)


@pytest.mark.parametrize(
    ("expression", "repeated", "skipped"),
    [
        ("30 2 * * *", "once", "at_shift"),
        ("0 1-3 * * *", "once", "at_shift"),
        ("0 0-23 * * *", "once", "at_shift"),  # only `*` and `*/n` read as "every so often"
        ("0 2,14 * * *", "once", "at_shift"),
        ("0 * * * *", "twice", "skip"),
        ("*/5 * * * *", "twice", "skip"),
        ("0 */2 * * *", "twice", "skip"),
        ("0 0 * * * *", "twice", "skip"),  # 6 fields: the hour is the third
        ("0 0 2 * * *", "once", "at_shift"),
    ],
)
def test_default_policies_follow_the_hour_field(expression: str, repeated: str, skipped: str) -> None:
    rule = parse_rule(expression, "UTC")

    assert (rule.on_repeated_hour, rule.on_skipped_hour) == (repeated, skipped)


# --- times of day away from the change --------------------------------------------------------------

NOON = [
    (NY, "2026-03-07", "2026-03-10", ["2026-03-07 17:00", "2026-03-08 16:00", "2026-03-09 16:00"]),
    (NY, "2026-10-31", "2026-11-03", ["2026-10-31 16:00", "2026-11-01 17:00", "2026-11-02 17:00"]),
    (LONDON, "2026-03-28", "2026-03-31", ["2026-03-28 12:00", "2026-03-29 11:00", "2026-03-30 11:00"]),
    (LONDON, "2026-10-24", "2026-10-27", ["2026-10-24 11:00", "2026-10-25 12:00", "2026-10-26 12:00"]),
    (LORD_HOWE, "2026-04-03", "2026-04-06", ["2026-04-03 01:00", "2026-04-04 01:00", "2026-04-05 01:30"]),
    (LORD_HOWE, "2026-10-02", "2026-10-05", ["2026-10-02 01:30", "2026-10-03 01:30", "2026-10-04 01:00"]),
]


@pytest.mark.parametrize("repeated", ["once", "twice"])
@pytest.mark.parametrize("skipped", ["at_shift", "skip"])
@pytest.mark.parametrize(("zone", "after", "until", "expected"), NOON)
def test_rule_outside_the_transition_keeps_its_local_time(
    zone: str, after: str, until: str, expected: list[str], repeated: str, skipped: str
) -> None:
    rule = parse_rule("0 12 * * *", zone, on_repeated_hour=repeated, on_skipped_hour=skipped)

    assert fires(rule, after, until) == utcs(*expected)


def test_cron_tz_prefix_gives_the_zone() -> None:
    rule = parse_rule("CRON_TZ=Asia/Singapore 0 0 * * *")

    assert (rule.expression, rule.time_zone) == ("0 0 * * *", "Asia/Singapore")
    assert fires(rule, "2026-06-30 12:00", "2026-07-02 12:00") == utcs("2026-06-30 16:00", "2026-07-01 16:00")
    assert parse_rule("CRON_TZ=Asia/Singapore 0 0 * * *", "Asia/Singapore") == rule
    assert str(rule) == "CRON_TZ=Asia/Singapore 0 0 * * *"


# --- seconds -------------------------------------------------------------------------------------


def test_every_second_rule_fires_300_times_in_300_seconds() -> None:
    rule = parse_rule("*/1 * * * * *", "UTC")
    start = utc("2026-01-01 00:00:00")

    got = fires_between(rule, start, start + dt.timedelta(seconds=300))

    assert got == [start + dt.timedelta(seconds=s) for s in range(1, 301)]


@pytest.mark.parametrize(
    ("expression", "after", "until", "expected"),
    [
        # seconds first: second 30 of every minute
        ("30 * * * * *", "2026-01-01 00:00", "2026-01-01 00:05",
         ["2026-01-01 00:00:30", "2026-01-01 00:01:30", "2026-01-01 00:02:30", "2026-01-01 00:03:30",
          "2026-01-01 00:04:30"]),
        # second 0 of minute 30: half past every hour, not second 30 of minute 0
        ("0 30 * * * *", "2026-01-01 00:00", "2026-01-01 03:00",
         ["2026-01-01 00:30", "2026-01-01 01:30", "2026-01-01 02:30"]),
        ("*/20 0 12 * * *", "2026-01-01 00:00", "2026-01-02 00:00",
         ["2026-01-01 12:00:00", "2026-01-01 12:00:20", "2026-01-01 12:00:40"]),
    ],
)
def test_six_fields_put_seconds_first(expression: str, after: str, until: str, expected: list[str]) -> None:
    assert fires(parse_rule(expression, "UTC"), after, until) == utcs(*expected)


def test_restricted_day_fields_combine_with_or() -> None:
    # 2026-07-01 is a Wednesday: the 1st of the month or any Monday.
    rule = parse_rule("0 0 1 * MON", "UTC")

    assert fires(rule, "2026-06-25", "2026-07-14") == utcs("2026-06-29", "2026-07-01", "2026-07-06", "2026-07-13")


def test_every_second_rule_is_continuous_across_the_spring_shift() -> None:
    rule = parse_rule("*/1 * * * * *", NY)

    assert fires(rule, "2026-03-08 06:59:58", "2026-03-08 07:00:02") == utcs(
        "2026-03-08 06:59:59", "2026-03-08 07:00:00", "2026-03-08 07:00:01", "2026-03-08 07:00:02"
    )


def test_thousands_of_one_second_fires_take_well_under_a_second() -> None:
    rule = parse_rule("*/1 * * * * *", NY)
    start = utc("2026-03-08 06:00")

    began = time.perf_counter()
    got = fires_between(rule, start, start + dt.timedelta(hours=1))
    elapsed = time.perf_counter() - began

    assert len(got) == 3600
    assert elapsed < 1.0


# --- window edges, results, next_fire ------------------------------------------------------------


def test_window_is_after_exclusive_until_inclusive_and_results_are_utc() -> None:
    rule = parse_rule("0 * * * *", NY)
    local = zoneinfo.ZoneInfo(NY)

    got = fires_between(rule, utc("2026-01-01 01:00"), utc("2026-01-01 03:00"))
    same = fires_between(rule, utc("2026-01-01 01:00").astimezone(local), utc("2026-01-01 03:00").astimezone(local))

    assert got == same == utcs("2026-01-01 02:00", "2026-01-01 03:00")
    assert all(fire.tzinfo is dt.UTC for fire in got)
    assert fires_between(rule, utc("2026-01-01 03:00"), utc("2026-01-01 03:00")) == []
    assert fires_between(rule, utc("2026-01-01 03:00"), utc("2026-01-01 01:00")) == []


@pytest.mark.parametrize(
    ("expression", "zone", "policy", "after", "expected"),
    [
        ("30 2 * * *", NY, {}, "2026-03-07 08:00", "2026-03-08 07:00"),
        ("30 1 * * *", NY, {"on_repeated_hour": "twice"}, "2026-11-01 05:30", "2026-11-01 06:30"),
        ("30 1 * * *", NY, {"on_repeated_hour": "once"}, "2026-11-01 05:30", "2026-11-02 06:30"),
        # after the first 01:30 of Nov 1 but before its repeat: "once" never fires the repeat
        ("30 1 * * *", NY, {"on_repeated_hour": "once"}, "2026-11-01 06:10", "2026-11-02 06:30"),
        ("0 0 29 2 *", "UTC", {}, "2026-01-01 00:00", "2028-02-29 00:00"),
        ("*/1 * * * * *", "UTC", {}, "2026-01-01 00:00:00.5", "2026-01-01 00:00:01"),
    ],
)
def test_next_fire(expression: str, zone: str, policy: dict[str, Any], after: str, expected: str) -> None:
    assert next_fire(parse_rule(expression, zone, **policy), utc(after)) == utc(expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda rule: fires_between(rule, dt.datetime(2026, 1, 1), utc("2026-01-02")),
        lambda rule: fires_between(rule, utc("2026-01-01"), dt.datetime(2026, 1, 2)),
        lambda rule: next_fire(rule, dt.datetime(2026, 1, 1)),
        lambda rule: catch_up_fires(rule, dt.datetime(2026, 1, 1), utc("2026-01-02")),
        lambda rule: catch_up_fires(rule, utc("2026-01-01"), dt.datetime(2026, 1, 2)),
    ],
)
def test_naive_datetimes_are_rejected(call: Any) -> None:
    with pytest.raises(ValueError, match="aware"):
        call(parse_rule("0 * * * *", "UTC"))


# --- catch-up --------------------------------------------------------------------------------------

HOURLY_MISSED = ["2026-01-01 01:00", "2026-01-01 02:00", "2026-01-01 03:00", "2026-01-01 04:00", "2026-01-01 05:00"]


@pytest.mark.parametrize(
    ("catch_up", "limit", "last_fire", "now", "expected"),
    [
        ("skip", 100, "2026-01-01 00:00", "2026-01-01 05:30", []),
        ("latest", 100, "2026-01-01 00:00", "2026-01-01 05:30", ["2026-01-01 05:00"]),
        ("all", 100, "2026-01-01 00:00", "2026-01-01 05:30", HOURLY_MISSED),
        ("all", 3, "2026-01-01 00:00", "2026-01-01 05:30", HOURLY_MISSED[-3:]),
        ("all", 5, "2026-01-01 00:00", "2026-01-01 05:30", HOURLY_MISSED),
        ("all", 1, "2026-01-01 00:00", "2026-01-01 05:30", ["2026-01-01 05:00"]),
        ("latest", 100, "2026-01-01 00:00", "2026-01-01 05:00", ["2026-01-01 05:00"]),  # due at `now`
        ("all", 100, "2026-01-01 04:59", "2026-01-01 05:00", ["2026-01-01 05:00"]),
        ("latest", 100, "2026-01-01 05:00", "2026-01-01 05:30", []),  # nothing missed
        ("all", 100, "2026-01-01 05:30", "2026-01-01 05:00", []),  # clock behind the last fire
        ("latest", 100, "2025-01-01 00:00", "2026-01-01 05:30", ["2026-01-01 05:00"]),  # a long outage
    ],
)
def test_catch_up_policy(catch_up: str, limit: int, last_fire: str, now: str, expected: list[str]) -> None:
    rule = parse_rule("0 * * * *", "UTC", catch_up=catch_up, catch_up_limit=limit)

    assert catch_up_fires(rule, utc(last_fire), utc(now)) == utcs(*expected)


@pytest.mark.parametrize("catch_up", ["skip", "latest", "all"])
def test_new_rule_has_missed_nothing(catch_up: str) -> None:
    rule = parse_rule("0 * * * *", "UTC", catch_up=catch_up)

    assert catch_up_fires(rule, None, utc("2026-01-01 05:30")) == []


def test_catch_up_all_counts_both_occurrences_of_a_repeated_hour() -> None:
    rule = parse_rule("0 * * * *", NY, catch_up="all")  # twice/skip by default

    got = catch_up_fires(rule, utc("2026-11-01 04:00"), utc("2026-11-01 07:30"))

    assert got == utcs("2026-11-01 05:00", "2026-11-01 06:00", "2026-11-01 07:00")


def test_catch_up_of_a_long_outage_costs_only_the_fires_kept() -> None:
    rule = parse_rule("*/1 * * * * *", "UTC", catch_up="all", catch_up_limit=CATCH_UP_LIMIT_MAX)
    now = utc("2026-01-08 00:00")

    began = time.perf_counter()
    got = catch_up_fires(rule, now - dt.timedelta(days=7), now)
    elapsed = time.perf_counter() - began

    assert got == [now - dt.timedelta(seconds=s) for s in range(CATCH_UP_LIMIT_MAX - 1, -1, -1)]
    assert elapsed < 1.0


# --- rejections ------------------------------------------------------------------------------------

REJECTED: list[tuple[str, str, dict[str, Any], str]] = [
    # schedule, time_zone, keyword arguments, field named
    ("", "UTC", {}, "schedule"),
    ("   ", "UTC", {}, "schedule"),
    ("CRON_TZ=UTC", "", {}, "schedule"),
    ("0 0 * *", "UTC", {}, "schedule"),
    ("0 0 0 1 1 * 2030", "UTC", {}, "schedule"),
    ("@daily", "UTC", {}, "schedule"),
    ("61 * * * *", "UTC", {}, "schedule"),
    ("0 24 * * *", "UTC", {}, "schedule"),
    ("60 * * * * *", "UTC", {}, "schedule"),
    ("x y z w v", "UTC", {}, "schedule"),
    ("0 0 31 2 *", "UTC", {}, "schedule"),  # never fires
    ("0 0 30 2 *", "UTC", {}, "schedule"),
    ("H * * * *", "UTC", {}, "schedule"),
    ("R * * * *", "UTC", {}, "schedule"),  # croniter would draw a new minute on every parse
    ("TZ=UTC 0 0 * * *", "", {}, "schedule"),
    ("0 0 * * *", "", {}, "time_zone"),  # no zone at all
    ("0 0 * * *", "Mars/Olympus_Mons", {}, "time_zone"),
    ("0 0 * * *", "america/new_york ", {}, "time_zone"),
    ("0 0 * * *", "America", {}, "time_zone"),  # a directory of the zone database
    ("0 0 * * *", "../../../etc/passwd", {}, "time_zone"),
    ("0 0 * * *", "America/../UTC", {}, "time_zone"),
    ("0 0 * * *", "/etc/localtime", {}, "time_zone"),
    ("0 0 * * *", "zone.tab", {}, "time_zone"),  # a file of the zone database, not a zone
    ("0 0 * * *", "UTC\x00", {}, "time_zone"),
    ("CRON_TZ= 0 0 * * *", "", {}, "time_zone"),
    ("CRON_TZ=Nowhere/Town 0 0 * * *", "", {}, "time_zone"),
    ("CRON_TZ=Asia/Singapore 0 0 * * *", "Europe/London", {}, "time_zone"),
    ("0 0 * * *", "UTC", {"on_repeated_hour": "sometimes"}, "on_repeated_hour"),
    ("0 0 * * *", "UTC", {"on_repeated_hour": "ONCE"}, "on_repeated_hour"),
    ("0 0 * * *", "UTC", {"on_repeated_hour": ""}, "on_repeated_hour"),
    ("0 0 * * *", "UTC", {"on_skipped_hour": "later"}, "on_skipped_hour"),
    ("0 0 * * *", "UTC", {"catch_up": "none"}, "catch_up"),
    ("0 0 * * *", "UTC", {"catch_up": None}, "catch_up"),
    ("0 0 * * *", "UTC", {"catch_up_limit": 0}, "catch_up_limit"),
    ("0 0 * * *", "UTC", {"catch_up_limit": CATCH_UP_LIMIT_MAX + 1}, "catch_up_limit"),
    ("0 0 * * *", "UTC", {"catch_up_limit": -1}, "catch_up_limit"),
    ("0 0 * * *", "UTC", {"catch_up_limit": True}, "catch_up_limit"),
    ("0 0 * * *", "UTC", {"catch_up_limit": 2.5}, "catch_up_limit"),
    ("0 0 * * *", "UTC", {"catch_up_limit": "10"}, "catch_up_limit"),
]


@pytest.mark.parametrize(("schedule", "zone", "kwargs", "field"), REJECTED)
def test_bad_input_is_rejected_naming_its_field(schedule: str, zone: str, kwargs: dict[str, Any], field: str) -> None:
    rule = None
    with pytest.raises(InvalidArgument) as caught:
        rule = parse_rule(schedule, zone, **kwargs)

    assert rule is None
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("kwargs", "allowed"),
    [
        ({"on_repeated_hour": "x"}, "'once', 'twice'"),
        ({"on_skipped_hour": "x"}, "'at_shift', 'skip'"),
        ({"catch_up": "x"}, "'skip', 'latest', 'all'"),
        ({"catch_up_limit": 0}, f"from 1 to {CATCH_UP_LIMIT_MAX}"),
    ],
)
def test_messages_say_what_is_allowed(kwargs: dict[str, Any], allowed: str) -> None:
    with pytest.raises(InvalidArgument, match=allowed):
        parse_rule("0 0 * * *", "UTC", **kwargs)


def test_messages_quote_a_long_caller_value_cut_short() -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_rule("0 0 * * *", "Europe/" + "x" * 10_000)

    assert len(str(caught.value)) < 300
    assert "10007 characters" in str(caught.value)


def test_constructing_a_rule_directly_is_validated_and_normalized() -> None:
    with pytest.raises(InvalidArgument) as caught:
        CronRule("0 0 31 2 *", "UTC", RepeatedHour.ONCE, SkippedHour.AT_SHIFT)
    assert caught.value.field == "schedule"

    rule = CronRule("0  0 * *\t*", "UTC", "twice", "skip", "all")  # type: ignore[arg-type]
    assert rule.expression == "0 0 * * *"
    assert (rule.on_repeated_hour, rule.on_skipped_hour, rule.catch_up) == (
        RepeatedHour.TWICE, SkippedHour.SKIP, CatchUp.ALL
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.time_zone = "Europe/London"  # type: ignore[misc]


# --- an independent model ------------------------------------------------------------------------


def _field(text: str, size: int) -> set[int]:
    """A minute or hour field of the forms the oracle needs: `*`, `*/n`, `a`, `a,b`."""
    if text == "*":
        return set(range(size))
    if text.startswith("*/"):
        return set(range(0, size, int(text[2:])))
    return {int(part) for part in text.split(",")}


def _oracle(
    expression: str, zone: str, repeated: str, skipped: str, after: dt.datetime, until: dt.datetime
) -> list[dt.datetime]:
    """Fires by brute force, minute by minute in UTC: a minute fires if its wall time matches (only its
    first occurrence under "once"); a forward shift fires if any wall time it skipped matches ("at_shift")."""
    minute_field, hour_field, *rest = expression.split()
    assert rest == ["*", "*", "*"]
    minutes, hours = _field(minute_field, 60), _field(hour_field, 24)
    tz = zoneinfo.ZoneInfo(zone)
    result = []
    instant = after.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    while instant <= until:
        local = instant.astimezone(tz)
        if local.minute in minutes and local.hour in hours and (repeated == "twice" or local.fold == 0):
            result.append(instant)
        before = (instant - dt.timedelta(minutes=1)).astimezone(tz).utcoffset()
        shift = local.utcoffset()
        assert before is not None and shift is not None
        if skipped == "at_shift" and shift > before and instant not in result:
            skipped_wall = (instant + before).replace(tzinfo=None)
            while skipped_wall < (instant + shift).replace(tzinfo=None):
                if skipped_wall.minute in minutes and skipped_wall.hour in hours:
                    result.append(instant)
                    break
                skipped_wall += dt.timedelta(minutes=1)
        instant += dt.timedelta(minutes=1)
    return result


@pytest.mark.parametrize("repeated", ["once", "twice"])
@pytest.mark.parametrize("skipped", ["at_shift", "skip"])
@pytest.mark.parametrize("expression", ["30 2 * * *", "30 1 * * *", "15 2 * * *", "45 1 * * *", "0 * * * *",
                                        "*/15 * * * *", "*/10 2 * * *", "0 12 * * *", "0,30 1,2 * * *"])
@pytest.mark.parametrize(
    ("zone", "shift_utc"),
    [
        (NY, "2026-03-08 07:00"), (NY, "2026-11-01 06:00"),
        (LONDON, "2026-03-29 01:00"), (LONDON, "2026-10-25 01:00"),
        (LORD_HOWE, "2026-04-04 15:00"), (LORD_HOWE, "2026-10-03 15:30"),
    ],
)
def test_agrees_with_a_minute_by_minute_oracle(
    zone: str, shift_utc: str, expression: str, skipped: str, repeated: str
) -> None:
    rule = parse_rule(expression, zone, on_repeated_hour=repeated, on_skipped_hour=skipped)
    shift = utc(shift_utc)
    after, until = shift - dt.timedelta(hours=36), shift + dt.timedelta(hours=36)

    assert fires_between(rule, after, until) == _oracle(expression, zone, repeated, skipped, after, until)
