"""Checking a submitted envelope, before anything is written.

`validate_task` turns a `pb.Task` from the wire into a `ValidTask`: every field
checked, defaults filled in, the payload canonicalised, the due time resolved
against an injected `now`. Any problem raises `InvalidArgument` naming the field by
its path in the request ("task.namespace", "tasks[3].payload_json") so a caller can
fix the request without reading our logs. `validate_batch` checks a whole batch
before returning, so a batch is accepted whole or not at all (DESIGN.md, "Bad input").

Pure: no I/O, no clock; the only randomness is the task id generator, which is
injectable. `decode_request` parses a request's bytes the same way: a bad one is an
InvalidArgument naming the field (not valid UTF-8) or the message (not protobuf).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from dispatcher.clock import rfc3339
from dispatcher.errors import InvalidArgument, quote
from dispatcher.ids import new_task_id
from dispatcher.retry import InvalidRetryPolicy, RetryPolicies, RetryPolicy
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
    payload_json = _canonical_payload(task.payload_json, limits, f"{p}.payload_json")
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
    valid: list[ValidTask] = []
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        v = validate_task(task, now=now, limits=limits, field_prefix=f"tasks[{i}]", new_id=new_id)
        first = seen.setdefault(v.task_id, i)
        if first != i:
            raise InvalidArgument(f"tasks[{i}].task_id", f"{_show(v.task_id)} is also the task_id of tasks[{first}]")
        valid.append(v)
    return valid


def _unique_key(task: pb.Task, namespace: str, task_type: str, payload_json: str, limits: Limits,
                p: str) -> tuple[str, int]:
    """(unique_key, unique_ttl_ms) of a task: its own, else its type's rule (dispatcher/unique.py)."""
    rule = limits.retry_policies.unique_by_type.get((namespace, task_type))
    key = task.unique_key
    ttl_ms = rule.ttl_ms if rule is not None else 0
    if not key and rule is not None:
        # The canonical text parses back to the same object; only typed rules pay this.
        key = rule.render(_PAYLOAD_DECODER.decode(payload_json), f"{p}.payload_json")
    if task.HasField("unique_ttl_ms"):
        ttl_ms = task.unique_ttl_ms
        if not key:
            raise InvalidArgument(f"{p}.unique_ttl_ms", "needs unique_key (the key it holds)")
        if not 1 <= ttl_ms <= limits.max_delay_ms:
            raise InvalidArgument(f"{p}.unique_ttl_ms", f"must be in [1, {limits.max_delay_ms}], got {ttl_ms}")
    return key, ttl_ms


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


# ---- Payload ----

class _BadPayload(Exception):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadPayload(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadPayload(f"number {text[:40]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _BadPayload(f"duplicate key {_show(key, 40)}")
            seen.add(key)
    return obj


# Built once: json.loads and json.dumps with options build a decoder and an encoder
# on every call, which cost more than the parse of a small payload.
_PAYLOAD_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_reject_constant,
                                    parse_float=_finite_float)
_PAYLOAD_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)


def _canonical_payload(text: str, limits: Limits, field: str) -> str:
    if not text:
        return "{}"
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(field, "is not valid UTF-8") from None
    if size > limits.max_payload_bytes:
        raise InvalidArgument(field, f"is {size} bytes, more than the maximum {limits.max_payload_bytes}")
    try:
        obj = _PAYLOAD_DECODER.decode(text)
    except RecursionError:
        # The C decoder recurses per level; thousands of levels end here.
        raise InvalidArgument(field, f"is nested too deep (more than {limits.max_payload_depth} levels)") from None
    except _BadPayload as e:
        raise InvalidArgument(field, f"is not valid JSON: {e}") from None
    except ValueError as e:  # JSONDecodeError, and over-long integers
        raise InvalidArgument(field, f"is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise InvalidArgument(field, f"must be a JSON object, got a JSON {_json_kind(obj)}")
    # Every level opens with '{' or '['; when there are not enough of them in the
    # whole text, no walk is needed (the common case on the hot path).
    if text.count("{") + text.count("[") > limits.max_payload_depth and _too_deep(obj, limits.max_payload_depth):
        raise InvalidArgument(field, f"is nested too deep (more than {limits.max_payload_depth} levels)")
    canonical = _PAYLOAD_ENCODER.encode(obj)
    try:
        size = len(canonical.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(field, "contains a string with an unpaired surrogate (\\ud800-\\udfff)") from None
    if size > limits.max_payload_bytes:
        raise InvalidArgument(field,
                              f"is {size} bytes once canonicalised, more than the maximum {limits.max_payload_bytes}")
    return canonical


def _too_deep(obj: Any, limit: int) -> bool:
    """True when containers nest more than `limit` levels; iterative, stops early."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _json_kind(obj: Any) -> str:
    if isinstance(obj, list):
        return "array"
    if isinstance(obj, str):
        return "string"
    if isinstance(obj, bool):
        return "boolean"
    if obj is None:
        return "null"
    return "number"


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

_T = TypeVar("_T", bound=Message)


def decode_request(message_type: type[_T], data: bytes) -> _T:
    """Parse `data` as `message_type`; raise InvalidArgument naming the first bad field."""
    try:
        return message_type.FromString(data)
    except DecodeError:
        field, problem = _wire_problem(message_type.DESCRIPTOR, data, "") or (
            "request", f"is not a valid {message_type.DESCRIPTOR.full_name} message")
        raise InvalidArgument(field, problem) from None


class _Corrupt(Exception):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(pos, min(pos + 10, len(data))):  # a varint has at most 10 bytes
        value |= (data[i] & 0x7F) << shift
        if not data[i] & 0x80:
            return value, i + 1
        shift += 7
    raise _Corrupt(f"a varint at byte {pos} is truncated or longer than 10 bytes")


def _skip_group(data: bytes, pos: int, number: int) -> int:
    """Past the end-group tag of the (deprecated, but valid) group `number` opened before `pos`."""
    while pos < len(data):
        at = pos
        key, pos = _varint(data, pos)
        if key & 7 == 4:
            if key >> 3 != number:
                raise _Corrupt(f"an end-group tag at byte {at} closes no open group")
            return pos
        pos = _skip(data, pos, key, at)
    raise _Corrupt(f"group {number} is not closed")


def _skip(data: bytes, pos: int, key: int, at: int) -> int:
    wire_type = key & 7
    if wire_type == 0:
        return _varint(data, pos)[1]
    if wire_type in (1, 5):
        end = pos + (8 if wire_type == 1 else 4)
    elif wire_type == 2:
        length, pos = _varint(data, pos)
        end = pos + length
    elif wire_type == 3:
        return _skip_group(data, pos, key >> 3)
    else:
        raise _Corrupt(f"the tag at byte {at} has wire type {wire_type}, which does not exist")
    if end > len(data):
        raise _Corrupt(f"the field at byte {at} runs past the end of the message")
    return end


def _wire_problem(descriptor: Any, data: bytes, prefix: str) -> tuple[str, str] | None:
    """(field path, problem) of the first fault in `data` read as `descriptor`, or None."""
    seen: dict[int, int] = {}
    pos = 0
    try:
        while pos < len(data):
            at = pos
            key, pos = _varint(data, pos)
            if key >> 3 == 0:
                raise _Corrupt(f"the tag at byte {at} has field number 0")
            if key & 7 == 4:
                raise _Corrupt(f"an end-group tag at byte {at} closes no open group")
            field = descriptor.fields_by_number.get(key >> 3)
            if field is None or key & 7 != 2:
                # Unknown fields, and known ones sent with another wire type, are kept
                # as unknown fields by protobuf: only their framing can be at fault.
                pos = _skip(data, pos, key, at)
                continue
            length, start = _varint(data, pos)
            pos = start + length
            if pos > len(data):
                raise _Corrupt(f"the field at byte {at} runs past the end of the message")
            index = seen[field.number] = seen.get(field.number, -1) + 1
            name = f"{prefix}{field.name}" + (f"[{index}]" if _repeated(field) else "")
            if field.type == FieldDescriptor.TYPE_STRING:
                try:
                    data[start:pos].decode("utf-8")
                except UnicodeDecodeError as e:
                    return name, f"is not valid UTF-8 (byte {e.start} of the string)"
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                found = _wire_problem(field.message_type, data[start:pos], name + ".")
                if found is not None:
                    return found
    except _Corrupt as e:
        return prefix.rstrip(".") or "request", f"is not a valid protobuf message: {e}"
    return None


def _repeated(field: Any) -> bool:
    # FieldDescriptor.label is deprecated in newer protobuf releases; is_repeated replaces it.
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED
