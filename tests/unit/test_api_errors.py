"""The task API's answers to bad input, over a real gRPC server (dispatcher.api.service.serve_api)
on the in-memory store.

Given bytes that are no protobuf, or a string field that is not UTF-8 (proto3 requires
it), when they reach any TaskService method, then the answer is INVALID_ARGUMENT naming
the field or the message, and nothing is written. Given a huge value in any field an
error quotes, then the answer has the right code every time and a message of bounded
size (an unbounded one passes gRPC's 8 KB trailer limit and reaches the client as
RESOURCE_EXHAUSTED "Stream removed").
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from dispatcher.admin.routes import HTTP_STATUS_OF_CODE
from dispatcher.api.service import TaskApi, serve_api, status_code
from dispatcher.api.validation import Limits
from dispatcher.base.config import NodeConfig
from dispatcher.base.errors import MESSAGE_CHARS, TaskAlreadyFinished, TaskNotFound, quote
from dispatcher.base.metrics import NodeMetrics
from dispatcher.log.interface import OutMessage
from dispatcher.params import api_params
from dispatcher.store import errors as store_errors
from dispatcher.store.memory import MemoryTaskStore
from taskring.wire import pb

SERVICE = "/taskring.v1.TaskService/"
# Longest message an answer may carry: the field path, the problem and a quoted value
# cut to errors.QUOTE_CHARS, far below the 8 KB metadata limit.
MAX_MESSAGE = 400
HUGE = 10_000


class RecordingProducer:
    """Stands in for Kafka: keeps what the API produced, accepts everything."""

    def __init__(self) -> None:
        self.sent: list[OutMessage] = []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    async def send(self, messages: Sequence[OutMessage]) -> list[str | None]:
        self.sent.extend(messages)
        return [None] * len(messages)


class Served:
    def __init__(self, store: MemoryTaskStore, producer: RecordingProducer, channel: grpc.Channel):
        self.store = store
        self.producer = producer
        self.channel = channel

    def raw(self, method: str, data: bytes) -> bytes:
        """Send `data` as the request of `method`, unserialized, and return the raw answer."""
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(
            SERVICE + method, request_serializer=None, response_deserializer=None)
        return call(data, timeout=10)

    def assert_nothing_written(self) -> None:
        assert self.store.rows() == {}
        assert self.producer.sent == []


@pytest.fixture
def served():
    store, producer = MemoryTaskStore(), RecordingProducer()
    api = TaskApi(params=api_params(NodeConfig.from_env({}, cluster=False)), store=store, producer=producer,
                  metrics=NodeMetrics(), limits=Limits())
    port: concurrent.futures.Future[int] = concurrent.futures.Future()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def run() -> None:
        try:
            server, bound = await serve_api(api, "127.0.0.1", 0)
        except BaseException as exc:
            port.set_exception(exc)
            raise
        port.set_result(bound)
        await stop.wait()
        await server.stop(grace=None)

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), name="api-server", daemon=True)
    thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port.result(timeout=10)}")
    try:
        yield Served(store, producer, channel)
    finally:
        channel.close()
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        assert not thread.is_alive(), "the API server did not stop"
        loop.close()


def rejected(served: Served, method: str, data: bytes) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        served.raw(method, data)
    return info.value


def details_of(err: grpc.RpcError) -> str:
    """The error's details; every answer here carries some."""
    details = err.details()
    assert details is not None, f"{err.code()} without details"
    return details


def task_bytes(**fields) -> bytes:
    base: dict[str, Any] = dict(namespace="billing", task_type="invoice.send", payload_json='{"n": 1}')
    base.update(fields)
    return pb.Task(**base).SerializeToString()


def with_bad_utf8(message: bytes, marker: str) -> bytes:
    """`message` with the value `marker` of one string field replaced, byte for byte, by
    invalid UTF-8 (the Python protobuf library refuses to build such a message)."""
    encoded = marker.encode()
    assert message.count(encoded) == 1
    return message.replace(encoded, b"\xff" * len(encoded))


def length_delimited(number: int, body: bytes) -> bytes:
    assert len(body) < 128  # one-byte length varint
    return bytes([number << 3 | 2, len(body)]) + body


# ---- bytes that do not parse ----

GARBAGE = {
    "truncated length": b"\x0a\x10abc",               # field 1 claims 16 bytes, 3 follow
    "wire type 7": b"\x0f\x00",                          # no such wire type
    "endless varint": b"\x08" + b"\xff" * 11,            # a varint longer than 10 bytes
    "field number 0": b"\x00\x01",
}


@pytest.mark.parametrize("method", ["Submit", "SubmitBatch", "Cancel", "GetTask"])
@pytest.mark.parametrize("garbage", list(GARBAGE), ids=list(GARBAGE))
def test_bytes_that_are_no_protobuf_are_an_invalid_argument(served, method, garbage):
    err = rejected(served, method, GARBAGE[garbage])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert details_of(err).startswith("request: is not a valid protobuf message"), err.details()
    served.assert_nothing_written()


def test_a_malformed_task_inside_a_submit_is_named(served):
    # SubmitRequest.task holds 3 bytes: a tag for namespace that claims 5 bytes of string.
    err = rejected(served, "Submit", length_delimited(1, b"\x12\x05a"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert details_of(err).startswith("task: is not a valid protobuf message"), err.details()
    served.assert_nothing_written()


# ---- strings that are not UTF-8 ----

@pytest.mark.parametrize("field", ["namespace", "task_type", "payload_json", "task_id", "unique_key",
                                   "trace_id", "schedule_time"])
def test_a_submitted_string_that_is_not_utf8_is_named(served, field):
    values = {"payload_json": '{"marker": 1}', "schedule_time": "2030-01-02T03:04:05Z"}
    marker = values.get(field, "marker")
    task = with_bad_utf8(task_bytes(**{field: marker}), marker)
    err = rejected(served, "Submit", length_delimited(1, task))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert details_of(err).startswith(f"task.{field}: is not valid UTF-8"), err.details()
    served.assert_nothing_written()


def test_a_batch_names_the_task_whose_string_is_not_utf8(served):
    good = task_bytes(task_id="good-1")
    bad = with_bad_utf8(task_bytes(task_id="bad-2", namespace="marker"), "marker")
    err = rejected(served, "SubmitBatch", length_delimited(1, good) + length_delimited(1, bad))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert details_of(err).startswith("tasks[1].namespace: is not valid UTF-8"), err.details()
    served.assert_nothing_written()  # the good task of the batch neither


@pytest.mark.parametrize("method", ["Cancel", "GetTask"])
def test_a_task_id_that_is_not_utf8_is_named(served, method):
    err = rejected(served, method, length_delimited(1, b"t-\xc3\x28"))  # \xc3 must be followed by 80-bf
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == "task_id: is not valid UTF-8 (byte 2 of the string)"
    served.assert_nothing_written()


def test_good_bytes_still_submit(served):
    """The server parses requests itself now: a well-formed one is accepted as before."""
    answer = pb.SubmitResponse.FromString(served.raw("Submit", length_delimited(1, task_bytes(task_id="ok-1"))))
    assert answer.task_id == "ok-1" and answer.state == pb.TASK_STATE_QUEUED
    assert list(served.store.rows()) == ["ok-1"]
    got = pb.GetTaskResponse.FromString(served.raw("GetTask", pb.GetTaskRequest(task_id="ok-1").SerializeToString()))
    assert got.task.namespace == "billing"


# ---- huge values ----

def assert_bounded(err: grpc.RpcError, code: grpc.StatusCode, starts: str) -> None:
    details = err.details()
    assert err.code() == code, (err.code(), details and details[:200])
    assert details is not None, f"{err.code()} without details"
    assert details.startswith(starts), details[:200]
    assert len(details) <= MAX_MESSAGE, len(details)


@pytest.mark.parametrize("method", ["GetTask", "Cancel"])
def test_a_huge_unknown_task_id_is_not_found_every_time(served, method):
    request = pb.GetTaskRequest(task_id="x" * HUGE).SerializeToString()  # Cancel's is the same message shape
    for _ in range(20):  # the trailer overflow was intermittent
        err = rejected(served, method, request)
        assert_bounded(err, grpc.StatusCode.NOT_FOUND, "task 'xxx")
        assert f"({HUGE} characters)" in details_of(err)


HUGE_FIELDS: dict[str, dict[str, Any]] = {
    "task_id": dict(task_id="x" * HUGE),
    "namespace": dict(namespace="n" * HUGE),
    "task_type": dict(task_type="t" * HUGE),
    "unique_key": dict(unique_key="k" * HUGE),
    "trace_id": dict(trace_id="r" * HUGE),
    "schedule_time": dict(schedule_time="2030" * HUGE),
    "payload_json": dict(payload_json='{"a": ' + "x" * HUGE + "}"),
    "payload_json.duplicate_key": dict(payload_json=json.dumps({"k" * HUGE: 1})[:-1] + ", " +
                                       json.dumps("k" * HUGE) + ": 2}"),
}


@pytest.mark.parametrize("name", list(HUGE_FIELDS))
def test_a_huge_value_is_rejected_with_a_bounded_message(served, name):
    field = name.split(".")[0]
    submit = pb.SubmitRequest(task=pb.Task(**{**dict(namespace="billing", task_type="invoice.send"),
                                              **HUGE_FIELDS[name]})).SerializeToString()
    batch = pb.SubmitBatchRequest(tasks=[pb.Task(namespace="billing", task_type="invoice.send"),
                                         pb.SubmitRequest.FromString(submit).task]).SerializeToString()
    for _ in range(5):
        assert_bounded(rejected(served, "Submit", submit), grpc.StatusCode.INVALID_ARGUMENT, f"task.{field}: ")
        assert_bounded(rejected(served, "SubmitBatch", batch), grpc.StatusCode.INVALID_ARGUMENT,
                       f"tasks[1].{field}: ")
    served.assert_nothing_written()


def test_the_error_tree_quotes_task_ids_cut_short():
    for err in (TaskNotFound("y" * HUGE), TaskAlreadyFinished("y" * HUGE, "succeeded")):
        assert len(str(err)) < 200 and f"({HUGE} characters)" in str(err)
    assert str(TaskNotFound("t-1")) == "task 't-1' not found"  # short ids are quoted whole, as before


def test_quote_cuts_to_the_limit_and_says_the_length():
    assert quote("abc") == "'abc'"
    assert quote("a" * 81) == repr("a" * 80) + "... (81 characters)"
    assert quote("a" * 10, limit=3) == "'aaa'... (10 characters)"


def test_an_unexpected_error_is_answered_cut_short(served):
    """An error outside the tree keeps grpc's own answer (UNKNOWN), but its text, which may
    carry the request in full, is cut to a bounded size."""
    served.store.fail("get_task", exc=RuntimeError("z" * HUGE))
    err = rejected(served, "GetTask", pb.GetTaskRequest(task_id="t-1").SerializeToString())
    assert err.code() == grpc.StatusCode.UNKNOWN
    assert details_of(err).startswith("Unexpected <class 'RuntimeError'>: zzz"), details_of(err)[:200]
    assert len(details_of(err)) <= MESSAGE_CHARS + 40 and details_of(err).endswith(" characters)")


# ---- a task id that is another namespace's task ----

def test_a_task_id_of_another_namespace_is_refused_and_nothing_is_written(served):
    """Given a dead-lettered task `shared-1` in namespace billing, when a caller submits
    into namespace shipping with the same id (alone, then inside a batch), then each
    call is ALREADY_EXISTS naming the id's field, says nothing of the other task, and
    writes nothing: no duplicate=true with the billing task's state."""
    served.raw("Submit", pb.SubmitRequest(task=pb.Task(
        task_id="shared-1", namespace="billing", task_type="invoice.send", payload_json="{}")).SerializeToString())
    served.store.rows()["shared-1"]  # written
    sent_before = len(served.producer.sent)
    alone = rejected(served, "Submit", pb.SubmitRequest(task=pb.Task(
        task_id="shared-1", namespace="shipping", task_type="label.print", payload_json="{}")).SerializeToString())
    batch = rejected(served, "SubmitBatch", pb.SubmitBatchRequest(tasks=[
        pb.Task(task_id="fresh-1", namespace="shipping", task_type="label.print", payload_json="{}"),
        pb.Task(task_id="shared-1", namespace="shipping", task_type="label.print", payload_json="{}"),
    ]).SerializeToString())
    assert (alone.code(), batch.code()) == (grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.ALREADY_EXISTS)
    assert details_of(alone).startswith("task.task_id: 'shared-1'")
    assert details_of(batch).startswith("tasks[1].task_id: 'shared-1'")
    for text in (details_of(alone), details_of(batch)):
        assert "billing" not in text and "invoice" not in text and "queued" not in text
    assert set(served.store.rows()) == {"shared-1"}  # fresh-1 was not written
    assert len(served.producer.sent) == sent_before


def test_the_same_id_in_its_own_namespace_is_still_a_duplicate(served):
    request = pb.SubmitRequest(task=pb.Task(task_id="again-1", namespace="billing", task_type="invoice.send",
                                            payload_json="{}")).SerializeToString()
    first = pb.SubmitResponse.FromString(served.raw("Submit", request))
    second = pb.SubmitResponse.FromString(served.raw("Submit", request))
    assert (first.duplicate, second.duplicate, second.task_id) == (False, True, "again-1")


@pytest.mark.parametrize(("error", "code", "http"), [
    (store_errors.RuleNotFound("ns/x"), grpc.StatusCode.NOT_FOUND, 404),
    (store_errors.RuleExists("ns/x"), grpc.StatusCode.ALREADY_EXISTS, 409),
    (store_errors.NotDeadLettered("t", "pending"), grpc.StatusCode.FAILED_PRECONDITION, 409),
    (store_errors.UniqueKeyHeld("t", "k", "h", "pending"), grpc.StatusCode.FAILED_PRECONDITION, 409),
    (store_errors.ChangedSinceRead("t"), grpc.StatusCode.ABORTED, 409),
    (store_errors.JobNotFound(1), grpc.StatusCode.NOT_FOUND, 404),
    (store_errors.JobStateConflict(1, "done", "pause"), grpc.StatusCode.FAILED_PRECONDITION, 409),
    (TaskNotFound("t"), grpc.StatusCode.NOT_FOUND, 404),
], ids=lambda x: type(x).__name__ if isinstance(x, Exception) else None)
def test_the_stores_refusals_get_their_status_at_the_edges_only(error, code, http):
    assert (status_code(error), HTTP_STATUS_OF_CODE.get(status_code(error))) == (code, http)


def test_no_store_module_speaks_grpc():
    store = Path(__file__).parents[2] / "dispatcher" / "store"
    assert [p.name for p in store.glob("*.py") if "grpc" in p.read_text()] == []
