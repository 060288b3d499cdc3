"""Conversions between the SDK's dataclasses (task.py) and the wire messages.

The one place that knows the wire's conventions: the payload travels as compact
JSON text, durations as whole milliseconds (rounded up so nothing runs early),
instants as RFC 3339 strings with an offset, and an unset optional field means
"the server's default". Shared by the sync and the async client.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from taskring._tracing import current_traceparent
from taskring.errors import ProtocolError
from taskring.task import (
    Priority,
    RetryPolicy,
    SubmitResult,
    TaskEvent,
    TaskInfo,
    TaskSpec,
    TaskState,
    to_millis,
)
from taskring.wire import STATE_FROM_PB, pb

_PRIORITY_TO_PB: dict[Priority, pb.Priority] = {
    Priority.LOW: pb.PRIORITY_LOW,
    Priority.NORMAL: pb.PRIORITY_NORMAL,
    Priority.HIGH: pb.PRIORITY_HIGH,
}
_PRIORITY_FROM_PB: dict[int, Priority] = {v: k for k, v in _PRIORITY_TO_PB.items()}
_PRIORITY_FROM_PB[pb.PRIORITY_UNSPECIFIED] = Priority.NORMAL  # the proto says so


def state_from_pb(value: int) -> TaskState:
    """pb.TaskState -> TaskState; an unknown value means this SDK is older than the server."""
    try:
        return STATE_FROM_PB[value]
    except KeyError:
        raise ProtocolError(f"server sent unknown task state {value}; upgrade the taskring SDK") from None


def encode_payload(payload: Any) -> str:
    """Compact JSON text of a payload mapping; None is the empty object."""
    if payload is None:
        return "{}"
    try:
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise type(e)(f"payload: not encodable as JSON: {e}") from e


def format_instant(dt: datetime) -> str:
    """RFC 3339 with the caller's own offset (the server stores UTC).

    RFC 3339 offsets are whole minutes; an offset with seconds (a zone's local mean
    time before 1900, or a timezone built from seconds) would print as +hh:mm:ss,
    which no server accepts: such an instant is sent in UTC instead, unchanged."""
    offset = dt.utcoffset()
    if offset is not None and offset % timedelta(minutes=1):
        dt = dt.astimezone(UTC)
    return dt.isoformat()


def parse_instant(text: str) -> datetime | None:
    """RFC 3339 from the server (``Z`` or an offset); empty means unset."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ProtocolError(f"server sent a malformed time {text!r}") from None


def _require_instant(text: str, what: str) -> datetime:
    value = parse_instant(text)
    if value is None:
        raise ProtocolError(f"server sent an empty {what}")
    return value


def retry_policy_to_pb(policy: RetryPolicy) -> pb.RetryPolicy:
    msg = pb.RetryPolicy()
    if policy.schedule:
        msg.schedule_ms.extend(to_millis(w) for w in policy.schedule)  # type: ignore[arg-type]
    else:
        msg.initial_backoff_ms = to_millis(policy.initial_backoff)  # type: ignore[arg-type]
        msg.max_backoff_ms = to_millis(policy.max_backoff)  # type: ignore[arg-type]
        msg.multiplier = policy.multiplier
    return msg


def spec_to_pb(spec: TaskSpec) -> pb.Task:
    """The envelope for one TaskSpec (already validated by its constructor)."""
    task = pb.Task(
        namespace=spec.namespace,
        task_type=spec.task_type,
        payload_json=encode_payload(spec.payload),
        payload_version=spec.payload_version,
        priority=_PRIORITY_TO_PB[Priority(spec.priority)],
    )
    if spec.task_id:
        task.task_id = spec.task_id
    if spec.delay is not None:
        task.delay_ms = to_millis(spec.delay)  # type: ignore[arg-type]
    if spec.schedule_time is not None:
        task.schedule_time = format_instant(spec.schedule_time)
    if spec.timeout is not None:
        task.timeout_ms = to_millis(spec.timeout)  # type: ignore[arg-type]
    if spec.max_retries is not None:
        task.max_retries = spec.max_retries
    if spec.retry_policy is not None:
        task.retry_policy.CopyFrom(retry_policy_to_pb(spec.retry_policy))
    if spec.unique_key:
        task.unique_key = spec.unique_key
    if spec.unique_ttl is not None:
        task.unique_ttl_ms = to_millis(spec.unique_ttl)  # type: ignore[arg-type]
    if spec.trace_id:
        task.trace_id = spec.trace_id
    else:   # inside a traced request: the task goes on with its trace (_tracing.py)
        traceparent = current_traceparent()
        if traceparent:
            task.trace_id = traceparent
    return task


def submit_result_from_pb(msg: pb.SubmitResponse) -> SubmitResult:
    return SubmitResult(
        task_id=msg.task_id,
        duplicate=msg.duplicate,
        state=state_from_pb(msg.state),
        due_at=parse_instant(msg.due_at),
        slot=msg.slot,
    )


def decode_payload(text: str) -> dict[str, Any]:
    """The payload object; empty text is the empty object."""
    if not text:
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ProtocolError("payload_json is not a JSON object")
    return value


def task_info_from_pb(msg: pb.GetTaskResponse) -> TaskInfo:
    task = msg.task
    return TaskInfo(
        task_id=task.task_id,
        namespace=task.namespace,
        task_type=task.task_type,
        state=state_from_pb(msg.state),
        attempts=msg.attempts,
        due_at=parse_instant(msg.due_at),
        slot=msg.slot,
        payload=decode_payload(task.payload_json),
        payload_version=task.payload_version,
        priority=_PRIORITY_FROM_PB.get(task.priority, Priority.NORMAL),
        last_error=msg.last_error,
        last_stack_trace=msg.last_stack_trace,
        waiting=msg.waiting,
        history=[
            TaskEvent(
                state=state_from_pb(ev.state),
                at=_require_instant(ev.at, "history.at"),
                node=ev.node,
                attempt=ev.attempt,
                detail=ev.detail,
            )
            for ev in msg.history
        ],
        created_at=parse_instant(task.created_at),
        schedule_time=parse_instant(task.schedule_time),
        timeout=timedelta(milliseconds=task.timeout_ms) if task.HasField("timeout_ms") else None,
        max_retries=task.max_retries if task.HasField("max_retries") else None,
        unique_key=task.unique_key,
        trace_id=task.trace_id,
        cron_rule=task.cron_rule,
        cron_fire_time=parse_instant(task.cron_fire_time),
    )
