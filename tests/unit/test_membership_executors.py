"""Parsing an executor's advertisement: one bad znode must not take a namespace down."""
from __future__ import annotations

import json

import pytest

from membership import ExecutorInstance
from membership.executors import parse_executor

GOOD = {"address": "10.1.2.3:50051", "namespace": "billing", "task_types": ["charge", "refund"],
        "max_in_flight": 32, "pid": 4242}


def data(**changes):
    doc = dict(GOOD)
    for k, v in changes.items():
        if v is KeyError:
            doc.pop(k)
        else:
            doc[k] = v
    return json.dumps(doc).encode()


def test_a_good_advertisement():
    assert parse_executor("billing", "i-1", data()) == ExecutorInstance(
        "i-1", "10.1.2.3:50051", ("charge", "refund"), 32)


def test_namespace_and_pid_may_be_left_out():
    assert parse_executor("billing", "i-1", data(namespace=KeyError, pid=KeyError)) is not None


@pytest.mark.parametrize("raw", [
    b"not json",
    b"[1, 2]",
    data(address="no-port"),
    data(address="host:99999"),
    data(address=KeyError),
    data(namespace="mail"),
    data(task_types="charge"),
    data(task_types=["charge", ""]),
    data(max_in_flight=0),
    data(max_in_flight=True),
    data(max_in_flight="8"),
])
def test_malformed_advertisements_are_left_out(raw, caplog):
    assert parse_executor("billing", "i-1", raw) is None
    assert "/executors/billing/i-1" in caplog.text


def test_ipv6_address():
    instance = parse_executor("billing", "i-1", data(address="[::1]:50051"))
    assert instance is not None, "a well-formed advertisement parses"
    assert instance.address == "[::1]:50051"
