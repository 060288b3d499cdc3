"""The cross-SDK test vectors (sdk/vectors/*.json) hold for the Python reference.

Every SDK's tests read the same files; here they run through the Python SDK's own
encoding and decoding (taskring._envelope, taskring.task) and, for the server's
rules, through dispatcher/api/validation.py and dispatcher/policy/retry.py directly. The
Python implementation is the reference: a case failing here means the vector is
wrong or the implementation changed the contract.
"""
from __future__ import annotations

import copy
import datetime as dt
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from dispatcher.api.validation import Limits, parse_rfc3339, to_unix_ms, validate_task
from dispatcher.base.errors import InvalidArgument as ServerInvalidArgument
from dispatcher.policy.retry import RetryPolicy as ServerRetryPolicy
from dispatcher.policy.retry import backoff_ceiling_ms, next_delay_ms
from taskring._envelope import parse_instant, spec_to_pb, task_info_from_pb
from taskring.errors import InvalidArgument as SdkInvalidArgument
from taskring.task import RetryPolicy, TaskInfo, TaskSpec
from taskring.wire import pb

VECTORS = Path(__file__).resolve().parents[3] / "sdk" / "vectors"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


def _load(name: str) -> dict[str, Any]:
    with open(VECTORS / name, encoding="utf-8") as f:
        return json.load(f)


ENVELOPE = _load("envelope.json")
VALIDATION = _load("validation.json")
RETRY = _load("retry.json")


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


def _epoch_ms(t: dt.datetime | None) -> int | None:
    return None if t is None else (t - _EPOCH) // _MS


def test_every_file_has_a_description_and_unique_case_names():
    for name in ("envelope.json", "validation.json", "retry.json"):
        data = _load(name)
        assert data["description"]
        names = [c["name"] for key in ("cases", "instants", "decode") for c in data.get(key, [])]
        assert names and len(names) == len(set(names)), name


# ---- envelope.json: submit -> wire Task ----

def _spec_from_input(inp: dict[str, Any]) -> TaskSpec:
    """The SDK-neutral input as the Python SDK's own TaskSpec."""
    kw: dict[str, Any] = {"namespace": inp["namespace"], "task_type": inp["task_type"]}
    for key in ("payload", "payload_version", "max_retries", "priority", "task_id", "trace_id", "unique_key"):
        if key in inp:
            kw[key] = inp[key]
    if "delay_ms" in inp:
        kw["delay"] = dt.timedelta(milliseconds=inp["delay_ms"])
    if "timeout_ms" in inp:
        kw["timeout"] = dt.timedelta(milliseconds=inp["timeout_ms"])
    if "schedule_time" in inp:
        kw["schedule_time"] = dt.datetime.fromisoformat(inp["schedule_time"])
    if "retry_policy" in inp:
        rp = inp["retry_policy"]
        if rp.get("schedule_ms"):
            kw["retry_policy"] = RetryPolicy.tiered(*(dt.timedelta(milliseconds=w) for w in rp["schedule_ms"]))
        else:
            kw["retry_policy"] = RetryPolicy(
                initial_backoff=dt.timedelta(milliseconds=rp["initial_backoff_ms"]),
                max_backoff=dt.timedelta(milliseconds=rp["max_backoff_ms"]),
                multiplier=rp["multiplier"],
            )
    return TaskSpec(**kw)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


@pytest.mark.parametrize("case", ENVELOPE["cases"], ids=_ids(ENVELOPE["cases"]))
def test_envelope_encoding(case):
    # Given
    expected = dict(case["wire"])
    expected_payload = expected.pop("payload_json_parsed")

    # When
    task = spec_to_pb(_spec_from_input(case["input"]))
    actual = json_format.MessageToDict(task)

    # Then: the same keys and values, payloadJson compared parsed
    payload_json = actual.pop("payloadJson")
    assert json.loads(payload_json) == expected_payload
    assert not re.search(r"\s", _JSON_STRING.sub("", payload_json)), "payloadJson must be compact"
    assert actual == expected
    # ... the instant is the one the vector names, as the server reads it
    if "schedule_time" in case["input"]:
        assert to_unix_ms(parse_rfc3339(actual["scheduleTime"])) == case["schedule_time_epoch_ms"]
    # ... and the server accepts the envelope (far schedule times aside: those are validation.json's)
    accepted = pb.Task()
    accepted.CopyFrom(task)
    accepted.ClearField("schedule_time")
    validate_task(accepted, now=dt.datetime(2030, 1, 2, tzinfo=dt.UTC), limits=Limits(), new_id=lambda: "id")


@pytest.mark.parametrize("case", ENVELOPE["instants"], ids=_ids(ENVELOPE["instants"]))
def test_instants(case):
    assert _epoch_ms(parse_instant(case["text"])) == case["epoch_ms"]
    # The server's parser agrees with the SDK's.
    assert to_unix_ms(parse_rfc3339(case["text"])) == case["epoch_ms"]


def _exposed(info: TaskInfo) -> dict[str, Any]:
    """What the SDK exposes, in the vectors' SDK-neutral shape."""
    return {
        "task_id": info.task_id,
        "namespace": info.namespace,
        "task_type": info.task_type,
        "state": info.state.value,
        "attempts": info.attempts,
        "due_at_epoch_ms": _epoch_ms(info.due_at),
        "slot": info.slot,
        "payload": info.payload,
        "payload_version": info.payload_version,
        "priority": info.priority.value,
        "last_error": info.last_error,
        "last_stack_trace": info.last_stack_trace,
        "created_at_epoch_ms": _epoch_ms(info.created_at),
        "schedule_time_epoch_ms": _epoch_ms(info.schedule_time),
        "timeout_ms": None if info.timeout is None else info.timeout // _MS,
        "max_retries": info.max_retries,
        "unique_key": info.unique_key,
        "trace_id": info.trace_id,
        "history": [
            {"state": e.state.value, "at_epoch_ms": _epoch_ms(e.at), "node": e.node, "attempt": e.attempt,
             "detail": e.detail}
            for e in info.history
        ],
    }


@pytest.mark.parametrize("case", ENVELOPE["decode"], ids=_ids(ENVELOPE["decode"]))
def test_decode(case):
    # Given
    msg = json_format.ParseDict(case["response"], pb.GetTaskResponse())

    # When
    info = task_info_from_pb(msg)

    # Then
    assert _exposed(info) == case["expect"]


# ---- validation.json ----

CLIENT_CASES = [c for c in VALIDATION["cases"] if c["checked_by"] == "client"]
SERVER_CASES = [c for c in VALIDATION["cases"] if c["checked_by"] == "server"]


def test_validation_cases_are_well_formed():
    assert CLIENT_CASES and SERVER_CASES
    assert len(CLIENT_CASES) + len(SERVER_CASES) == len(VALIDATION["cases"])
    for c in VALIDATION["cases"]:
        assert ("ok" in c) != ("error_field" in c), c["name"]
        assert ("input" in c) == (c["checked_by"] == "client"), c["name"]


def test_validation_limits_are_the_server_defaults():
    limits, stated = Limits(), VALIDATION["limits"]
    policy = limits.default_retry_policy
    assert stated == {
        "max_payload_bytes": limits.max_payload_bytes,
        "max_payload_depth": limits.max_payload_depth,
        "max_delay_ms": limits.max_delay_ms,
        "max_retries": [0, limits.max_retries_limit],
        "default_max_retries": limits.default_max_retries,
        "timeout_ms": [1, limits.max_timeout_ms],
        "default_timeout_ms": limits.default_timeout_ms,
        "max_key_chars": limits.max_key_chars,
        "max_schedule_entries": 100,
        "default_retry_policy": {"initial_backoff_ms": policy.initial_backoff_ms,
                                 "max_backoff_ms": policy.max_backoff_ms, "multiplier": policy.multiplier},
    }


@pytest.mark.parametrize("case", CLIENT_CASES, ids=_ids(CLIENT_CASES))
def test_client_validation(case):
    if case.get("ok"):
        spec_to_pb(_spec_from_input(case["input"]))
        return
    with pytest.raises((ValueError, TypeError)) as e:
        _spec_from_input(case["input"])
    field = case["error_field"]
    names = {field, field.removesuffix("_ms")}
    assert any(str(e.value).startswith(f"{n}: ") for n in names), str(e.value)


def _server_task(case: dict[str, Any]) -> pb.Task:
    fields = copy.deepcopy(case["task"])
    size = fields.pop("payload_size_bytes", None)
    if size is not None:
        fields["payloadJson"] = '{"x":"' + "a" * (size - 8) + '"}'
        assert len(fields["payloadJson"].encode("utf-8")) == size
    return json_format.ParseDict(fields, pb.Task())


@pytest.mark.parametrize("case", SERVER_CASES, ids=_ids(SERVER_CASES))
def test_server_validation(case):
    # Given
    task = _server_task(case)
    now = parse_rfc3339(VALIDATION["now"])

    def check():
        return validate_task(task, now=now, limits=Limits(), new_id=lambda: "generated-id")

    if case.get("ok"):
        check()
        return
    # When
    with pytest.raises(ServerInvalidArgument) as e:
        check()

    # Then: the details start "<field>: ", and the SDK reads the field back out of them
    field = case["error_field"]
    assert e.value.field == field
    assert str(e.value).startswith(f"{field}: ")
    assert SdkInvalidArgument(str(e.value)).field == field


# ---- retry.json ----

class _Draw(random.Random):
    """A Random whose every draw is the vector's u: randint(a, b) = a + min(b - a, floor(u * (b - a + 1)))."""

    def __init__(self, u: float):
        super().__init__(0)
        self.u = u
        self.calls = 0

    def randint(self, a: int, b: int) -> int:
        self.calls += 1
        return a + min(b - a, math.floor(self.u * (b - a + 1)))

    def random(self) -> float:
        raise AssertionError("the server's mapping of a draw changed: it no longer uses randint")

    def uniform(self, a: float, b: float) -> float:
        raise AssertionError("the server's mapping of a draw changed: it no longer uses randint")


@pytest.mark.parametrize("case", RETRY["cases"], ids=_ids(RETRY["cases"]))
def test_retry_delay(case):
    # Given
    policy = ServerRetryPolicy(**case["policy"])
    rng = _Draw(case["jitter"])
    assert 0 <= case["jitter"] < 1

    # When
    delay = next_delay_ms(policy, case["retry"], rng)

    # Then
    assert delay == case["delay_ms"]
    assert type(delay) is int
    if policy.tiered:
        assert case["ceiling_ms"] is None
        assert rng.calls == 0
    else:
        assert backoff_ceiling_ms(policy, case["retry"]) == case["ceiling_ms"]
        assert rng.calls == 1
        assert 0 <= delay <= case["ceiling_ms"] <= policy.max_backoff_ms
