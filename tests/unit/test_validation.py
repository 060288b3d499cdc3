"""Envelope validation: every bad input named by its field path, defaults filled in."""
from __future__ import annotations

import datetime as dt
import itertools
import json
from typing import Any

import pytest

from dispatcher.api.validation import (
    Limits,
    ValidTask,
    parse_rfc3339,
    to_unix_ms,
    validate_batch,
    validate_task,
)
from dispatcher.base.clock import rfc3339
from dispatcher.base.errors import InvalidArgument
from dispatcher.policy.retry import RetryPolicies, RetryPolicy
from taskring.wire import pb

UTC = dt.UTC
NOW = dt.datetime(2030, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
NOW_MS = NOW.replace(microsecond=678_000)
LIMITS = Limits()
DAY_MS = 24 * 3600 * 1000


def _ids():
    counter = itertools.count(1)
    return lambda: f"gen-{next(counter)}"


def task(**fields) -> pb.Task:
    base: dict[str, Any] = dict(namespace="billing", task_type="invoice.send", payload_json='{"invoice": 42}')
    base.update(fields)
    return pb.Task(**base)


def check(t: pb.Task, limits: Limits = LIMITS) -> ValidTask:
    return validate_task(t, now=NOW, limits=limits, new_id=_ids())


def rejected(t: pb.Task, limits: Limits = LIMITS) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as e:
        check(t, limits)
    return e.value


def nested(depth: int) -> str:
    """An object whose innermost level is `depth` (the object itself is level 1)."""
    return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


# ---- A good task and its defaults ----

def test_a_minimal_task_gets_every_default():
    # Given
    t = pb.Task(namespace="billing", task_type="invoice.send")

    # When
    v = check(t)

    # Then
    assert v.task_id == "gen-1"
    assert v.payload_json == "{}"
    assert v.due_at == NOW_MS and v.created_at == NOW_MS
    assert v.due_at.tzinfo is not None and v.due_at.utcoffset() == dt.timedelta(0)
    assert v.timeout_ms == LIMITS.default_timeout_ms == 30_000
    assert v.max_retries == LIMITS.default_max_retries == 3
    assert v.retry_policy == RetryPolicy()
    assert v.priority == pb.PRIORITY_NORMAL
    assert (v.unique_key, v.trace_id, v.payload_version) == ("", "", 0)


def test_the_default_task_id_is_a_uuid7():
    v = validate_task(task(), now=NOW, limits=LIMITS)
    assert v.task_id[14] == "7" and len(v.task_id) == 36


def test_given_fields_are_kept():
    # Given
    t = task(task_id="order-1:retry.2", payload_version=3, priority=pb.PRIORITY_HIGH, unique_key="u" * 128,
             trace_id="t" * 128, timeout_ms=5000, max_retries=0, retry_count=9, created_at="1999-01-01T00:00:00Z")

    # When
    v = check(t)

    # Then: server-owned fields (retry_count, created_at) are ignored
    assert (v.task_id, v.payload_version, v.priority) == ("order-1:retry.2", 3, pb.PRIORITY_HIGH)
    assert (v.unique_key, v.trace_id, v.timeout_ms, v.max_retries) == ("u" * 128, "t" * 128, 5000, 0)
    assert v.created_at == NOW_MS


def test_the_error_message_names_the_field_path():
    e = rejected(task(namespace=""))
    assert (e.field, str(e)) == ("task.namespace", "task.namespace: is required")


def test_a_custom_field_prefix_is_used():
    with pytest.raises(InvalidArgument) as e:
        validate_task(task(namespace=""), now=NOW, limits=LIMITS, field_prefix="request.task")
    assert e.value.field == "request.task.namespace"


def test_a_naive_now_is_a_programming_error():
    with pytest.raises(ValueError):
        validate_task(task(), now=dt.datetime(2030, 1, 1), limits=LIMITS)


def test_a_normalised_envelope_validates_to_itself():
    # Given
    v = check(task(payload_json='{"b":[1,{"c":null}],"a":"é"}', delay_ms=1500, priority=pb.PRIORITY_LOW,
                   retry_policy=pb.RetryPolicy(schedule_ms=[10, 20]), trace_id="abc"))

    # When
    again = validate_task(v.to_pb(), now=v.created_at, limits=LIMITS)

    # Then
    assert again == v
    assert v.to_pb().schedule_time == "2030-01-02T03:04:07.178Z"


# ---- Names ----

def test_namespace_missing():
    assert rejected(task(namespace="")).field == "task.namespace"


@pytest.mark.parametrize("ns", ["Billing", "-billing", ".x", "a/b", "a b", "n" * 65, "billing\n", "bïlling"])
def test_namespace_malformed(ns):
    e = rejected(task(namespace=ns))
    assert e.field == "task.namespace" and "must match" in e.problem


def test_namespace_of_64_characters_with_dots_dashes_underscores_is_fine():
    assert check(task(namespace="0." + "a-_" * 20 + "zz")).namespace.startswith("0.")


def test_task_type_missing():
    assert rejected(task(task_type="")).field == "task.task_type"


@pytest.mark.parametrize("tt", [":Paid", "Order Paid", "a/b", "t" * 129, "Paid\n"])
def test_task_type_malformed(tt):
    e = rejected(task(task_type=tt))
    assert e.field == "task.task_type" and "must match" in e.problem


def test_task_type_may_use_colons_and_upper_case():
    assert check(task(task_type="OrderPaid:v2")).task_type == "OrderPaid:v2"


@pytest.mark.parametrize("tid", ["has space", "x" * 65, "slash/ed", "ünï"])
def test_task_id_malformed(tid):
    assert rejected(task(task_id=tid)).field == "task.task_id"


def test_huge_bad_values_are_cut_short_in_the_message():
    assert len(str(rejected(task(namespace="X" * 100_000)))) < 300


# ---- Payload ----

@pytest.mark.parametrize("payload", ["{", "{'a': 1}", '{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}',
                                     '{"a": ' + "1" * 5000 + "}", "   ", '{"a": 1, "a": 2}'])
def test_payload_not_json(payload):
    e = rejected(task(payload_json=payload))
    assert e.field == "task.payload_json" and "not valid JSON" in e.problem


@pytest.mark.parametrize("payload, kind", [("[]", "array"), ("1", "number"), ('"s"', "string"),
                                           ("null", "null"), ("true", "boolean")])
def test_payload_not_an_object(payload, kind):
    e = rejected(task(payload_json=payload))
    assert e.field == "task.payload_json" and e.problem == f"must be a JSON object, got a JSON {kind}"


def test_empty_payload_means_an_empty_object():
    assert check(task(payload_json="")).payload_json == "{}"


def test_payload_is_canonicalised_compact_with_sorted_keys_and_utf8_kept():
    v = check(task(payload_json='{ "b": 1,\n "a": [1, 2.50, {"z": true, "y": null}], "名": "值" }'))
    assert v.payload_json == '{"a":[1,2.5,{"y":null,"z":true}],"b":1,"名":"值"}'


def test_payload_too_large():
    # Given: 65,537 bytes
    payload = '{"a":"' + "x" * (65_537 - 8) + '"}'
    assert len(payload) == 65_537

    # When
    e = rejected(task(payload_json=payload))

    # Then
    assert e.field == "task.payload_json" and "65537 bytes" in e.problem


def test_payload_of_exactly_the_maximum_size_is_fine():
    payload = '{"a":"' + "x" * (65_536 - 8) + '"}'
    assert len(check(task(payload_json=payload)).payload_json) == 65_536


def test_payload_size_counts_utf8_bytes_not_characters():
    # Given: 30,000 characters but 90,000+ bytes
    payload = '{"a":"' + "值" * 30_000 + '"}'

    # When / Then
    assert "bytes" in rejected(task(payload_json=payload)).problem


def test_payload_with_an_unpaired_surrogate_is_rejected():
    assert rejected(task(payload_json='{"a": "\\ud800"}')).field == "task.payload_json"


def test_payload_nested_too_deep():
    e = rejected(task(payload_json=nested(33)))
    assert e.field == "task.payload_json" and "nested too deep" in e.problem


def test_payload_nested_exactly_the_maximum_is_fine():
    assert check(task(payload_json=nested(32))).payload_json == nested(32)


def test_a_ten_thousand_deep_array_is_rejected_without_recursion_error():
    # Given: deeper than the JSON decoder's own recursion limit
    payload = '{"a":' + "[" * 10_000 + "]" * 10_000 + "}"

    # When
    e = rejected(task(payload_json=payload))

    # Then
    assert "nested too deep" in e.problem


def test_a_ten_thousand_deep_top_level_array_is_rejected_as_too_deep():
    assert "nested too deep" in rejected(task(payload_json="[" * 10_000 + "]" * 10_000)).problem


def test_brackets_inside_strings_do_not_count_as_nesting():
    payload = json.dumps({"a": "[{" * 500, "b": [[[]]]})
    assert check(task(payload_json=payload))


def test_wide_payloads_with_many_shallow_containers_are_fine():
    payload = json.dumps({f"k{i}": [{"x": [i]}] for i in range(1000)})
    assert check(task(payload_json=payload))


# ---- When it is due ----

def test_delay_sets_due_at_from_now():
    v = check(task(delay_ms=90_000))
    assert v.due_at == NOW_MS + dt.timedelta(seconds=90)
    assert v.due_at_ms == to_unix_ms(NOW_MS) + 90_000 == 1_893_553_445_678 + 90_000


def test_schedule_time_with_an_offset_is_stored_in_utc():
    v = check(task(schedule_time="2030-01-02T19:00:00.250+08:00"))
    assert v.due_at == dt.datetime(2030, 1, 2, 11, 0, 0, 250_000, tzinfo=UTC)
    assert v.due_at.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize("text", ["2030-01-03T00:00:00Z", "2030-01-03t00:00:00z", "2030-01-03 00:00:00Z",
                                  "2030-01-02T19:00:00-05:00", "2030-01-03T00:00:00.1+00:00"])
def test_schedule_time_rfc3339_forms_are_accepted(text):
    assert check(task(schedule_time=text)).due_at > NOW


def test_schedule_time_is_kept_to_the_millisecond():
    v = check(task(schedule_time="2030-01-03T00:00:00.123456789Z"))
    assert v.due_at.microsecond == 123_000


@pytest.mark.parametrize("text", ["tomorrow", "2030-13-01T00:00:00Z", "2030-02-30T00:00:00Z", "2030-01-03",
                                  "2030-01-03T25:00:00Z", "2030-01-03T00:00:00+24:00", "20300103T000000Z",
                                  "2030-W01-1T00:00:00Z", "9999-12-31T23:00:00-05:00", "٢٠٣٠-01-03T00:00:00Z"])
def test_schedule_time_unparsable(text):
    e = rejected(task(schedule_time=text))
    assert e.field == "task.schedule_time"


@pytest.mark.parametrize("text", ["2030-01-03T00:00:00", "2030-01-03T00:00:00.5"])
def test_schedule_time_without_an_offset(text):
    e = rejected(task(schedule_time=text))
    assert e.field == "task.schedule_time" and "no UTC offset" in e.problem


def test_schedule_time_and_delay_together():
    e = rejected(task(schedule_time="2030-01-03T00:00:00Z", delay_ms=1000))
    assert e.field == "task.delay_ms" and "schedule_time" in e.problem


def test_delay_beyond_the_maximum():
    assert rejected(task(delay_ms=90 * DAY_MS + 1)).field == "task.delay_ms"


def test_delay_of_exactly_the_maximum_is_fine():
    assert check(task(delay_ms=90 * DAY_MS)).due_at == NOW_MS + dt.timedelta(days=90)


def test_schedule_time_beyond_the_maximum():
    late = rfc3339(NOW_MS + dt.timedelta(days=90, milliseconds=1))
    assert rejected(task(schedule_time=late)).field == "task.schedule_time"


def test_schedule_time_at_exactly_the_maximum_is_fine():
    latest = NOW_MS + dt.timedelta(days=90)
    assert check(task(schedule_time=rfc3339(latest))).due_at == latest


def test_schedule_time_in_the_past_is_due_now():
    assert check(task(schedule_time="2001-01-01T00:00:00Z")).due_at == NOW_MS
    assert check(task(schedule_time="0001-01-01T00:00:00Z")).due_at == NOW_MS


def test_a_smaller_max_delay_limit_applies():
    assert rejected(task(delay_ms=61_000), Limits(max_delay_ms=60_000)).field == "task.delay_ms"


# ---- Priority, retries, timeout ----

def test_unknown_priority():
    e = rejected(task(priority=7))
    assert e.field == "task.priority" and "unknown priority 7" in e.problem


def test_unspecified_priority_is_normal():
    assert check(task(priority=pb.PRIORITY_UNSPECIFIED)).priority == pb.PRIORITY_NORMAL


@pytest.mark.parametrize("n", [-1, 51, 2**31 - 1])
def test_max_retries_out_of_range(n):
    assert rejected(task(max_retries=n)).field == "task.max_retries"


@pytest.mark.parametrize("n", [0, 50])
def test_max_retries_at_the_bounds_is_fine(n):
    assert check(task(max_retries=n)).max_retries == n


@pytest.mark.parametrize("ms", [0, 3_600_001])
def test_timeout_zero_or_beyond_the_maximum(ms):
    assert rejected(task(timeout_ms=ms)).field == "task.timeout_ms"


def test_timeout_of_exactly_the_maximum_is_fine():
    assert check(task(timeout_ms=3_600_000)).timeout_ms == 3_600_000


# ---- Retry policy ----

@pytest.mark.parametrize(
    "policy, field",
    [
        (pb.RetryPolicy(multiplier=0.5), "task.retry_policy.multiplier"),
        (pb.RetryPolicy(multiplier=float("nan")), "task.retry_policy.multiplier"),
        (pb.RetryPolicy(initial_backoff_ms=10_000, max_backoff_ms=5_000), "task.retry_policy.initial_backoff_ms"),
        # beyond the server default's max_backoff_ms (300 s), which it inherits
        (pb.RetryPolicy(initial_backoff_ms=600_000), "task.retry_policy.initial_backoff_ms"),
        (pb.RetryPolicy(schedule_ms=[30_000, 0]), "task.retry_policy.schedule_ms[1]"),
        (pb.RetryPolicy(schedule_ms=[1000] * 101), "task.retry_policy.schedule_ms"),
        (pb.RetryPolicy(schedule_ms=[1000, 90 * DAY_MS + 1]), "task.retry_policy.schedule_ms[1]"),
        (pb.RetryPolicy(max_backoff_ms=90 * DAY_MS + 1), "task.retry_policy.max_backoff_ms"),
    ],
)
def test_retry_policy_invalid(policy, field):
    assert rejected(task(retry_policy=policy)).field == field


def test_retry_policy_fields_left_unset_come_from_the_type_then_the_server_default():
    # Given
    server = RetryPolicy(initial_backoff_ms=100, max_backoff_ms=10_000, multiplier=3.0)
    by_type = {("billing", "invoice.send"): RetryPolicy(initial_backoff_ms=200, max_backoff_ms=20_000)}
    limits = Limits(retry_policies=RetryPolicies(server_default=server, by_type=by_type))

    # When
    own = check(task(retry_policy=pb.RetryPolicy(multiplier=1.5)), limits).retry_policy
    typed = check(task(), limits).retry_policy
    other = check(task(task_type="other"), limits).retry_policy

    # Then
    assert own == RetryPolicy(initial_backoff_ms=200, max_backoff_ms=20_000, multiplier=1.5)
    assert typed == by_type[("billing", "invoice.send")]
    assert other == server


def test_retry_policy_tiered_schedule_is_kept():
    v = check(task(retry_policy=pb.RetryPolicy(schedule_ms=[30_000, 120_000, 600_000, 3_600_000])))
    assert v.retry_policy.schedule_ms == (30_000, 120_000, 600_000, 3_600_000)


# ---- Keys ----

@pytest.mark.parametrize("name", ["trace_id", "unique_key"])
def test_trace_id_or_unique_key_too_long(name):
    e = rejected(task(**{name: "k" * 129}))
    assert e.field == f"task.{name}" and "129 characters" in e.problem


# ---- Batches ----

def test_batch_empty():
    with pytest.raises(InvalidArgument) as e:
        validate_batch([], now=NOW, limits=LIMITS)
    assert e.value.field == "tasks"


def test_batch_over_the_maximum():
    with pytest.raises(InvalidArgument) as e:
        validate_batch([task()] * 3, now=NOW, limits=Limits(max_batch=2))
    assert e.value.field == "tasks" and "3 tasks" in e.value.problem


def test_batch_of_exactly_the_maximum_is_fine():
    assert len(validate_batch([task()] * 1000, now=NOW, limits=LIMITS)) == 1000


def test_batch_item_errors_name_the_index():
    # Given: items 0-2 good, item 3 bad, item 4 bad too
    tasks = [task() for _ in range(3)] + [task(payload_json="[]"), task(namespace="")]

    # When
    with pytest.raises(InvalidArgument) as e:
        validate_batch(tasks, now=NOW, limits=LIMITS)

    # Then: the first problem, by its index
    assert e.value.field == "tasks[3].payload_json"


def test_batch_is_validated_whole_even_when_only_the_last_item_is_bad():
    tasks = [task() for _ in range(999)] + [task(priority=9)]
    with pytest.raises(InvalidArgument) as e:
        validate_batch(tasks, now=NOW, limits=LIMITS)
    assert e.value.field == "tasks[999].priority"


def test_batch_with_a_repeated_task_id():
    tasks = [task(task_id="a"), task(task_id="b"), task(task_id="a")]
    with pytest.raises(InvalidArgument) as e:
        validate_batch(tasks, now=NOW, limits=LIMITS)
    assert e.value.field == "tasks[2].task_id" and "tasks[0]" in e.value.problem


def test_good_batch_keeps_order_and_one_created_at():
    # Given
    tasks = [task(task_type=f"t{i}", delay_ms=i + 1) for i in range(5)]

    # When
    valid = validate_batch(tasks, now=NOW, limits=LIMITS, new_id=_ids())

    # Then
    assert [v.task_type for v in valid] == [f"t{i}" for i in range(5)]
    assert [v.task_id for v in valid] == [f"gen-{i}" for i in range(1, 6)]
    assert {v.created_at for v in valid} == {NOW_MS}


# ---- Times and limits helpers ----

def test_rfc3339():
    assert rfc3339(NOW) == "2030-01-02T03:04:05.678Z"
    plus8 = dt.timezone(dt.timedelta(hours=8))
    assert rfc3339(dt.datetime(2030, 1, 2, 8, 0, tzinfo=plus8)) == "2030-01-02T00:00:00.000Z"


def test_parse_rfc3339_round_trips_format():
    assert parse_rfc3339(rfc3339(NOW)) == NOW_MS


def test_limits_are_checked_on_construction():
    with pytest.raises(ValueError, match="default_max_retries"):
        Limits(max_retries_limit=2, default_max_retries=3)
    with pytest.raises(ValueError, match="max_batch"):
        Limits(max_batch=0)
    with pytest.raises(ValueError, match="default_timeout_ms"):
        Limits(default_timeout_ms=10, max_timeout_ms=5)
