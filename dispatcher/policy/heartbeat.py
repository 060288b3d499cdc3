"""Heartbeats of long tasks: what a task type declares, and what a heartbeat may carry.

Declared beside the type's retry policy (dispatcher/policy/retry.py):

    {"shop/export_orders": {"heartbeat_timeout_ms": 30000}}

An attempt of such a type is alive only while its heartbeats come: the slot's owner gives it
up as timed out when none arrived for this long (engine/executor_stream.py), however long the
task's own timeout. A task of the type whose timeout is shorter than its heartbeat timeout is
refused at submit, naming `timeout_ms`: the heartbeat would never matter.

Pure: no I/O.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

HEARTBEAT_FIELD = "heartbeat_timeout_ms"
MAX_HEARTBEAT_TIMEOUT_MS = 3_600_000
MAX_DETAILS_BYTES = 65_536
"""A heartbeat's details are stored with the task's row on every heartbeat: kept small."""


class InvalidHeartbeatPolicy(ValueError):
    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def parse_heartbeat_timeout(key: str, spec: Mapping[str, object]) -> int | None:
    """The heartbeat timeout a task type's entry declares (None: none). `key` is "namespace/task_type"."""
    value = spec.get(HEARTBEAT_FIELD)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_HEARTBEAT_TIMEOUT_MS:
        raise InvalidHeartbeatPolicy(f"{key}.{HEARTBEAT_FIELD}",
                                     f"must be a whole number of ms in [1, {MAX_HEARTBEAT_TIMEOUT_MS}], got {value!r}")
    return value


def details_problem(details_json: str) -> str | None:
    """Why a heartbeat's details cannot be stored, or None ("" is no details: keep the last)."""
    size = len(details_json.encode())
    if size > MAX_DETAILS_BYTES:
        return f"details are {size} bytes, more than the maximum {MAX_DETAILS_BYTES}"
    try:
        json.loads(details_json)
    except ValueError as exc:
        return f"details are not JSON: {exc}"
    return None
