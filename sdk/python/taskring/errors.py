"""The error tree of the SDK: one root, two branches.

- Errors a *client* sees are the server's gRPC status codes turned back into
  exceptions (`from_rpc_error`), so callers write ``except InvalidArgument as e:
  e.field`` instead of inspecting status codes. The server words every message as
  ``"<field>: <problem>"`` for bad input (dispatcher/base/errors.py), which is why
  `InvalidArgument` can hand the field back.
- Errors a *handler* raises tell the executor what the failure means for
  retries: `RetryableError` asks for another attempt, `NonRetryableError` sends
  the task to the dead-letter queue at once. Any other exception is treated as
  retryable, because an unexpected bug is more often transient (a dependency
  down) than permanent, and a dead letter is the more expensive mistake.

No class here shadows a built-in: a deadline is `DeadlineExceeded`, not
`TimeoutError`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc


class TaskringError(Exception):
    """Root of every error the SDK raises on purpose."""


# ---- Client side: gRPC status codes from the server. ----


class RpcError(TaskringError):
    """A call to a dispatcher failed with a gRPC status.

    The subclasses name the codes a caller is expected to handle; any other code
    arrives as a plain `RpcError` with `.code` set.
    """

    def __init__(self, code: grpc.StatusCode, details: str):
        self.code = code
        self.details = details
        super().__init__(f"{code.name}: {details}" if details else code.name)


class InvalidArgument(RpcError):
    """The request was rejected as bad input and nothing was written.

    `field` names the offending field (``"tasks[2].payload_json"`` in a batch), or
    is ``""`` when the server did not name one; `problem` is the rest.
    Resubmitting the same request will fail the same way.
    """

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT, details)
        field, sep, problem = details.partition(": ")
        if sep and field and " " not in field:
            self.field, self.problem = field, problem
        else:
            self.field, self.problem = "", details


class NotFound(RpcError):
    """No task has that id (or it was purged)."""

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.NOT_FOUND, details)


class AlreadyExists(RpcError):
    """The request conflicts with something already stored (e.g. a unique key)."""

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.ALREADY_EXISTS, details)


class FailedPrecondition(RpcError):
    """The task is not in a state that allows the request (e.g. cancel after it finished)."""

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.FAILED_PRECONDITION, details)


class Unavailable(RpcError):
    """The dispatcher (or a store under it) could not take the request right now.

    Safe to retry. A submit retried with the same `task_id` is recognised by the
    server and reported as a duplicate, so pass `task_id` when you retry submits.
    """

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.UNAVAILABLE, details)


class ResourceExhausted(RpcError):
    """The server is shedding load or the message was too large. Back off, then retry.

    A dispatcher that is behind refuses submits before writing anything and says how
    long to wait: `retry_after_s` (None when the server gave no hint). The clients
    retry such refusals themselves when every task carries a `task_id`.
    """

    def __init__(self, details: str, retry_after_s: float | None = None):
        super().__init__(grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        self.retry_after_s = retry_after_s


class DeadlineExceeded(RpcError):
    """No answer within the client's RPC timeout.

    The request may or may not have been applied: retry a submit with the same
    `task_id`, and check a cancel with `get`.
    """

    def __init__(self, details: str):
        super().__init__(grpc.StatusCode.DEADLINE_EXCEEDED, details)


class PermissionDenied(RpcError):
    """The caller is not allowed to do this (PERMISSION_DENIED or UNAUTHENTICATED)."""


class ProtocolError(TaskringError):
    """The server sent something this SDK version does not understand (e.g. a new state)."""


_BY_CODE: dict[grpc.StatusCode, Callable[[str], RpcError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
}


RETRY_AFTER_KEY = "retry-after-ms"
"""The trailing metadata a dispatcher sends with a RESOURCE_EXHAUSTED refusal."""


def _retry_after_s(err: grpc.RpcError) -> float | None:
    trailing: Any = err.trailing_metadata() if callable(getattr(err, "trailing_metadata", None)) else None
    for item in trailing or ():
        key, value = item[0], item[1]
        if key == RETRY_AFTER_KEY:
            try:
                return max(0.0, int(value) / 1000)
            except (TypeError, ValueError):
                return None
    return None


def from_rpc_error(err: grpc.RpcError) -> RpcError:
    """Turn a grpc (or grpc.aio) error into the matching `RpcError` subclass."""
    code = err.code() if callable(getattr(err, "code", None)) else grpc.StatusCode.UNKNOWN
    details = (err.details() if callable(getattr(err, "details", None)) else None) or ""
    if code is None:
        code = grpc.StatusCode.UNKNOWN
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return ResourceExhausted(details, _retry_after_s(err))
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(details)
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return PermissionDenied(code, details)
    return RpcError(code, details)


# ---- Handler side: what a failure means for retries. ----


class HandlerError(TaskringError):
    """Base of the exceptions a handler raises to say how its failure is retried."""


class RetryableError(HandlerError):
    """Ask for another attempt, after the task's retry backoff.

    When the retries are used up the task fails and is dead-lettered. Raising any
    other unexpected exception has the same effect; raise this one to say so on
    purpose.
    """


class NonRetryableError(HandlerError):
    """The task can never succeed as submitted: dead-letter it now, without retries.

    For example a payload that refers to an entity that does not exist. The task
    can still be replayed from the dead-letter queue once the cause is fixed.
    """


__all__ = [
    "AlreadyExists",
    "DeadlineExceeded",
    "FailedPrecondition",
    "HandlerError",
    "InvalidArgument",
    "NonRetryableError",
    "NotFound",
    "PermissionDenied",
    "ProtocolError",
    "ResourceExhausted",
    "RetryableError",
    "RpcError",
    "TaskringError",
    "Unavailable",
    "from_rpc_error",
]


class TaskStopped(HandlerError):
    """Raised by `ctx.heartbeat()` once the dispatcher has told the attempt to stop.

    `verdict` is ``"cancelled"`` (the task was cancelled while it ran) or ``"lost"``
    (this attempt is not the task's running one any more: its heartbeat lease ran out and
    it was given up, or the task finished). Whatever the handler does next, the outcome
    the executor sends for the attempt is STOPPED, and the dispatcher records nothing of
    it: let the exception end the handler.
    """

    def __init__(self, verdict: str, reason: str):
        self.verdict = verdict
        self.reason = reason
        super().__init__(f"{verdict}: {reason}")


class InvalidHeartbeat(HandlerError, ValueError):
    """`ctx.heartbeat(details)` with details that are not JSON or are too large; nothing was sent."""
