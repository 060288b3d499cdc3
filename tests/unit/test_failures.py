"""Failures grouped by class and message shape: one outage's dead letters are one group."""
from __future__ import annotations

from dispatcher.base.failures import classify


def test_values_in_the_message_do_not_split_a_group():
    a = classify("ConnectionError: cannot reach payments-7.internal:8443 after 3 tries (order 1234)")
    b = classify("ConnectionError: cannot reach payments-2.internal:9443 after 5 tries (order 99)")
    assert a.group == b.group and a.error_class == "ConnectionError"
    assert a.shape == "cannot reach <n> after <n> tries (order <n>)"


def test_quoted_values_and_uuids_become_placeholders():
    a = classify("KeyError: 'sku-19' not in catalog 0191c8d4-5f2e-7abc-8def-0123456789ab")
    b = classify('KeyError: "other" not in catalog 0191c8d4-aaaa-7abc-8def-0123456789ab')
    assert a.group == b.group
    assert a.shape == "'…' not in catalog <uuid>"


def test_another_class_or_another_message_is_another_group():
    base = classify("ValueError: card declined")
    assert classify("TypeError: card declined").group != base.group
    assert classify("ValueError: card expired").group != base.group


def test_dotted_classes_are_kept_and_texts_without_a_class_use_the_fallback():
    assert classify("payments.CardDeclined: no funds").error_class == "payments.CardDeclined"
    f = classify("handler exceeded its timeout of 500 ms and was cancelled", "timed_out")
    assert f.error_class == "timed_out" and f.shape.startswith("handler exceeded its timeout of <n> ms")
    assert classify("note: lower-case prefix is not a class", "failure").error_class == "failure"
    assert classify(None, "failure").shape == ""
    assert len(classify("X: " + "word " * 500).shape) <= 200
