"""Client and AsyncClient against an in-process fake TaskService.

Given a fake server that records each request and answers from a script,
when the client is called, then the request carries the fields the wire
contract expects and the answers (or status codes) come back as SDK types.
"""
from __future__ import annotations

import asyncio
import json
from concurrent import futures
from datetime import UTC, datetime, timedelta, timezone

import grpc
import pytest

from taskring import AsyncClient, Client, RetryPolicy, TaskSpec, TaskState, errors
from taskring.wire import pb, pb_grpc

DUE = "2030-01-02T03:04:05.678Z"


class FakeTaskService(pb_grpc.TaskServiceServicer):
    """Records requests; answers with `fail` (code, details) when set, else a plausible reply."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, object]] = []
        self.fail: tuple[grpc.StatusCode, str] | None = None
        self.get_reply: pb.GetTaskResponse | None = None
        self.overloaded = 0   # refuse this many more calls as a node that is behind would
        self.retry_after_ms: str | None = "30"

    def _maybe_fail(self, context):
        if self.overloaded > 0:
            self.overloaded -= 1
            if self.retry_after_ms is not None:
                context.set_trailing_metadata((("retry-after-ms", self.retry_after_ms),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "overloaded: dispatch is behind; nothing was written")
        if self.fail is not None:
            context.abort(*self.fail)

    def Submit(self, request, context):
        self.requests.append(("Submit", request))
        self._maybe_fail(context)
        return pb.SubmitResponse(task_id=request.task.task_id or "srv-1", state=pb.TASK_STATE_QUEUED,
                                 due_at=DUE, slot=7)

    def SubmitBatch(self, request, context):
        self.requests.append(("SubmitBatch", request))
        self._maybe_fail(context)
        return pb.SubmitBatchResponse(results=[
            pb.SubmitResponse(task_id=t.task_id or f"srv-{i}", duplicate=(i == 1),
                              state=pb.TASK_STATE_ACCEPTED, due_at=DUE, slot=i)
            for i, t in enumerate(request.tasks)
        ])

    def Cancel(self, request, context):
        self.requests.append(("Cancel", request))
        self._maybe_fail(context)
        return pb.CancelResponse(task_id=request.task_id, state=pb.TASK_STATE_CANCELLED)

    def GetTask(self, request, context):
        self.requests.append(("GetTask", request))
        self._maybe_fail(context)
        assert self.get_reply is not None
        return self.get_reply


@pytest.fixture(scope="module")
def server():
    fake = FakeTaskService()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_TaskServiceServicer_to_server(fake, srv)
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    yield fake, f"127.0.0.1:{port}"
    srv.stop(grace=None)


@pytest.fixture
def fake(server):
    fake, _ = server
    fake.requests.clear()
    fake.fail = None
    fake.get_reply = None
    fake.overloaded = 0
    fake.retry_after_ms = "30"
    return fake


@pytest.fixture
def client(server, fake):
    with Client(server[1], rpc_timeout_s=5) as c:
        yield c


def only_request(fake: FakeTaskService, method: str):
    assert [m for m, _ in fake.requests] == [method]
    return fake.requests[0][1]


# ---- submit ----


def test_submit_sends_the_envelope(client, fake):
    result = client.submit(
        "shop", "send_email", {"to": "a@b.c", "name": "Zoë", "n": [1, 2]},
        task_id="t-1", delay=timedelta(seconds=1.5), timeout=2.5, max_retries=0,
        priority="high", unique_key="order-9", trace_id="tr-1", payload_version=2,
    )
    task = only_request(fake, "Submit").task
    assert task.namespace == "shop" and task.task_type == "send_email" and task.task_id == "t-1"
    assert task.payload_json == '{"to":"a@b.c","name":"Zoë","n":[1,2]}'  # compact, UTF-8 kept
    assert task.delay_ms == 1500 and task.schedule_time == ""
    assert task.HasField("timeout_ms") and task.timeout_ms == 2500
    assert task.HasField("max_retries") and task.max_retries == 0
    assert task.priority == pb.PRIORITY_HIGH
    assert (task.unique_key, task.trace_id, task.payload_version) == ("order-9", "tr-1", 2)
    assert not task.HasField("retry_policy")

    assert result.task_id == "t-1" and result.state is TaskState.QUEUED and result.slot == 7
    assert result.due_at == datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert result.duplicate is False


def test_submit_defaults_leave_optional_fields_unset(client, fake):
    client.submit("shop", "noop")
    task = only_request(fake, "Submit").task
    assert task.task_id == "" and task.payload_json == "{}"
    assert task.delay_ms == 0 and task.schedule_time == ""
    assert not task.HasField("timeout_ms") and not task.HasField("max_retries")
    assert task.priority == pb.PRIORITY_NORMAL


@pytest.mark.parametrize(("priority", "wire"), [("low", pb.PRIORITY_LOW), ("normal", pb.PRIORITY_NORMAL),
                                                 ("high", pb.PRIORITY_HIGH)])
def test_priority_mapping(client, fake, priority, wire):
    client.submit("shop", "t", priority=priority)
    assert only_request(fake, "Submit").task.priority == wire


def test_schedule_time_keeps_its_offset(client, fake):
    sgt = timezone(timedelta(hours=8))
    at = datetime(2030, 6, 1, 0, 0, 0, 250000, tzinfo=sgt)
    client.submit("shop", "daily", schedule_time=at)
    task = only_request(fake, "Submit").task
    assert task.schedule_time == "2030-06-01T00:00:00.250000+08:00"
    assert datetime.fromisoformat(task.schedule_time) == at
    assert task.delay_ms == 0


def test_naive_schedule_time_raises_before_any_call(client, fake):
    with pytest.raises(ValueError, match="schedule_time"):
        client.submit("shop", "daily", schedule_time=datetime(2030, 6, 1))
    assert fake.requests == []


def test_delay_rounds_up_to_whole_milliseconds(client, fake):
    client.submit("shop", "t", delay=0.0005)
    assert only_request(fake, "Submit").task.delay_ms == 1


def test_retry_policies_on_the_wire(client, fake):
    client.submit("shop", "t", retry_policy=RetryPolicy(initial_backoff=0.2, max_backoff=30, multiplier=1.5))
    client.submit("shop", "t", retry_policy=RetryPolicy.tiered(10, 60, timedelta(minutes=10)))
    exp, tiered = (r.task.retry_policy for _, r in fake.requests)
    assert (exp.initial_backoff_ms, exp.max_backoff_ms, exp.multiplier) == (200, 30_000, 1.5)
    assert list(exp.schedule_ms) == []
    assert list(tiered.schedule_ms) == [10_000, 60_000, 600_000]


def test_payload_that_is_not_json_raises_before_any_call(client, fake):
    with pytest.raises(TypeError, match="payload"):
        client.submit("shop", "t", {"when": datetime.now()})
    with pytest.raises(ValueError, match="payload"):
        client.submit("shop", "t", {"x": float("nan")})
    assert fake.requests == []


# ---- batch ----


def test_submit_batch_is_one_call_in_order(client, fake):
    specs = [TaskSpec("shop", "t", {"i": i}, task_id=f"b-{i}", priority="low") for i in range(5)]
    results = client.submit_batch(specs)
    request = only_request(fake, "SubmitBatch")
    assert [t.task_id for t in request.tasks] == [f"b-{i}" for i in range(5)]
    assert [json.loads(t.payload_json) for t in request.tasks] == [{"i": i} for i in range(5)]
    assert all(t.priority == pb.PRIORITY_LOW for t in request.tasks)
    assert [r.task_id for r in results] == [f"b-{i}" for i in range(5)]
    assert [r.duplicate for r in results] == [False, True, False, False, False]
    assert all(r.state is TaskState.ACCEPTED for r in results)


def test_empty_batch_makes_no_call(client, fake):
    assert client.submit_batch([]) == []
    assert fake.requests == []


def test_batch_invalid_argument_names_the_field(client, fake):
    fake.fail = (grpc.StatusCode.INVALID_ARGUMENT, "tasks[2].payload_json: must be a JSON object")
    with pytest.raises(errors.InvalidArgument) as info:
        client.submit_batch([TaskSpec("shop", "t") for _ in range(3)])
    assert info.value.field == "tasks[2].payload_json"
    assert info.value.problem == "must be a JSON object"
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT


# ---- cancel, get ----


def test_cancel_returns_the_state(client, fake):
    assert client.cancel("t-9") is TaskState.CANCELLED
    assert only_request(fake, "Cancel").task_id == "t-9"


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.NOT_FOUND, errors.NotFound),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.FailedPrecondition),
        (grpc.StatusCode.UNAVAILABLE, errors.Unavailable),
        (grpc.StatusCode.INTERNAL, errors.RpcError),
    ],
)
def test_cancel_errors_are_mapped(client, fake, code, cls):
    fake.fail = (code, "task 't-9' cannot be cancelled")
    with pytest.raises(cls) as info:
        client.cancel("t-9")
    assert info.value.code == code
    assert "t-9" in info.value.details


def test_get_reads_state_and_history(client, fake):
    fake.get_reply = pb.GetTaskResponse(
        task=pb.Task(task_id="t-3", namespace="shop", task_type="charge", payload_json='{"amount":12}',
                     payload_version=1, timeout_ms=5000, max_retries=3, priority=pb.PRIORITY_HIGH,
                     trace_id="tr", created_at="2030-01-01T00:00:00.000Z"),
        state=pb.TASK_STATE_RETRY_WAIT, attempts=1, due_at=DUE, slot=4,
        last_error="RetryableError: gateway down", last_stack_trace="Traceback ...",
        history=[
            pb.TaskEvent(state=pb.TASK_STATE_ACCEPTED, at="2030-01-01T00:00:00.000Z", node="n1"),
            pb.TaskEvent(state=pb.TASK_STATE_RUNNING, at="2030-01-01T00:00:01.000Z", node="n1", attempt=1),
            pb.TaskEvent(state=pb.TASK_STATE_RETRY_WAIT, at="2030-01-01T00:00:02.500Z", node="n1", attempt=1,
                         detail="gateway down"),
        ],
    )
    info = client.get("t-3")
    assert only_request(fake, "GetTask").task_id == "t-3"
    assert info.state is TaskState.RETRY_WAIT and info.attempts == 1 and info.slot == 4
    assert info.payload == {"amount": 12} and info.payload_version == 1
    assert info.timeout == timedelta(seconds=5) and info.max_retries == 3 and info.priority == "high"
    assert info.last_error == "RetryableError: gateway down"
    assert [e.state for e in info.history] == [TaskState.ACCEPTED, TaskState.RUNNING, TaskState.RETRY_WAIT]
    assert info.history[2].at == datetime(2030, 1, 1, 0, 0, 2, 500000, tzinfo=UTC)
    assert (info.history[2].attempt, info.history[2].detail, info.history[2].node) == (1, "gateway down", "n1")


def test_get_unknown_task_is_not_found(client, fake):
    fake.fail = (grpc.StatusCode.NOT_FOUND, "task 'nope' not found")
    with pytest.raises(errors.NotFound):
        client.get("nope")


def test_unreachable_server_is_unavailable():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Client(f"127.0.0.1:{port}", rpc_timeout_s=5) as c, pytest.raises(errors.Unavailable):
        c.submit("shop", "t")


# ---- AsyncClient: same API, same wire ----


def test_async_client_has_the_same_methods():
    for name in ("submit", "submit_batch", "cancel", "get", "close"):
        assert asyncio.iscoroutinefunction(getattr(AsyncClient, name)), name
        assert callable(getattr(Client, name))


def test_async_client_round_trip(server, fake):
    async def scenario():
        async with AsyncClient(server[1], rpc_timeout_s=5) as c:
            r = await c.submit("shop", "t", {"a": 1}, delay=2, priority="low")
            batch = await c.submit_batch([TaskSpec("shop", "t"), TaskSpec("shop", "u")])
            state = await c.cancel(r.task_id)
            fake.fail = (grpc.StatusCode.INVALID_ARGUMENT, "tasks[1].task_type: must not be empty")
            with pytest.raises(errors.InvalidArgument) as info:
                await c.submit_batch([TaskSpec("shop", "t"), TaskSpec("shop", "x")])
            return r, batch, state, info.value

    r, batch, state, err = asyncio.run(scenario())
    assert [m for m, _ in fake.requests] == ["Submit", "SubmitBatch", "Cancel", "SubmitBatch"]
    task = fake.requests[0][1].task
    assert (task.payload_json, task.delay_ms, task.priority) == ('{"a":1}', 2000, pb.PRIORITY_LOW)
    assert r.state is TaskState.QUEUED and len(batch) == 2 and state is TaskState.CANCELLED
    assert err.field == "tasks[1].task_type"


# ---- overload (RESOURCE_EXHAUSTED from admission control)


def test_an_overloaded_submit_with_task_ids_is_retried_until_accepted(client, fake):
    fake.overloaded = 2
    results = client.submit_batch([TaskSpec("shop", "mail", task_id="t-1"), TaskSpec("shop", "mail", task_id="t-2")])
    assert [r.task_id for r in results] == ["t-1", "t-2"]
    assert [name for name, _ in fake.requests] == ["SubmitBatch"] * 3


def test_an_overloaded_submit_without_a_task_id_is_not_retried_and_carries_the_hint(client, fake):
    fake.overloaded = 1
    with pytest.raises(errors.ResourceExhausted) as refused:
        client.submit("shop", "mail")
    assert refused.value.retry_after_s == pytest.approx(0.03)
    assert "nothing was written" in refused.value.details
    assert len(fake.requests) == 1


def test_retrying_an_overload_stops_at_the_budget(server, fake):
    _, target = server
    fake.overloaded = 1000
    fake.retry_after_ms = "200"
    with Client(target, overload_retry_s=0.5) as c, pytest.raises(errors.ResourceExhausted):
        c.submit("shop", "mail", task_id="t-1")
    assert 2 <= len(fake.requests) <= 4   # tries 200-250 ms apart within half a second


def test_without_a_hint_the_client_backs_off_and_the_async_client_retries_too(server, fake):
    _, target = server
    fake.overloaded = 2
    fake.retry_after_ms = None

    async def main():
        async with AsyncClient(target) as c:
            return await c.submit("shop", "mail", task_id="t-9")
    assert asyncio.run(main()).task_id == "t-9"
    assert len(fake.requests) == 3
