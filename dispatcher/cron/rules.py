"""A cron rule as the API accepts it, and the plan of which fires to materialize now.

Pure: no clock, no I/O. The store keeps rules (dispatcher/store/cron.py); the owner of a
rule's slot runs the plan (dispatcher/cron/materializer.py).

Exactly one task per fire time: a fire's task id is `cron-<rule uid>-<fire time, unix ms>`,
so however often a fire is materialized (a stale owner, a restart, a handoff, two nodes
racing) the store's task-id idempotency makes every materialization after the first a
no-op, and the owner's writes are fenced by the slot's epoch besides.

Fires are materialized ahead of time (`lead`), so a midnight fire of thousands of rules
is written as a trickle over the minute before, not as a spike at midnight. Rules whose
overlap policy looks at the previous fire ("skip", "queue_one") are materialized only when
due, since only then is it known whether the previous fire is still live.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import re

from dispatcher.base.errors import InvalidArgument, quote
from dispatcher.cron import schedule
from taskring.wire import pb

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
MAX_TEXT_CHARS = {"owner_team": 128, "description": 1024}


class Overlap(enum.StrEnum):
    """What a fire does while the rule's previous fire is still live (not terminal)."""

    ALLOW = "allow"            # it runs anyway, alongside
    SKIP = "skip"              # it is not materialized (counted as skipped)
    QUEUE_ONE = "queue_one"    # it waits for the previous to end; fires meanwhile fold into it


@dataclasses.dataclass(frozen=True)
class ValidRule:
    """A rule that passed validation; `message` is what is stored (the caller's fields)."""

    namespace: str
    name: str
    task_type: str
    payload_json: str
    schedule: schedule.CronRule
    overlap: Overlap
    message: pb.CronRule

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def validate_rule(rule: pb.CronRule, validate_payload, field_prefix: str = "rule") -> ValidRule:
    """Check every field; raise InvalidArgument naming the first bad one ("rule.schedule").
    `validate_payload(namespace, task_type, payload_json, field)` checks the fires' task as
    Submit would (its namespace, type and payload) and returns the canonical payload."""
    p = field_prefix
    namespace = _name(rule.namespace, f"{p}.namespace")
    name = _name(rule.name, f"{p}.name")
    if not rule.task_type:
        raise InvalidArgument(f"{p}.task_type", "is required")
    payload_json = validate_payload(namespace, rule.task_type, rule.payload_json, f"{p}.payload_json")
    try:
        parsed = schedule.parse_rule(rule.schedule, rule.time_zone, on_repeated_hour=rule.on_repeated_hour or None,
                                     on_skipped_hour=rule.on_skipped_hour or None, catch_up=rule.catch_up or "latest",
                                     catch_up_limit=rule.catch_up_limit or 100)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{p}.{exc.field}", exc.problem) from None
    try:
        overlap = Overlap(rule.overlap or "allow")
    except ValueError:
        raise InvalidArgument(f"{p}.overlap", f"must be allow, skip or queue_one, got {quote(rule.overlap)}") from None
    for field, limit in MAX_TEXT_CHARS.items():
        if len(getattr(rule, field)) > limit:
            raise InvalidArgument(f"{p}.{field}", f"is {len(getattr(rule, field))} characters, more than {limit}")
    message = pb.CronRule(namespace=namespace, name=name, task_type=rule.task_type, payload_json=payload_json,
                          schedule=parsed.expression, time_zone=parsed.time_zone,
                          on_repeated_hour=parsed.on_repeated_hour.value, on_skipped_hour=parsed.on_skipped_hour.value,
                          catch_up=parsed.catch_up.value, catch_up_limit=parsed.catch_up_limit, overlap=overlap.value,
                          owner_team=rule.owner_team, description=rule.description)
    if rule.HasField("timeout_ms"):
        message.timeout_ms = rule.timeout_ms
    if rule.HasField("max_retries"):
        message.max_retries = rule.max_retries
    return ValidRule(namespace, name, rule.task_type, payload_json, parsed, overlap, message)


def parsed_rule(message: pb.CronRule) -> ValidRule:
    """A stored rule (validated when it was written) read back."""
    parsed = schedule.parse_rule(message.schedule, message.time_zone, on_repeated_hour=message.on_repeated_hour,
                                 on_skipped_hour=message.on_skipped_hour, catch_up=message.catch_up,
                                 catch_up_limit=message.catch_up_limit)
    return ValidRule(message.namespace, message.name, message.task_type, message.payload_json, parsed,
                     Overlap(message.overlap), message)


def _name(value: str, field: str) -> str:
    if not value:
        raise InvalidArgument(field, "is required")
    if not NAME_RE.fullmatch(value):
        raise InvalidArgument(field, f"must match ^{NAME_RE.pattern}$, got {quote(value)}")
    return value


def fire_task_id(rule_uid: str, fire: dt.datetime) -> str:
    """The one task id of a fire time: fixed-width, so a rule's fires sort by time."""
    return f"cron-{rule_uid}-{int(fire.timestamp() * 1000):013d}"


# ---------------------------------------------------------------- the plan

@dataclasses.dataclass(frozen=True)
class Plan:
    fires: list[dt.datetime]
    """Fire times to materialize now, oldest first (aware UTC)."""
    planned_until: dt.datetime
    """Every fire time up to here is then materialized or decided against."""
    skipped: int = 0
    """Fire times decided against by the overlap policy."""


def plan(rule: ValidRule, planned_until: dt.datetime, previous_live: bool, now: dt.datetime, *,
         lead: dt.timedelta, missed_after: dt.timedelta) -> Plan | None:
    """Which fires to materialize at `now`; None when there is nothing to do yet.

    planned_until: where the last plan ended (a new rule's: its creation time).
    previous_live: whether the rule's latest fire task is still live (overlap policies).
    Fires more than `missed_after` in the past were missed (every owner was down, or
    the rule's owner was gone that long): the rule's catch-up policy chooses among them.
    """
    sched = rule.schedule
    if rule.overlap is Overlap.ALLOW:
        horizon = now + lead
        if planned_until >= now + lead / 2:  # plan in chunks of half the lead, not every tick
            return None
    else:
        horizon = now
        if rule.overlap is Overlap.QUEUE_ONE and previous_live:
            return None  # the due fires wait (and fold into one) until the previous one ends
    cutoff = now - missed_after
    missed: list[dt.datetime] = []
    skipped = 0
    start = planned_until
    if start < cutoff:
        # Bounded by the policy (catch_up_fires searches back from the cutoff), however long
        # the outage; the fires it drops are not counted (that would mean listing them all).
        missed = schedule.catch_up_fires(sched, start, cutoff)
        start = cutoff
    fires = missed + schedule.fires_between(sched, start, horizon)
    if rule.overlap is not Overlap.ALLOW and fires:
        if rule.overlap is Overlap.SKIP and previous_live:
            return Plan([], horizon, skipped + len(fires))
        # Due fires of one plan would overlap one another: the latest stands for them all.
        return Plan(fires[-1:], horizon, skipped + len(fires) - 1)
    return Plan(fires, horizon, skipped)
