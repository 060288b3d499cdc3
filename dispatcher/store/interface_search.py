"""The contract of task search, kept by SearchStore (search.py, over the task store's shards)
and its twin MemorySearch (memory_ops.py); tests/conformance/search.py checks both.

Reads only. Every search is a bounded read: the MariaDB store holds each to an index range
(search.py). Every method may raise dispatcher.base.errors.Unavailable.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol

MAX_PAGE = 500
"""The most tasks one search returns, whatever limit is asked."""


@dataclasses.dataclass(frozen=True)
class TaskSummary:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    status: str
    attempts: int
    trigger_at: dt.datetime
    created_at: dt.datetime
    updated_at: dt.datetime
    last_error: str | None

    @property
    def cursor(self) -> tuple[dt.datetime, str]:
        return self.created_at, self.task_id


@dataclasses.dataclass(frozen=True)
class Query:
    """One search: exactly one of trace_id, unique_key (with namespace), or namespace +
    task_type (with an optional status and time range)."""

    trace_id: str = ""
    unique_key: str = ""
    namespace: str = ""
    task_type: str = ""
    status: str = ""
    since: dt.datetime | None = None
    until: dt.datetime | None = None


class SearchProtocol(Protocol):
    def search(self, q: Query, *, before: tuple[dt.datetime, str] | None = None,
               limit: int = 50) -> list[TaskSummary]:
        """The tasks `q` names, newest first by (created_at, task_id), strictly before the
        cursor `before` when given; at most `limit`, clamped to [1, MAX_PAGE].

        trace_id: the tasks submitted with that trace id; a W3C trace id (32 hex digits) also
        finds the tasks whose trace_id is a traceparent of that trace (`00-<trace id>-...`, what
        the SDKs send from inside a traced request). unique_key: the task that last
        took the key in `namespace` (its holder, or its last one; the cursor does not
        apply), none when no task ever took it. Otherwise the tasks of namespace and task_type, of `status` when
        given (a row status), created at or after `since` and before `until`."""


def is_w3c_trace_id(value: str) -> bool:
    """32 lowercase hex digits: the trace id part of a W3C traceparent."""
    return len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def trace_matches(query: str, stored: str) -> bool:
    """Whether a task with trace_id `stored` answers a search for `query` (see search)."""
    return stored == query or (is_w3c_trace_id(query) and stored.startswith(f"00-{query}-"))
