"""CronRuleSpec.to_pb: what the Python SDK sends for a rule agrees with the Go, Java and Node
SDKs: a timeout is whole milliseconds rounded up, and the payload is compact JSON that keeps
non-ASCII text and refuses what JSON cannot carry, naming the field."""
from __future__ import annotations

import math
from datetime import timedelta

import pytest

from taskring.cron import CronRuleSpec


def spec(**kw) -> CronRuleSpec:
    return CronRuleSpec(namespace="shop", name="nightly", task_type="reconcile", schedule="0 0 * * *",
                        time_zone="Asia/Singapore", **kw)


def test_a_timeout_is_rounded_up_to_whole_milliseconds():
    assert spec(timeout=timedelta(microseconds=500)).to_pb().timeout_ms == 1
    assert spec(timeout=timedelta(milliseconds=1500, microseconds=200)).to_pb().timeout_ms == 1501
    assert spec(timeout=timedelta(seconds=2)).to_pb().timeout_ms == 2000
    assert not spec().to_pb().HasField("timeout_ms")


def test_the_payload_is_compact_json_that_keeps_text_and_refuses_nan():
    assert spec(payload={"city": "Zürich", "n": [1, 2]}).to_pb().payload_json == '{"city":"Zürich","n":[1,2]}'
    assert spec().to_pb().payload_json == "{}"
    with pytest.raises(ValueError, match="^payload: not encodable as JSON"):
        spec(payload={"ratio": math.nan}).to_pb()
