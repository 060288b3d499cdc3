"""Bad input over the wire to a real `taskring node --single` (MariaDB store, Kafka), raw bytes
through a gRPC channel: what the SDKs cannot send.

Given bytes that are no protobuf, or a string field that is not UTF-8, then the node answers
INVALID_ARGUMENT naming the field or the message; given an unknown 10,000-character task_id,
it answers NOT_FOUND every time, with a short message (a message quoting the whole id passed
gRPC's 8 KB trailer limit and reached the client as RESOURCE_EXHAUSTED now and then). In every
case nothing is written: the API writes a task's row before it produces the task to Kafka, so
an empty table means nothing was produced either.
"""
from __future__ import annotations

from typing import Any

import grpc
import pytest

from harness.processes import NodeProcess
from taskring.wire import pb

pytestmark = pytest.mark.integration

SERVICE = "/taskring.v1.TaskService/"
MAX_MESSAGE = 400


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "bad-input-1", single=True).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def send(node):
    channel = grpc.insecure_channel(node.target)

    def send(method: str, data: bytes) -> grpc.RpcError:
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            SERVICE + method, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as info:
            call(data, timeout=10)
        return info.value

    yield send
    channel.close()


def embedded(number: int, body: bytes) -> bytes:
    assert len(body) < 128  # one-byte length
    return bytes([number << 3 | 2, len(body)]) + body


def test_bad_bytes_are_invalid_arguments_naming_what_is_wrong(taskring_env, send):
    task = pb.Task(namespace="billing", task_type="invoice.send", payload_json='{"who": "marker"}')
    bad_payload = task.SerializeToString().replace(b"marker", b"\xffmark\xfe")
    bad_namespace = task.SerializeToString().replace(b"billing", b"bill\xc3\x28ng")
    cases = [
        ("Submit", b"\x0a\x10abc", "request: is not a valid protobuf message"),
        ("SubmitBatch", b"\xff\xff\xff", "request: is not a valid protobuf message"),
        ("GetTask", b"\x0f\x00", "request: is not a valid protobuf message"),
        ("Submit", embedded(1, bad_payload), "task.payload_json: is not valid UTF-8"),
        ("Submit", embedded(1, bad_namespace), "task.namespace: is not valid UTF-8"),
        ("SubmitBatch", embedded(1, task.SerializeToString()) + embedded(1, bad_namespace),
         "tasks[1].namespace: is not valid UTF-8"),
        ("Cancel", embedded(1, b"t-\xff"), "task_id: is not valid UTF-8"),
    ]
    for method, data, expected in cases:
        err = send(method, data)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, expected, err.code(), err.details())
        assert err.details().startswith(expected), (method, err.details())
    assert taskring_env.status_counts() == {}


@pytest.mark.parametrize("method", ["GetTask", "Cancel"])
def test_a_huge_unknown_task_id_is_not_found_with_a_short_message(taskring_env, send, method):
    request = pb.GetTaskRequest(task_id="x" * 10_000).SerializeToString()  # CancelRequest: same shape
    for _ in range(20):
        err = send(method, request)
        assert err.code() == grpc.StatusCode.NOT_FOUND, (err.code(), err.details()[:200])
        assert len(err.details()) <= MAX_MESSAGE and "(10000 characters)" in err.details()
    assert taskring_env.status_counts() == {}


def test_huge_values_are_invalid_arguments_with_short_messages(taskring_env, send):
    base: dict[str, Any] = dict(namespace="billing", task_type="invoice.send")
    for field, value in [("task_id", "x" * 10_000), ("namespace", "n" * 10_000), ("task_type", "t" * 10_000),
                         ("unique_key", "k" * 10_000), ("schedule_time", "9" * 10_000)]:
        request = pb.SubmitRequest(task=pb.Task(**{**base, field: value})).SerializeToString()
        err = send("Submit", request)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (field, err.code(), err.details()[:200])
        assert err.details().startswith(f"task.{field}: ") and len(err.details()) <= MAX_MESSAGE, err.details()
    assert taskring_env.status_counts() == {}
