"""The error tree of the dispatcher, mapped to gRPC status codes at the API edge.

Every message names the field or the task it is about, so a caller can fix its
request without reading our logs. Whatever a message quotes from the request goes
through `quote`, cut to a bounded length: the message travels in the grpc-message
trailer, and a trailer past gRPC's metadata limit (8 KB) reaches the client as
RESOURCE_EXHAUSTED "Stream removed" instead of the code we meant.
"""
from __future__ import annotations

import grpc

QUOTE_CHARS = 80
"""Most characters of a caller's value an error message repeats."""
MESSAGE_CHARS = 1000
"""Most characters of any error message sent to a caller (a last guard at the API edge)."""


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """repr of a caller's value for an error message, cut to `limit` characters of the value
    (the full length is said, so the caller knows it was cut)."""
    text = value if isinstance(value, (str, bytes)) else str(value)
    if len(text) <= limit:
        return repr(text)
    unit = "bytes" if isinstance(text, bytes) else "characters"
    return f"{text[:limit]!r}... ({len(text)} {unit})"


def bounded(message: str, limit: int = MESSAGE_CHARS) -> str:
    """A whole message cut to `limit` characters, for text that may carry input we did not quote."""
    return message if len(message) <= limit else message[:limit] + f"... ({len(message)} characters)"


class TaskringError(Exception):
    """Root of every error the API reports on purpose."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidArgument(TaskringError):
    """Bad input; nothing was written."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class TaskNotFound(TaskringError):
    code = grpc.StatusCode.NOT_FOUND

    def __init__(self, task_id: str):
        self.task_id = task_id
        super().__init__(f"task {quote(task_id)} not found")


class TaskAlreadyFinished(TaskringError):
    """Cancel of a task that is past the point where it can be stopped."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, task_id: str, state: str):
        self.task_id = task_id
        self.state = state
        super().__init__(f"task {quote(task_id)} cannot be cancelled: it is already {state}")


class TaskIdTaken(TaskringError):
    """A submitted task_id belongs to a task of another namespace; nothing was written.

    Says nothing of the other task (its state, type or namespace): a caller may not
    read a namespace its token does not allow, and a duplicate's answer would tell it.
    `field` is the id's path in the request once the API knows it ("tasks[3].task_id")."""

    code = grpc.StatusCode.ALREADY_EXISTS

    def __init__(self, task_id: str, field: str = "task_id"):
        self.task_id = task_id
        self.field = field
        super().__init__(f"{field}: {quote(task_id)} is already the id of another task; choose another id"
                         " (nothing was written)")

    def at(self, field: str) -> TaskIdTaken:
        """The same refusal, naming the id's place in the request."""
        return TaskIdTaken(self.task_id, field)


class NotSupported(TaskringError):
    """A request the parts this node runs on cannot serve (graphs on `taskring dev`'s in-memory
    store); the same request is served by a node on the production store."""

    code = grpc.StatusCode.UNIMPLEMENTED


class Unavailable(TaskringError):
    """A part underneath (MySQL, Kafka) refused; the request may be retried as is."""

    code = grpc.StatusCode.UNAVAILABLE


class Unauthenticated(TaskringError):
    """No token, or one the node does not know; nothing was read or written. The message
    never repeats what was sent (it may be a secret with a typo)."""

    code = grpc.StatusCode.UNAUTHENTICATED

    def __init__(self, problem: str):
        self.problem = problem
        super().__init__(f"authorization: {problem}")


class PermissionDenied(TaskringError):
    """A known token not allowed this call, or this call on this namespace; nothing was
    written. Names the token (its name, never its secret), the call and the namespace."""

    code = grpc.StatusCode.PERMISSION_DENIED

    def __init__(self, token_name: str, call: str, namespace: str | None = None, why: str | None = None):
        self.token_name = token_name
        self.call = call
        self.namespace = namespace
        where = "" if namespace is None else f" in namespace {quote(namespace)}"
        super().__init__(f"token {quote(token_name)} may not {call}{where}" + (f": {why}" if why else ""))


RETRY_AFTER_KEY = "retry-after-ms"
"""Trailing metadata of a RESOURCE_EXHAUSTED answer: how long to wait before retrying."""


class Overloaded(TaskringError):
    """The node is behind (dispatcher/api/admission.py) and accepts nothing now; nothing was
    written, and the request may be retried as is after `retry_after_ms`."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, reason: str, retry_after_ms: int):
        self.reason = reason
        self.retry_after_ms = retry_after_ms
        super().__init__(f"overloaded: {reason}; nothing was written, retry after {retry_after_ms} ms")
