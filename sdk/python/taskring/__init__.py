"""taskring: the client and executor library for business services.

Submit tasks with `Client` (or `AsyncClient`); run them with an `Executor` and
handlers that take a `TaskContext`. Errors live in `taskring.errors`. The
names below are the public API; everything in a module starting with ``_`` is
private and may change.
"""
from taskring import errors
from taskring._auth import executor_tls_credentials, executor_tls_from_env, tls_credentials
from taskring.client import AsyncClient, Client
from taskring.context import TaskContext
from taskring.errors import NonRetryableError, RetryableError, TaskringError
from taskring.executor import Executor
from taskring.task import (
    Priority,
    RetryPolicy,
    SubmitResult,
    TaskEvent,
    TaskInfo,
    TaskSpec,
    TaskState,
)

__all__ = [
    "AsyncClient",
    "Client",
    "Executor",
    "NonRetryableError",
    "Priority",
    "RetryPolicy",
    "RetryableError",
    "SubmitResult",
    "TaskContext",
    "TaskEvent",
    "TaskInfo",
    "TaskSpec",
    "TaskState",
    "TaskringError",
    "errors",
    "executor_tls_credentials",
    "executor_tls_from_env",
    "tls_credentials",
]
