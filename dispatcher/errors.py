"""The error tree of the dispatcher, mapped to gRPC status codes at the API edge.

Every message names the field or the task it is about, so a caller can fix its
request without reading our logs.
"""
from __future__ import annotations

import grpc


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
        super().__init__(f"task {task_id!r} not found")


class TaskAlreadyFinished(TaskringError):
    """Cancel of a task that is past the point where it can be stopped."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, task_id: str, state: str):
        self.task_id = task_id
        self.state = state
        super().__init__(f"task {task_id!r} cannot be cancelled: it is already {state}")


class Unavailable(TaskringError):
    """A part underneath (MySQL, Kafka) refused; the request may be retried as is."""

    code = grpc.StatusCode.UNAVAILABLE


class NotOwner(TaskringError):
    """This node no longer owns the slot (its epoch was superseded): fencing worked."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, slot: int, epoch: int):
        self.slot = slot
        self.epoch = epoch
        super().__init__(f"slot {slot}: epoch {epoch} is no longer current")
