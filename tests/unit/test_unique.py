"""Unique-key rules per task type (dispatcher/policy/unique.py) and their place in the policies file."""
from __future__ import annotations

import pytest

from dispatcher.api.validation import Limits, validate_task
from dispatcher.base.errors import InvalidArgument
from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
from dispatcher.policy.unique import InvalidUniqueRule, UniqueRule
from taskring.wire import pb


def test_a_template_is_rendered_from_payload_fields_nested_or_not():
    rule = UniqueRule("order:{order_id}/{customer.id}")
    assert rule.fields == ["order_id", "customer.id"]
    assert rule.render({"order_id": 12, "customer": {"id": "c-9"}}, "f") == "order:12/c-9"


@pytest.mark.parametrize("payload, problem", [
    ({}, "has no field 'order_id'"),
    ({"order_id": None}, "must be a string or an integer"),
    ({"order_id": True}, "must be a string or an integer"),
    ({"order_id": 1.5}, "must be a string or an integer"),
    ({"order_id": {"x": 1}}, "must be a string or an integer"),
])
def test_a_payload_that_cannot_build_the_key_is_refused_on_the_field_given(payload, problem):
    with pytest.raises(InvalidArgument, match=problem) as info:
        UniqueRule("order:{order_id}").render(payload, "tasks[3].payload_json")
    assert info.value.field == "tasks[3].payload_json"


@pytest.mark.parametrize("template, ttl, field, problem", [
    ("", 0, "unique_key", "must not be empty"),
    ("order", 0, "unique_key", "names no payload field"),
    ("order:{id}:{x", 0, "unique_key", "brace"),
    ("order:{id}}", 0, "unique_key", "brace"),
    ("order:{id}", -1, "unique_ttl_ms", "must be >= 0"),
])
def test_a_bad_rule_is_refused_naming_its_field(template, ttl, field, problem):
    with pytest.raises(InvalidUniqueRule, match=problem) as info:
        UniqueRule(template, ttl)
    assert info.value.field == field


def test_the_policies_file_declares_keys_per_task_type_beside_the_retry_policy():
    policies = parse_retry_policies('{"shop/cancel": {"unique_key": "order:{order_id}", "unique_ttl_ms": 5000,'
                                    ' "schedule_ms": [1000]}, "shop/other": {"multiplier": 3}}')
    assert policies.unique_by_type == {("shop", "cancel"): UniqueRule("order:{order_id}", 5000)}
    assert policies.for_type("shop", "cancel").schedule_ms == (1000,)


@pytest.mark.parametrize("text, field", [
    ('{"shop/cancel": {"unique_ttl_ms": 5}}', "shop/cancel.unique_ttl_ms"),
    ('{"shop/cancel": {"unique_key": 5}}', "shop/cancel.unique_key"),
    ('{"shop/cancel": {"unique_key": "plain"}}', "shop/cancel.unique_key"),
    ('{"default": {"unique_key": "o:{id}"}}', "default.unique_key"),
])
def test_a_bad_rule_in_the_policies_file_names_its_key_and_field(text, field):
    with pytest.raises(InvalidRetryPolicy) as info:
        parse_retry_policies(text)
    assert info.value.field == field


def _valid(limits: Limits, **fields):
    import datetime as dt
    return validate_task(pb.Task(namespace="shop", task_type="cancel", **fields), now=dt.datetime.now(dt.UTC),
                         limits=limits)


def test_validation_fills_the_key_from_the_type_and_lets_the_task_own_key_win():
    limits = Limits(retry_policies=parse_retry_policies(
        '{"shop/cancel": {"unique_key": "order:{order_id}", "unique_ttl_ms": 60000}}'))
    v = _valid(limits, payload_json='{"order_id": 7}')
    assert (v.unique_key, v.unique_ttl_ms, v.to_pb().unique_key, v.to_pb().unique_ttl_ms) == ("order:7", 60000,
                                                                                            "order:7", 60000)
    own = _valid(limits, payload_json='{"order_id": 7}', unique_key="mine", unique_ttl_ms=5)
    assert (own.unique_key, own.unique_ttl_ms) == ("mine", 5)
    plain = _valid(Limits(), unique_key="k")
    assert (plain.unique_key, plain.unique_ttl_ms, plain.to_pb().HasField("unique_ttl_ms")) == ("k", 0, False)


@pytest.mark.parametrize("fields, problem", [
    ({"unique_ttl_ms": 5}, "needs unique_key"),
    ({"unique_key": "k", "unique_ttl_ms": 0}, "must be in"),
    ({"unique_key": "k", "unique_ttl_ms": 91 * 24 * 3600 * 1000}, "must be in"),
])
def test_a_bad_unique_ttl_is_refused_naming_the_field(fields, problem):
    with pytest.raises(InvalidArgument, match=problem) as info:
        _valid(Limits(), **fields)
    assert info.value.field == "task.unique_ttl_ms"
