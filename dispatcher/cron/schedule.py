"""When a cron rule fires, as UTC instants, across daylight-saving changes and outages.

Pure: rules and instants in, instants out; no clock, no I/O. docs/cron.md is the user's view.

Design note
-----------
A rule is a cron expression read on the wall clock of one IANA zone. 5 fields are
minute hour day-of-month month day-of-week; 6 fields put the SECONDS FIRST (the
Quartz/Spring/robfig order, so `*/1 * * * * *` fires every second). Nothing is ever
read in the node's own zone: a rule without a zone is rejected.

Wall clocks break twice a year, and we compute on the offsets the zone really uses, never
assuming a one-hour shift (Australia/Lord_Howe moves by 30 minutes):

- A skipped hour (clocks go forward; those wall times never happen). "at_shift" fires once at
  the instant of the shift, however many of the rule's wall times fell in the gap, and not at
  all if the rule also fires for real at that instant. "skip" drops them.
- A repeated hour (clocks go back; those wall times happen twice). "once" fires the first
  occurrence only (fold=0); "twice" fires both, an offset apart.
- Defaults, as Vixie cron does: an hour field of `*` or `*/n` means "every so often", so such a
  rule follows elapsed time ("twice" and "skip": an hourly job stays hourly in real time).
  Any other hour field names a time of day ("once" and "at_shift": a 02:30 daily job runs
  exactly once on every day, the change days included).

How: the window's instants are cut where the zone's offset changes. Inside one piece a wall
time maps to exactly one instant (wall - offset), so croniter iterates naive wall times there,
at the expression's own step, and the policies only look at the pieces' edges: a wall time
whose fold=0 reading is in an earlier piece is a repeat, and a forward shift is a gap.

Catch-up after an outage ("skip", "latest", "all" up to `catch_up_limit`) searches backwards
from `now`, so a long outage of a frequent rule costs only the fires that are kept.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import re
import zoneinfo
from collections.abc import Iterator
from typing import TypeVar

from croniter import CroniterBadDateError, CroniterError, croniter

from dispatcher.base.errors import InvalidArgument, bounded, quote

CATCH_UP_LIMIT_MAX = 1000
"""Most fires one catch-up materializes (policy "all")."""

_FIELD = re.compile(r"\S+", re.ASCII)  # croniter splits on ASCII whitespace only; so do we
_PREFIX = re.compile(r"CRON_TZ=(\S*)\s*(.*)", re.ASCII | re.DOTALL)
_WILDCARD_HOUR = re.compile(r"\*(/\d+)?")
_HASHED = re.compile(r"[hr](\(\d+-\d+\))?(/\d+)?", re.IGNORECASE)
_FIELDS_ALLOWED = "5 fields (minute hour day-of-month month day-of-week) or 6 (second first, then those 5)"
_PROBE_STEP = dt.timedelta(days=1)
"""How often the zone's offset is probed. No two offset changes in the tz database are under four days apart
(Africa/Freetown 1939; since 1970 none under a week), so a daily probe sees every one."""
_TICK = dt.timedelta(microseconds=1)
_HORIZON = dt.timedelta(days=50 * 366)  # croniter's own search horizon
_VALID_SINCE = dt.datetime(2000, 1, 1)  # any date: croniter only checks that something matches after it


class RepeatedHour(enum.StrEnum):
    """What a rule does with wall times that happen twice (clocks set back)."""

    ONCE = "once"
    TWICE = "twice"


class SkippedHour(enum.StrEnum):
    """What a rule does with wall times that never happen (clocks set forward)."""

    AT_SHIFT = "at_shift"
    SKIP = "skip"


class CatchUp(enum.StrEnum):
    """Which missed fires are materialized after an outage."""

    SKIP = "skip"
    LATEST = "latest"
    ALL = "all"


@dataclasses.dataclass(frozen=True, slots=True)
class CronRule:
    """A validated rule; constructing one directly checks it exactly as `parse_rule` does."""

    expression: str
    """The cron fields only (5, or 6 with seconds first), joined by single spaces."""
    time_zone: str
    """IANA zone whose wall clock the expression is read on."""
    on_repeated_hour: RepeatedHour
    on_skipped_hour: SkippedHour
    catch_up: CatchUp = CatchUp.LATEST
    catch_up_limit: int = 100
    """Most missed fires "all" materializes (the most recent ones); 1..CATCH_UP_LIMIT_MAX."""

    def __post_init__(self) -> None:
        fields = _check_fields(self.expression)
        _load_zone(self.time_zone)
        # Accept plain strings for convenience but store the enums.
        object.__setattr__(self, "expression", " ".join(fields))
        object.__setattr__(self, "on_repeated_hour", _choice("on_repeated_hour", self.on_repeated_hour, RepeatedHour))
        object.__setattr__(self, "on_skipped_hour", _choice("on_skipped_hour", self.on_skipped_hour, SkippedHour))
        object.__setattr__(self, "catch_up", _choice("catch_up", self.catch_up, CatchUp))
        limit = self.catch_up_limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= CATCH_UP_LIMIT_MAX:
            problem = f"must be an integer from 1 to {CATCH_UP_LIMIT_MAX}, got {quote(limit)}"
            raise InvalidArgument("catch_up_limit", problem)

    def __str__(self) -> str:
        return f"CRON_TZ={self.time_zone} {self.expression}"


def parse_rule(
    schedule: str,
    time_zone: str = "",
    *,
    on_repeated_hour: str | None = None,
    on_skipped_hour: str | None = None,
    catch_up: str = "latest",
    catch_up_limit: int = 100,
) -> CronRule:
    """A rule from its user-facing spelling; raises InvalidArgument naming the bad field.

    `schedule` may start with `CRON_TZ=<zone> `, which then gives the zone (a different
    `time_zone` as well is an error). A policy left None takes the default for the rule's hour
    field (module docstring)."""
    text = schedule.strip()
    prefixed = _PREFIX.fullmatch(text)
    if prefixed:
        prefix_zone, text = prefixed.groups()
        if not prefix_zone:
            raise InvalidArgument("time_zone", "CRON_TZ= names no zone; write e.g. 'CRON_TZ=Europe/London 0 9 * * *'")
        if time_zone and time_zone != prefix_zone:
            raise InvalidArgument(
                "time_zone",
                f"{quote(time_zone)} contradicts the schedule's CRON_TZ={quote(prefix_zone)}; give the zone once",
            )
        time_zone = prefix_zone
    fields = _FIELD.findall(text)
    if fields and "=" in fields[0]:
        raise InvalidArgument("schedule", f"only a CRON_TZ=<zone> prefix may precede the fields, got {quote(text)}")
    follows_elapsed_time = len(fields) in (5, 6) and _WILDCARD_HOUR.fullmatch(fields[len(fields) - 4]) is not None
    if on_repeated_hour is None:
        on_repeated_hour = RepeatedHour.TWICE if follows_elapsed_time else RepeatedHour.ONCE
    if on_skipped_hour is None:
        on_skipped_hour = SkippedHour.SKIP if follows_elapsed_time else SkippedHour.AT_SHIFT
    return CronRule(
        expression=text,
        time_zone=time_zone,
        on_repeated_hour=_choice("on_repeated_hour", on_repeated_hour, RepeatedHour),
        on_skipped_hour=_choice("on_skipped_hour", on_skipped_hour, SkippedHour),
        catch_up=_choice("catch_up", catch_up, CatchUp),
        catch_up_limit=catch_up_limit,
    )


def fires_between(rule: CronRule, after: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """Every fire strictly after `after` and at or before `until`, as sorted, unique, aware UTC instants."""
    after, until = _utc(after, "after"), _utc(until, "until")
    if until <= after:
        return []
    zone = zoneinfo.ZoneInfo(rule.time_zone)
    pieces = _offset_pieces(zone, after, until)
    fires: set[dt.datetime] = set()
    for i, (start, offset) in enumerate(pieces):
        # Piece 0 is (after, ...]; a later piece starts at its shift, which is its own first instant.
        first = start + _TICK if i == 0 else start
        last = pieces[i + 1][0] - _TICK if i + 1 < len(pieces) else until
        for wall in _walls(rule, _naive(first + offset), _naive(last + offset)):
            if rule.on_repeated_hour is RepeatedHour.ONCE and wall.replace(tzinfo=zone).utcoffset() != offset:
                continue  # the fold=0 reading is another offset: this wall time already happened
            fires.add((wall - offset).replace(tzinfo=dt.UTC))
        before = pieces[i - 1][1] if i else offset
        if rule.on_skipped_hour is SkippedHour.AT_SHIFT and offset > before:
            # Clocks jumped forward at `start`: walls in [start + before, start + offset) never happen.
            gap = _walls(rule, _naive(start + before), _naive(start + offset - _TICK))
            if next(gap, None) is not None:
                fires.add(start)  # a set: no duplicate if the rule also fires for real at the shift
    return sorted(fires)


def next_fire(rule: CronRule, after: dt.datetime) -> dt.datetime:
    """The first fire strictly after `after` (aware UTC). ValueError if none within 50 years."""
    after = _utc(after, "after")
    low, span = after, _first_span(rule)
    while low - after < _HORIZON:
        fires = fires_between(rule, low, low + span)
        if fires:
            return fires[0]
        low, span = low + span, span * 2
    raise ValueError(f"{rule} does not fire within 50 years after {after.isoformat()}")


def catch_up_fires(rule: CronRule, last_fire: dt.datetime | None, now: dt.datetime) -> list[dt.datetime]:
    """The missed fires in (last_fire, now] to materialize after an outage, oldest first.

    "skip": none; "latest": the most recent one; "all": the most recent `catch_up_limit`.
    A new rule (last_fire None) has missed nothing. The caller then resumes from `now`."""
    now = _utc(now, "now")
    if last_fire is None or rule.catch_up is CatchUp.SKIP:
        return []
    last_fire = _utc(last_fire, "last_fire")
    wanted = 1 if rule.catch_up is CatchUp.LATEST else rule.catch_up_limit
    found: list[dt.datetime] = []
    high, span = now, _first_span(rule)
    while high > last_fire and len(found) < wanted:
        low = high - span if high - last_fire > span else last_fire
        found = fires_between(rule, low, high) + found
        high, span = low, span * 2
    return found[-wanted:]


def _check_fields(expression: str) -> list[str]:
    """The expression's fields, or InvalidArgument("schedule", ...)."""
    fields = _FIELD.findall(expression)
    if not fields:
        raise InvalidArgument("schedule", f"is empty; expected {_FIELDS_ALLOWED}")
    if len(fields) not in (5, 6):
        macro = "; macros such as @daily are not supported" if fields[0].startswith("@") else ""
        problem = f"{quote(expression)} has {len(fields)} field(s); expected {_FIELDS_ALLOWED}{macro}"
        raise InvalidArgument("schedule", problem)
    if any(_HASHED.fullmatch(field) for field in fields):
        # croniter draws R afresh on every parse: two nodes would disagree on the times.
        raise InvalidArgument("schedule", f"{quote(expression)}: hashed (H) and random (R) values are not supported")
    try:
        croniter(" ".join(fields), _VALID_SINCE, ret_type=dt.datetime, second_at_beginning=True).get_next()
    except CroniterBadDateError:
        raise InvalidArgument("schedule", f"{quote(expression)} never fires: no date matches its fields") from None
    except (CroniterError, ValueError, TypeError) as exc:
        # croniter may put a whole traceback in the message; its last line says what is wrong.
        detail = bounded((str(exc).strip().splitlines() or ["rejected"])[-1], 200)
        raise InvalidArgument("schedule", f"{quote(expression)} is not a valid cron expression: {detail}") from None
    return fields


def _load_zone(name: str) -> zoneinfo.ZoneInfo:
    example = "an IANA zone name such as 'America/New_York' or 'UTC'"
    if not name:
        raise InvalidArgument("time_zone", f"is required: {example} (or a CRON_TZ= prefix on the schedule)")
    if name.startswith("/") or ".." in name:  # a path into the file system, not a zone key
        raise InvalidArgument("time_zone", f"{quote(name)} is not {example}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # not found, malformed key or file, a directory
        raise InvalidArgument("time_zone", f"unknown zone {quote(name)}; expected {example}") from None


_Choice = TypeVar("_Choice", bound=enum.StrEnum)


def _choice(field: str, value: object, kind: type[_Choice]) -> _Choice:
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    allowed = ", ".join(repr(member.value) for member in kind)
    raise InvalidArgument(field, f"{quote(value)} is not one of {allowed}")


_Piece = tuple[dt.datetime, dt.timedelta]


def _offset_pieces(zone: zoneinfo.ZoneInfo, after: dt.datetime, until: dt.datetime) -> list[_Piece]:
    """(start, offset) for each stretch of constant UTC offset over (after, until]: the first starts at
    `after`, each later one at a shift (the first instant of its offset)."""
    pieces = [(after, _offset(zone, after))]
    cursor, offset = pieces[0]
    while cursor < until:
        probe = min(cursor + _PROBE_STEP, until)
        if _offset(zone, probe) == offset:
            cursor = probe
            continue
        low, high = cursor, probe  # offset(low) == offset != offset(high): bisect to the microsecond
        while high - low > _TICK:
            middle = low + (high - low) / 2
            low, high = (middle, high) if _offset(zone, middle) == offset else (low, middle)
        cursor, offset = high, _offset(zone, high)
        pieces.append((cursor, offset))
    return pieces


def _walls(rule: CronRule, first: dt.datetime, last: dt.datetime) -> Iterator[dt.datetime]:
    """The rule's naive wall times from `first` to `last`, both inclusive, at the expression's own step."""
    # croniter returns times strictly after its start, whole seconds: start a second early.
    times = croniter(rule.expression, first - dt.timedelta(seconds=1), ret_type=dt.datetime, second_at_beginning=True)
    while True:
        try:
            wall = times.get_next()
        except CroniterBadDateError:  # nothing within croniter's horizon
            return
        if wall > last:
            return
        if wall >= first:
            yield wall


def _offset(zone: zoneinfo.ZoneInfo, instant: dt.datetime) -> dt.timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None  # a ZoneInfo always knows its offset
    return offset


def _first_span(rule: CronRule) -> dt.timedelta:
    """A first search window that holds few fires even for the most frequent rule of its kind."""
    return dt.timedelta(minutes=1) if len(rule.expression.split(" ")) == 6 else dt.timedelta(hours=1)


def _utc(instant: dt.datetime, name: str) -> dt.datetime:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {instant.isoformat()}")
    return instant.astimezone(dt.UTC)


def _naive(instant: dt.datetime) -> dt.datetime:
    return instant.replace(tzinfo=None)
