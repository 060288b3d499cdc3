"""The `taskring` commands' output: SDK records (dataclasses) as one line of JSON each."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any


def to_json(record: Any) -> str:
    """A dataclass as sorted JSON: datetimes in ISO 8601, timedeltas in milliseconds, enums by value."""
    return json.dumps(_jsonable(dataclasses.asdict(record)), sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return int(value / dt.timedelta(milliseconds=1))
    if hasattr(value, "value"):  # enums (TaskState, Priority)
        return value.value
    return value
