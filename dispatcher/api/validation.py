"""Checking a submitted envelope, before anything is written.

`validate_task` turns a `pb.Task` from the wire into a `ValidTask`: every field
checked, defaults filled in, the payload canonicalised, the due time resolved
against an injected `now`. Any problem raises `InvalidArgument` naming the field by
its path in the request ("task.namespace", "tasks[3].payload_json") so a caller can
fix the request without reading our logs. `validate_batch` checks a whole batch
before returning, so a batch is accepted whole or not at all (DESIGN.md, "Bad input").

Pure: no I/O, no clock; the only randomness is the task id generator, which is
injectable. The payload's canonical form is payload_json.py's; a request's bytes are
parsed by request_decoding.py, in the same spirit (a bad one names the field).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import cast

from dispatcher.api.payload_json import canonical_payload, fast_canonical_payload, parse_canonical
from dispatcher.base.clock import rfc3339
from dispatcher.base.errors import InvalidArgument, quote
from dispatcher.base.ids import new_task_id, new_task_ids
from dispatcher.policy.key_template import render_key
from dispatcher.policy.retry import InvalidRetryPolicy, RetryPolicies, RetryPolicy
from taskring.wire import pb

NAMESPACE_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
TASK_TYPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
TASK_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")

_DAY_MS = 24 * 3600 * 1000
_PRIORITIES = frozenset(pb.Priority.values())
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_MS = dt.timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What the API accepts, and the defaults it fills in."""

    max_payload_bytes: int = 65_536
    """Size of payload_json as UTF-8, as sent and once canonicalised."""
    max_payload_depth: int = 32
    """Nesting of objects/arrays; the top-level object is depth 1."""
    max_delay_ms: int = 90 * _DAY_MS
    """Furthest a task may be scheduled ahead (delay_ms, schedule_time, retry backoffs)."""
    max_retries_limit: int = 50
    """max_retries must be in [0, this]."""
    default_max_retries: int = 3
    default_timeout_ms: int = 30_000
    max_timeout_ms: int = 3_600_000
    max_batch: int = 1000
    """Most tasks in one SubmitBatch."""
    max_key_chars: int = 128
    """Longest unique_key and trace_id, in characters."""
    retry_policies: RetryPolicies = dataclasses.field(default_factory=RetryPolicies)
    """Server default retry policy and per (namespace, task_type) defaults."""

    def __post_init__(self) -> None:
        for name in ("max_payload_bytes", "max_payload_depth", "max_delay_ms", "default_timeout_ms",
                     "max_timeout_ms", "max_batch", "max_key_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_payload_depth > 500:
            # Parsing and re-serialising recurse; stay far below Python's recursion limit.
            raise ValueError(f"Limits.max_payload_depth must be <= 500, got {self.max_payload_depth}")
        if self.max_retries_limit < 0:
            raise ValueError(f"Limits.max_retries_limit must be >= 0, got {self.max_retries_limit}")
        if not 0 <= self.default_max_retries <= self.max_retries_limit:
            raise ValueError(f"Limits.default_max_retries must be in [0, max_retries_limit], "
                             f"got {self.default_max_retries}")
        if self.default_timeout_ms > self.max_timeout_ms:
            raise ValueError(f"Limits.default_timeout_ms must be <= max_timeout_ms, got {self.default_timeout_ms}")

    @property
    def default_retry_policy(self) -> RetryPolicy:
        return self.retry_policies.server_default


@dataclasses.dataclass(slots=True)
class ValidTask:
    """A checked envelope with every default filled in. Times are UTC, millisecond precision."""

    task_id: str
    namespace: str
    task_type: str
    payload_json: str
    """Canonical JSON text of an object: compact, keys sorted, non-ASCII kept as UTF-8."""
    payload_version: int
    due_at: dt.datetime
    """schedule_time (never earlier than created_at), or created_at + delay_ms."""
    timeout_ms: int
    max_retries: int
    retry_policy: RetryPolicy
    """Resolved: the task's own fields over its type's policy over the server default."""
    priority: int
    """A pb.Priority value; UNSPECIFIED is normalised to NORMAL."""
    unique_key: str
    """The task's own, else its type's template rendered from the payload; "" when none."""
    unique_ttl_ms: int
    """0: the key is held while the task is live; else this long from acceptance."""
    trace_id: str
    created_at: dt.datetime

    @property
    def due_at_ms(self) -> int:
        return to_unix_ms(self.due_at)

    def to_pb(self) -> pb.Task:
        """The normalised envelope, as stored and delivered (schedule_time = due_at)."""
        return pb.Task(
            task_id=self.task_id,
            namespace=self.namespace,
            task_type=self.task_type,
            payload_json=self.payload_json,
            payload_version=self.payload_version,
            schedule_time=_rfc3339_cached(self.due_at),
            timeout_ms=self.timeout_ms,
            max_retries=self.max_retries,
            retry_policy=_policy_pb(self.retry_policy),
            priority=cast(pb.Priority, self.priority),  # an int at run time, as the stubs allow
            unique_key=self.unique_key,
            unique_ttl_ms=self.unique_ttl_ms or None,
            trace_id=self.trace_id,
            created_at=_rfc3339_cached(self.created_at),
        )


def validate_task(
    task: pb.Task,
    *,
    now: dt.datetime,
    limits: Limits,
    field_prefix: str = "task",
    new_id: Callable[[], str] = new_task_id,
) -> ValidTask:
    """Check one envelope; raise InvalidArgument naming the first bad field.

    `now` must be timezone-aware. Server-owned fields (retry_count, created_at) are
    ignored, not rejected.
    """
    now = _utc_ms(now)
    p = field_prefix

    task_id = task.task_id
    if task_id:
        if not TASK_ID_RE.fullmatch(task_id):
            raise InvalidArgument(f"{p}.task_id",
                                  f"must be 1 to 64 characters of [A-Za-z0-9._:-], got {_show(task_id)}")
    else:
        task_id = new_id()

    namespace = _named(task.namespace, NAMESPACE_RE, f"{p}.namespace")
    task_type = _named(task.task_type, TASK_TYPE_RE, f"{p}.task_type")
    payload_json = canonical_payload(task.payload_json, max_bytes=limits.max_payload_bytes,
                                     max_depth=limits.max_payload_depth, field=f"{p}.payload_json")
    due_at = _due_at(task, now, limits, p)

    priority = task.priority
    if priority not in _PRIORITIES:
        raise InvalidArgument(f"{p}.priority", f"unknown priority {priority}; use LOW (1), NORMAL (2) or HIGH (3)")
    if priority == pb.PRIORITY_UNSPECIFIED:
        priority = pb.PRIORITY_NORMAL

    max_retries = limits.default_max_retries
    if task.HasField("max_retries"):
        max_retries = task.max_retries
        if not 0 <= max_retries <= limits.max_retries_limit:
            raise InvalidArgument(f"{p}.max_retries", f"must be in [0, {limits.max_retries_limit}], got {max_retries}")

    timeout_ms = limits.default_timeout_ms
    if task.HasField("timeout_ms"):
        timeout_ms = task.timeout_ms
        if not 1 <= timeout_ms <= limits.max_timeout_ms:
            raise InvalidArgument(f"{p}.timeout_ms", f"must be in [1, {limits.max_timeout_ms}], got {timeout_ms}")

    retry_policy = _retry_policy(task, namespace, task_type, limits, p)

    unique_key, unique_ttl_ms = _unique_key(task, namespace, task_type, payload_json, limits, p)
    _check_limit_key(namespace, task_type, payload_json, limits, p)
    heartbeat_ms = limits.retry_policies.heartbeat_by_type.get((namespace, task_type))
    if heartbeat_ms is not None and timeout_ms < heartbeat_ms:
        raise InvalidArgument(f"{p}.timeout_ms", f"is {timeout_ms} ms, shorter than the heartbeat timeout of"
                                                 f" {namespace}/{task_type} ({heartbeat_ms} ms)")
    for name, value in (("unique_key", unique_key), ("trace_id", task.trace_id)):
        if len(value) > limits.max_key_chars:
            raise InvalidArgument(f"{p}.{name}",
                                  f"is {len(value)} characters, more than the maximum {limits.max_key_chars}")

    return ValidTask(
        task_id=task_id,
        namespace=namespace,
        task_type=task_type,
        payload_json=payload_json,
        payload_version=task.payload_version,
        due_at=due_at,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
        retry_policy=retry_policy,
        priority=priority,
        unique_key=unique_key,
        unique_ttl_ms=unique_ttl_ms,
        trace_id=task.trace_id,
        created_at=now,
    )


def validate_batch(
    tasks: Sequence[pb.Task],
    *,
    now: dt.datetime,
    limits: Limits,
    new_id: Callable[[], str] = new_task_id,
) -> list[ValidTask]:
    """Check a whole batch (items as "tasks[i]"); the first problem found is raised.

    Two items with the same task_id are rejected: within one batch the outcome of
    the second would otherwise depend on write order.
    """
    if not tasks:
        raise InvalidArgument("tasks", "must contain at least one task")
    if len(tasks) > limits.max_batch:
        raise InvalidArgument("tasks", f"has {len(tasks)} tasks, more than the maximum {limits.max_batch}")
    now = _utc_ms(now)   # what validate_task does first, once for the batch (a naive `now` raises here)
    if new_id is new_task_id:
        # A task takes one id at most: the batch's are drawn in one go, at a fraction of the
        # cost of a call each, all of them from the batch's millisecond. Those a task with
        # its own id leaves unused are just not handed out (ids need to be unique and to
        # increase, not to be contiguous).
        new_id = iter(new_task_ids(len(tasks))).__next__
    typical = _TypicalTasks(now, limits).check
    valid: list[ValidTask] = []
    seen: dict[str, int] = {}
    first_seen = seen.setdefault   # bound once: the loop runs per task
    for i, task in enumerate(tasks):
        v = typical(task, new_id)
        if v is None:
            v = validate_task(task, now=now, limits=limits, field_prefix=f"tasks[{i}]", new_id=new_id)
        first = first_seen(v.task_id, i)
        if first != i:
            raise InvalidArgument(f"tasks[{i}].task_id", f"{_show(v.task_id)} is also the task_id of tasks[{first}]")
        valid.append(v)
    return valid


def task_validator(now: dt.datetime, limits: Limits) -> Callable[[pb.Task, str], ValidTask]:
    """Check tasks one after another as validate_batch does (the typical task quickly, any
    other by validate_task), naming a bad field under the prefix given for each task: for
    the tasks of a graph, whose fields are `tasks[i].task.<field>`."""
    now = _utc_ms(now)
    typical = _TypicalTasks(now, limits).check

    def check(task: pb.Task, field_prefix: str) -> ValidTask:
        valid = typical(task, new_task_id)
        return valid if valid is not None else validate_task(task, now=now, limits=limits,
                                                             field_prefix=field_prefix)
    return check


# ---- The typical task, quickly ----
#
# Most tasks of a batch are alike: a few (namespace, task_type) pairs, no time but maybe
# a short delay, defaults for everything else, a small payload already in canonical
# form. validate_task checks each of them from scratch, which costs more than the rest
# of a submit. _TypicalTasks checks what such a task has (every check validate_task
# would make), builds only what differs per task, and declines anything else: a
# declined task goes through validate_task, which then says what is wrong with it or
# validates it in full. So every error is validate_task's own, by construction, and
# the shortcut only has to agree with it on the tasks it accepts (pinned by
# tests/unit/test_validation_fast_path.py).

_PRIORITY_OF: dict[int, int] = {**{p: p for p in _PRIORITIES}, pb.PRIORITY_UNSPECIFIED: pb.PRIORITY_NORMAL}
"""A task's priority as validated, by its value on the wire; missing: an unknown priority."""
_has_field = pb.Task.HasField   # unbound: skips the message's attribute lookup, once per field per task

_TypeFacts = tuple[RetryPolicy, int]
"""A type's retry policy, and the bytes its namespace and task_type take on the wire."""
_DueFacts = tuple[dt.datetime, int]
"""A delay's due_at, and the bytes delay_ms takes on the wire."""
_DECLINED_TYPE: _TypeFacts = (RetryPolicy(), -1)   # size -1: a type validate_task must check
_DECLINED_DELAY: _DueFacts = (_EPOCH, -1)          # size -1: beyond the maximum delay


class _TypicalTasks:
    """validate_task for the typical tasks of one batch, and None for any other task.

    Declined (None): a schedule_time, max_retries, timeout_ms, a retry_policy or
    unique_ttl_ms given, a type with a unique-key rule, anything validate_task would
    refuse, and a payload that fast_canonical_payload leaves to the full path. A task
    id is drawn from `new_id` only once the task is accepted, so the ids drawn are those
    validate_task would draw, in the same order.

    Each field read from a message costs, so the most typical task of all (namespace,
    task_type, an ASCII payload, perhaps delay_ms and priority, and nothing else) is
    recognised by its size: when the message's serialised size is what those fields
    take, no other field is on the wire (each would take a byte or more, an optional one
    set to 0 included, and so would an unknown field), so the others have their
    defaults and need not be read. Any other task has its fields read one by one.
    """

    def __init__(self, now: dt.datetime, limits: Limits) -> None:
        self._now = now
        self._limits = limits
        self._max_bytes = limits.max_payload_bytes
        self._max_depth = limits.max_payload_depth
        self._max_key_chars = limits.max_key_chars
        self._timeout_ms = limits.default_timeout_ms
        self._max_retries = limits.default_max_retries
        # Per batch, not per process: a Limits may change between batches (a reload).
        self._types: dict[tuple[str, str], _TypeFacts] = {}
        self._keyed: dict[tuple[str, str], str] = {}   # types with a per-key limit: the key's template
        self._due: dict[int, _DueFacts] = {0: (now, 0)}   # a batch has a few delays; a datetime sum costs

    def check(self, task: pb.Task, new_id: Callable[[], str]) -> ValidTask | None:
        namespace = task.namespace
        task_type = task.task_type
        payload = task.payload_json
        delay_ms = task.delay_ms
        policy, names_size = self._types.get((namespace, task_type)) or self._type_facts(namespace, task_type)
        due_at, delay_size = self._due.get(delay_ms) or self._due_facts(delay_ms)
        if names_size < 0 or delay_size < 0:
            return None
        # The bytes beyond those fields, the payload counted as if ASCII (a byte a character):
        # what a character beyond ASCII takes more, plus the priority's (2 bytes when it is
        # a known one), plus every other field's. None of them: 0; the priority alone: 2.
        n = len(payload)
        beyond = task.ByteSize() - names_size - delay_size - (n + 2 if 0 < n < 128 else _string_size(n))
        priority: int = pb.PRIORITY_NORMAL   # none on the wire: UNSPECIFIED
        if beyond:
            wire_priority = task.priority
            known = _PRIORITY_OF.get(wire_priority)
            if known is None:
                return None
            priority = known
            if not (beyond == 2 and wire_priority):
                return self._with_other_fields(task, new_id, namespace, task_type, payload, policy, due_at,
                                               priority)
        canonical = fast_canonical_payload(payload, self._max_bytes, self._max_depth) if payload else "{}"
        if canonical is None or (self._keyed and not self._has_limit_key(namespace, task_type, canonical)):
            return None
        return ValidTask(new_id(), namespace, task_type, canonical, 0, due_at, self._timeout_ms,
                         self._max_retries, policy, priority, "", 0, "", self._now)

    def _with_other_fields(self, task: pb.Task, new_id: Callable[[], str], namespace: str, task_type: str,
                           payload: str, policy: RetryPolicy, due_at: dt.datetime, priority: int) -> ValidTask | None:
        """check() for a task with more on the wire: the other fields read, and checked, one by one."""
        if (task.schedule_time or _has_field(task, "max_retries") or _has_field(task, "timeout_ms")
                or _has_field(task, "retry_policy") or _has_field(task, "unique_ttl_ms")):
            return None
        task_id = task.task_id
        if task_id and TASK_ID_RE.fullmatch(task_id) is None:
            return None
        unique_key = task.unique_key
        trace_id = task.trace_id
        if len(unique_key) > self._max_key_chars or len(trace_id) > self._max_key_chars:
            return None
        canonical = fast_canonical_payload(payload, self._max_bytes, self._max_depth) if payload else "{}"
        if canonical is None or (self._keyed and not self._has_limit_key(namespace, task_type, canonical)):
            return None
        return ValidTask(task_id or new_id(), namespace, task_type, canonical, task.payload_version, due_at,
                         self._timeout_ms, self._max_retries, policy, priority, unique_key, 0, trace_id, self._now)

    def _has_limit_key(self, namespace: str, task_type: str, canonical: str) -> bool:
        """Whether a task of a type with a per-key limit has its key's fields (else the full
        path refuses it, naming the field); True for a type without one."""
        template = self._keyed.get((namespace, task_type))
        if template is None:
            return True
        try:
            render_key(template, json.loads(canonical), "payload_json", "limit key")
        except InvalidArgument:
            return False
        return True

    def _type_facts(self, namespace: str, task_type: str) -> _TypeFacts:
        """Of a type with valid names (ASCII, then), no unique-key rule and no heartbeat (its tasks'
        timeouts are checked against it); else _DECLINED_TYPE.
        A type with a per-key limit is noted in `_keyed`: its payloads must have the key's fields."""
        facts = _DECLINED_TYPE
        registry = self._limits.retry_policies
        type_limits = registry.limits_by_type.get((namespace, task_type))
        if type_limits is not None and type_limits.key is not None:
            self._keyed[(namespace, task_type)] = type_limits.key
        if (NAMESPACE_RE.fullmatch(namespace) is not None and TASK_TYPE_RE.fullmatch(task_type) is not None
                and (namespace, task_type) not in registry.unique_by_type
                and (namespace, task_type) not in registry.heartbeat_by_type):
            facts = (registry.resolve(None, namespace, task_type), _string_size(len(namespace)) +
                     _string_size(len(task_type)))
        self._types[(namespace, task_type)] = facts
        return facts

    def _due_facts(self, delay_ms: int) -> _DueFacts:
        """Of a delay within the maximum; else _DECLINED_DELAY."""
        facts = _DECLINED_DELAY
        if delay_ms <= self._limits.max_delay_ms:
            facts = (self._now + dt.timedelta(milliseconds=delay_ms), 1 + len(_length(delay_ms)))
        self._due[delay_ms] = facts
        return facts


_LENGTH_1 = [bytes((n,)) for n in range(128)]
"""The varint of a length under 128 (the usual name and delay): one byte."""


def _length(n: int) -> bytes:
    """A length as protobuf writes it (a varint)."""
    if n < 128:
        return _LENGTH_1[n]
    out = bytearray()
    while n >= 128:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string_size(n: int) -> int:
    """Bytes a string field (number 1-15) of `n` UTF-8 bytes takes on the wire; 0 when empty (proto3)."""
    return 1 + len(_length(n)) + n if n else 0


def _unique_key(task: pb.Task, namespace: str, task_type: str, payload_json: str, limits: Limits,
                p: str) -> tuple[str, int]:
    """(unique_key, unique_ttl_ms) of a task: its own, else its type's rule (dispatcher/policy/unique.py)."""
    rule = limits.retry_policies.unique_by_type.get((namespace, task_type))
    key = task.unique_key
    ttl_ms = rule.ttl_ms if rule is not None else 0
    if not key and rule is not None:
        # The canonical text parses back to the same object; only typed rules pay this.
        key = rule.render(parse_canonical(payload_json), f"{p}.payload_json")
    if task.HasField("unique_ttl_ms"):
        ttl_ms = task.unique_ttl_ms
        if not key:
            raise InvalidArgument(f"{p}.unique_ttl_ms", "needs unique_key (the key it holds)")
        if not 1 <= ttl_ms <= limits.max_delay_ms:
            raise InvalidArgument(f"{p}.unique_ttl_ms", f"must be in [1, {limits.max_delay_ms}], got {ttl_ms}")
    return key, ttl_ms


def _check_limit_key(namespace: str, task_type: str, payload_json: str, limits: Limits, p: str) -> None:
    """A type with a per-key limit builds each task's key from its payload at dispatch: a
    payload without the template's fields is refused now, naming the field."""
    type_limits = limits.retry_policies.limits_by_type.get((namespace, task_type))
    if type_limits is not None and type_limits.key is not None:
        render_key(type_limits.key, parse_canonical(payload_json), f"{p}.payload_json", "limit key")


# ---- Times ----

_RFC3339_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?"
)


def parse_rfc3339(text: str) -> dt.datetime:
    """An RFC 3339 timestamp with an explicit offset ('Z' or ±hh:mm), as an aware UTC datetime.

    Sub-microsecond digits are dropped. Raises ValueError with a message fit for a caller.
    """
    m = _RFC3339_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"is not an RFC 3339 timestamp (like 2030-01-02T03:04:05.678Z), got {_show(text)}")
    year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = m.groups()
    if not zulu and not sign:
        raise ValueError(f"has no UTC offset; RFC 3339 requires 'Z' or ±hh:mm, got {_show(text)}")
    offset = dt.timedelta(0)
    if sign:
        if int(off_h) > 23 or int(off_m) > 59:
            raise ValueError(f"has an invalid UTC offset, got {_show(text)}")
        offset = dt.timedelta(hours=int(off_h), minutes=int(off_m))
        if sign == "-":
            offset = -offset
    micros = int((frac or "0").ljust(6, "0")[:6])
    try:
        local = dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micros,
                            tzinfo=dt.timezone(offset))
        return local.astimezone(dt.UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"is not a valid date and time, got {_show(text)}") from None


# A batch's tasks share a few instants (its arrival, their due times) and a few
# policies: format and build each once. The pb.RetryPolicy is copied into each
# pb.Task that is given it, so sharing one is safe.
_rfc3339_cached = functools.lru_cache(maxsize=4096)(rfc3339)


@functools.lru_cache(maxsize=1024)
def _policy_pb(policy: RetryPolicy) -> pb.RetryPolicy:
    return policy.to_pb()


def to_unix_ms(t: dt.datetime) -> int:
    return (t - _EPOCH) // _ONE_MS


def _utc_ms(t: dt.datetime) -> dt.datetime:
    if t.tzinfo is dt.UTC and t.microsecond % 1000 == 0:
        return t   # already UTC at millisecond precision (a batch's `now`, once per task)
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError("a naive datetime was passed where a timezone-aware one is required")
    t = t.astimezone(dt.UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _due_at(task: pb.Task, now: dt.datetime, limits: Limits, p: str) -> dt.datetime:
    if task.schedule_time and task.delay_ms:
        raise InvalidArgument(f"{p}.delay_ms", "cannot be combined with schedule_time; give one or the other")
    if task.delay_ms:
        if task.delay_ms > limits.max_delay_ms:
            raise InvalidArgument(f"{p}.delay_ms",
                                  f"{task.delay_ms} is beyond the maximum delay of {limits.max_delay_ms} ms")
        return now + dt.timedelta(milliseconds=task.delay_ms)
    if task.schedule_time:
        try:
            at = _utc_ms(parse_rfc3339(task.schedule_time))
        except ValueError as e:
            raise InvalidArgument(f"{p}.schedule_time", str(e)) from None
        latest = now + dt.timedelta(milliseconds=limits.max_delay_ms)
        if at > latest:
            raise InvalidArgument(f"{p}.schedule_time", f"{task.schedule_time} is beyond the maximum delay of "
                                  f"{limits.max_delay_ms} ms (latest {rfc3339(latest)})")
        # In the past: due now. Clamping keeps an old timestamp from jumping the
        # queue and keeps year-0001 values out of DATETIME columns.
        return max(at, now)
    return now


# ---- Names ----

def _named(value: str, pattern: re.Pattern[str], field: str) -> str:
    if not value:
        raise InvalidArgument(field, "is required")
    if not pattern.fullmatch(value):
        raise InvalidArgument(field, f"must match ^{pattern.pattern}$, got {_show(value)}")
    return value


# Every value of the caller's that a message repeats is cut short (errors.quote): a huge
# bad value must not flood a log line nor push the gRPC trailer past its size limit.
_show = quote


# ---- Retry policy ----

def _retry_policy(task: pb.Task, namespace: str, task_type: str, limits: Limits, p: str) -> RetryPolicy:
    registry = limits.retry_policies
    own: RetryPolicy | None = None
    if task.HasField("retry_policy"):
        try:
            own = RetryPolicy.from_pb(task.retry_policy, registry.for_type(namespace, task_type))
        except InvalidRetryPolicy as e:
            raise InvalidArgument(f"{p}.retry_policy.{e.field}", e.problem) from None
        if own.max_backoff_ms > limits.max_delay_ms:
            raise InvalidArgument(f"{p}.retry_policy.max_backoff_ms",
                                  f"{own.max_backoff_ms} is beyond the maximum delay of {limits.max_delay_ms} ms")
        for i, wait in enumerate(own.schedule_ms):
            if wait > limits.max_delay_ms:
                raise InvalidArgument(f"{p}.retry_policy.schedule_ms[{i}]",
                                      f"{wait} is beyond the maximum delay of {limits.max_delay_ms} ms")
    return registry.resolve(own, namespace, task_type)


# ---- Wire ----
#
# grpc's generated servicer parses a request before any of our code runs, and a
# parse failure (bytes that are no protobuf, a string field that is not UTF-8, as
# proto3 requires) reaches the caller as UNKNOWN "Unexpected DecodeError". The API
# takes the raw bytes instead (api.serve_api) and parses them here, so that a bad
# request is an InvalidArgument naming the field, like any other bad input.
# protobuf's own error names no field ("String field had bad UTF-8"), so on failure
# the bytes are walked once more, by hand, to find the first field at fault.
