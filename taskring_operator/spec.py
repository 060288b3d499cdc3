"""The AsyncJobConfig spec, parsed from the resource into typed dataclasses and checked.

The CRD's OpenAPI schema (deploy/operator/crd.yaml) refuses most bad specs at admission; this
module checks the same rules again, plus those a schema cannot express (one field against
another), because the operator must never act on a spec it has not checked itself: a resource
written before the schema was tightened, or on a server that prunes instead of refusing,
reaches the handlers all the same. Every refusal names the field as it is spelled in the
resource (`spec.executor.timeoutMs`), so `kubectl describe` tells the author what to fix.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")      # as the task envelope's namespace
TASK_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # as the task envelope's task_type
CRON_NAME_RE = NAMESPACE_RE                                       # a cron rule's name
TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")                 # Kafka's own rule for topic names

PRIORITIES = ("high", "normal", "low")
DELETE_POLICIES = ("Keep", "Drain")
OVERLAPS = ("allow", "skip", "queue_one")
CATCH_UPS = ("skip", "latest", "all")

MAX_TIMEOUT_MS = 86_400_000        # a day: the longest attempt the API accepts
MAX_HEARTBEAT_MS = 3_600_000       # docs/limits.md: heartbeat_timeout_ms in [1, 3,600,000]
MAX_PARTITIONS = 10_000
MAX_SCHEDULE_ENTRIES = 100         # dispatcher/policy/retry.py
MAX_RETRIES = 1_000
MAX_CRON_RULES = 50


class SpecError(ValueError):
    """A spec the operator refuses; `field` is the path in the resource, e.g. ``spec.topic.partitions``."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True, slots=True)
class Executor:
    service: str
    """The executor service that runs the type (as its executors register it)."""
    timeout_ms: int
    """Each attempt's timeout."""


@dataclass(frozen=True, slots=True)
class Retry:
    initial_backoff_ms: int | None = None
    max_backoff_ms: int | None = None
    multiplier: float | None = None
    schedule_ms: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Rate:
    starts: int
    period_ms: int
    burst: int | None = None


@dataclass(frozen=True, slots=True)
class Limits:
    concurrency_per_type: int | None = None
    concurrency_per_key: int | None = None
    concurrency_key: str | None = None
    retry_cap: int | None = None
    rate_per_type: Rate | None = None
    rate_per_key: Rate | None = None
    rate_key: str | None = None
    heartbeat_timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    after_retries: int | None = None
    """Retries after the first attempt before a task is dead-lettered (None: the server's default)."""


@dataclass(frozen=True, slots=True)
class CronRule:
    name: str
    schedule: str
    time_zone: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
    overlap: str = ""
    catch_up: str = ""


@dataclass(frozen=True, slots=True)
class Topic:
    partitions: int
    name: str | None = None
    """None: the topic of the type's priority class, `<topic prefix>.<priority>`."""


@dataclass(frozen=True, slots=True)
class AsyncJobConfigSpec:
    namespace: str
    task_type: str
    executor: Executor
    topic: Topic
    priority: str = "normal"
    retry: Retry = Retry()
    limits: Limits = Limits()
    dead_letter: DeadLetter = DeadLetter()
    cron: tuple[CronRule, ...] = ()
    delete_policy: str = "Keep"

    def topic_name(self, prefix: str) -> str:
        return self.topic.name or f"{prefix}.{self.priority}"


# ---------------------------------------------------------------- readers, each naming its path

def _object(value: object, path: str, allowed: Collection[str], required: Collection[str] = ()) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(path, f"must be an object, got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise SpecError(f"{path}.{unknown[0]}", "is not a field of AsyncJobConfig")
    for name in sorted(required):
        if name not in value:
            raise SpecError(f"{path}.{name}", "is required")
    return value


def _int(value: object, path: str, low: int, high: int) -> int:
    # bool is an int in Python, never in the resource's JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise SpecError(path, f"must be between {low} and {high}, got {value}")
    return value


def _opt_int(m: Mapping[str, Any], key: str, path: str, low: int, high: int) -> int | None:
    return None if m.get(key) is None else _int(m[key], f"{path}.{key}", low, high)


def _str(value: object, path: str, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(path, f"must be a non-empty string, got {value!r}")
    if pattern is not None and not pattern.match(value):
        raise SpecError(path, f"must be {what} (pattern {pattern.pattern}), got {value!r}")
    return value


def _enum(value: object, path: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise SpecError(path, f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _rate(value: object, path: str) -> Rate:
    m = _object(value, path, {"starts", "periodMs", "burst"}, {"starts", "periodMs"})
    return Rate(starts=_int(m["starts"], f"{path}.starts", 1, 1_000_000_000),
                period_ms=_int(m["periodMs"], f"{path}.periodMs", 1, MAX_TIMEOUT_MS),
                burst=_opt_int(m, "burst", path, 1, 1_000_000_000))


def _retry(value: object, path: str) -> Retry:
    m = _object(value, path, {"initialBackoffMs", "maxBackoffMs", "multiplier", "scheduleMs"})
    multiplier = m.get("multiplier")
    if multiplier is not None and (isinstance(multiplier, bool) or not isinstance(multiplier, int | float)
                                   or not 1 <= multiplier <= 100):
        raise SpecError(f"{path}.multiplier", f"must be a number between 1 and 100, got {multiplier!r}")
    schedule = m.get("scheduleMs") or []
    if not isinstance(schedule, list) or len(schedule) > MAX_SCHEDULE_ENTRIES:
        raise SpecError(f"{path}.scheduleMs", f"must be a list of at most {MAX_SCHEDULE_ENTRIES} waits")
    retry = Retry(initial_backoff_ms=_opt_int(m, "initialBackoffMs", path, 1, MAX_TIMEOUT_MS),
                  max_backoff_ms=_opt_int(m, "maxBackoffMs", path, 1, MAX_TIMEOUT_MS),
                  multiplier=None if multiplier is None else float(multiplier),
                  schedule_ms=tuple(_int(w, f"{path}.scheduleMs[{i}]", 1, MAX_TIMEOUT_MS)
                                    for i, w in enumerate(schedule)))
    if (retry.initial_backoff_ms is not None and retry.max_backoff_ms is not None
            and retry.max_backoff_ms < retry.initial_backoff_ms):
        raise SpecError(f"{path}.maxBackoffMs", f"must be at least initialBackoffMs ({retry.initial_backoff_ms}),"
                                                f" got {retry.max_backoff_ms}")
    return retry


def _limits(value: object, path: str) -> Limits:
    m = _object(value, path, {"concurrency", "retryCap", "rate", "heartbeatTimeoutMs"})
    c = _object(m.get("concurrency") or {}, f"{path}.concurrency", {"perType", "perKey", "key"})
    r = _object(m.get("rate") or {}, f"{path}.rate", {"perType", "perKey", "key"})
    limits = Limits(
        concurrency_per_type=_opt_int(c, "perType", f"{path}.concurrency", 1, 1_000_000),
        concurrency_per_key=_opt_int(c, "perKey", f"{path}.concurrency", 1, 1_000_000),
        concurrency_key=None if c.get("key") is None else _str(c["key"], f"{path}.concurrency.key"),
        retry_cap=_opt_int(m, "retryCap", path, 1, 1_000_000),
        rate_per_type=None if r.get("perType") is None else _rate(r["perType"], f"{path}.rate.perType"),
        rate_per_key=None if r.get("perKey") is None else _rate(r["perKey"], f"{path}.rate.perKey"),
        rate_key=None if r.get("key") is None else _str(r["key"], f"{path}.rate.key"),
        heartbeat_timeout_ms=_opt_int(m, "heartbeatTimeoutMs", path, 1, MAX_HEARTBEAT_MS))
    # A per-key limit is counted by a key built from each task's payload: it needs the template.
    if limits.concurrency_per_key is not None and limits.concurrency_key is None:
        raise SpecError(f"{path}.concurrency.key", "is required with perKey")
    if limits.rate_per_key is not None and limits.rate_key is None:
        raise SpecError(f"{path}.rate.key", "is required with perKey")
    # docs/limits.md: a type has one limit key.
    if limits.concurrency_key and limits.rate_key and limits.concurrency_key != limits.rate_key:
        raise SpecError(f"{path}.rate.key", f"must equal concurrency.key ({limits.concurrency_key!r}):"
                                            " a task type has one limit key")
    return limits


def _cron(value: object, path: str) -> tuple[CronRule, ...]:
    if not isinstance(value, list) or len(value) > MAX_CRON_RULES:
        raise SpecError(path, f"must be a list of at most {MAX_CRON_RULES} rules")
    rules: list[CronRule] = []
    for i, item in enumerate(value):
        p = f"{path}[{i}]"
        m = _object(item, p, {"name", "schedule", "timeZone", "payload", "overlap", "catchUp"}, {"name", "schedule"})
        payload = m.get("payload") or {}
        if not isinstance(payload, Mapping):
            raise SpecError(f"{p}.payload", "must be an object")
        rule = CronRule(name=_str(m["name"], f"{p}.name", CRON_NAME_RE, "a cron rule name"),
                        schedule=_str(m["schedule"], f"{p}.schedule"),
                        time_zone="" if m.get("timeZone") is None else _str(m["timeZone"], f"{p}.timeZone"),
                        payload=dict(payload),
                        overlap="" if m.get("overlap") is None else _enum(m["overlap"], f"{p}.overlap", OVERLAPS),
                        catch_up="" if m.get("catchUp") is None else _enum(m["catchUp"], f"{p}.catchUp", CATCH_UPS))
        if any(r.name == rule.name for r in rules):
            raise SpecError(f"{p}.name", f"{rule.name!r} is given twice")
        rules.append(rule)
    return tuple(rules)


SPEC_FIELDS = {"namespace", "taskType", "executor", "priority", "retry", "limits", "deadLetter", "cron", "topic",
               "deletePolicy"}


def parse_spec(raw: object) -> AsyncJobConfigSpec:
    """The resource's `spec`, checked; raises SpecError naming the first field that is wrong."""
    m = _object(raw, "spec", SPEC_FIELDS, {"namespace", "taskType", "executor", "topic"})
    e = _object(m["executor"], "spec.executor", {"service", "timeoutMs"}, {"service", "timeoutMs"})
    executor = Executor(service=_str(e["service"], "spec.executor.service"),
                        timeout_ms=_int(e["timeoutMs"], "spec.executor.timeoutMs", 1, MAX_TIMEOUT_MS))
    t = _object(m["topic"], "spec.topic", {"name", "partitions"}, {"partitions"})
    topic = Topic(partitions=_int(t["partitions"], "spec.topic.partitions", 1, MAX_PARTITIONS),
                  name=None if t.get("name") is None else _str(t["name"], "spec.topic.name", TOPIC_RE,
                                                               "a Kafka topic name"))
    d = _object(m.get("deadLetter") or {}, "spec.deadLetter", {"afterRetries"})
    spec = AsyncJobConfigSpec(
        namespace=_str(m["namespace"], "spec.namespace", NAMESPACE_RE, "a taskring namespace"),
        task_type=_str(m["taskType"], "spec.taskType", TASK_TYPE_RE, "a task type"),
        executor=executor, topic=topic,
        priority=_enum(m.get("priority", "normal"), "spec.priority", PRIORITIES),
        retry=_retry(m.get("retry") or {}, "spec.retry"),
        limits=_limits(m.get("limits") or {}, "spec.limits"),
        dead_letter=DeadLetter(after_retries=_opt_int(d, "afterRetries", "spec.deadLetter", 0, MAX_RETRIES)),
        cron=_cron(m.get("cron") or [], "spec.cron"),
        delete_policy=_enum(m.get("deletePolicy", "Keep"), "spec.deletePolicy", DELETE_POLICIES))
    # The server refuses a task of a heartbeating type whose timeout is shorter than the heartbeat
    # timeout (docs/limits.md): refuse the spec that would make every such submit fail.
    hb = spec.limits.heartbeat_timeout_ms
    if hb is not None and executor.timeout_ms < hb:
        raise SpecError("spec.executor.timeoutMs", f"must be at least limits.heartbeatTimeoutMs ({hb}),"
                                                   f" got {executor.timeout_ms}")
    return spec
