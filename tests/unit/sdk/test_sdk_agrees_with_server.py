"""Where the Python SDK and the server must agree on the same text: a task type an
executor may register is one the server accepts on submit, and every instant the SDK
sends is one the server parses, to the same moment."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from dispatcher.api.validation import TASK_TYPE_RE, parse_rfc3339
from taskring import Executor
from taskring._envelope import format_instant


@pytest.mark.parametrize("task_type", ["send", "invoice.send", "billing:charge", "a-b_c.d:e", "X" * 128])
def test_an_executor_registers_every_task_type_the_server_accepts(task_type):
    assert TASK_TYPE_RE.fullmatch(task_type)
    executor = Executor("shop", zk_hosts=None)
    executor.add_handler(task_type, lambda ctx: None)
    assert task_type in executor.task_types


@pytest.mark.parametrize("task_type", ["", ":starts-with-colon", "has space", "X" * 129])
def test_an_executor_refuses_what_the_server_refuses(task_type):
    assert not TASK_TYPE_RE.fullmatch(task_type)
    with pytest.raises(ValueError, match="task_type"):
        Executor("shop", zk_hosts=None).add_handler(task_type, lambda ctx: None)


@pytest.mark.parametrize("instant", [
    datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
    datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=ZoneInfo("Asia/Singapore")),
    datetime(2030, 3, 10, 1, 59, 59, tzinfo=ZoneInfo("America/New_York")),
    datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=45))),
    datetime(2030, 1, 1, tzinfo=timezone(timedelta(seconds=30))),           # an offset with seconds
    datetime(1890, 1, 1, tzinfo=ZoneInfo("Asia/Singapore")),                 # local mean time: +06:55:25
])
def test_every_instant_the_sdk_sends_is_the_same_instant_to_the_server(instant):
    text = format_instant(instant)
    assert parse_rfc3339(text) == instant.astimezone(UTC)


def test_a_whole_minute_offset_is_kept_as_the_caller_gave_it():
    assert format_instant(datetime(2030, 1, 2, 11, 4, 5, tzinfo=ZoneInfo("Asia/Singapore"))) == \
        "2030-01-02T11:04:05+08:00"
