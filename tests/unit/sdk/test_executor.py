"""The executor over a real gRPC channel, without ZooKeeper (zk_hosts=None).

Given an executor with handlers that succeed, fail in each way, block, or are
missing, when a dispatcher-like caller sends Execute batches, then each delivery
gets the outcome kind the wire contract defines, and at most max_in_flight
handlers run at once.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from harness.wait import wait_until
from taskring import Executor, NonRetryableError, RetryableError, TaskContext
from taskring.wire import pb, pb_grpc

K = pb.OutcomeKind


def delivery(task_type: str, task_id: str, *, timeout_ms: int = 5000, payload: str = '{"n":1}',
             attempt: int = 1) -> pb.Delivery:
    return pb.Delivery(
        task=pb.Task(task_id=task_id, namespace="shop", task_type=task_type, payload_json=payload,
                     trace_id=f"trace-{task_id}", payload_version=3, created_at="2030-01-01T00:00:00.000Z"),
        attempt=attempt, epoch=42, timeout_ms=timeout_ms,
    )


class Running:
    """Counts handlers running now and the most ever seen at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so a blocked sync handler never outlives its test."""
    event = threading.Event()
    yield event
    event.set()


def call(ex: Executor, *deliveries: pb.Delivery) -> dict[str, pb.Outcome]:
    with grpc.insecure_channel(ex.address) as channel:
        resp = pb_grpc.ExecutorServiceStub(channel).Execute(
            pb.ExecuteRequest(deliveries=deliveries, dispatcher_node="test"), timeout=30)
    assert len(resp.outcomes) == len(deliveries)
    return {o.task_id: o for o in resp.outcomes}


def test_each_outcome_kind(make_executor, release):
    ex = make_executor()
    seen: list[TaskContext] = []

    @ex.handler("ok")
    def ok(ctx: TaskContext) -> None:
        seen.append(ctx)

    @ex.handler("ok_async")
    async def ok_async(ctx: TaskContext) -> None:
        await asyncio.sleep(0)

    @ex.handler("retry")
    def retry(ctx):
        raise RetryableError("gateway down")

    @ex.handler("bug")
    def bug(ctx):
        raise ValueError("bad value")

    @ex.handler("bug_async")
    async def bug_async(ctx):
        raise KeyError("missing")

    @ex.handler("fatal")
    def fatal(ctx):
        raise NonRetryableError("no such customer")

    @ex.handler("fatal_async")
    async def fatal_async(ctx):
        raise NonRetryableError("no such order")

    @ex.handler("hang")
    def hang(ctx):
        release.wait()

    @ex.handler("hang_async")
    async def hang_async(ctx):
        await asyncio.Event().wait()

    ex.start()
    before = time.time() * 1000
    out = call(
        ex,
        delivery("ok", "1", attempt=2), delivery("ok_async", "2"), delivery("retry", "3"), delivery("bug", "4"),
        delivery("bug_async", "5"), delivery("fatal", "6"), delivery("fatal_async", "7"),
        delivery("hang", "8", timeout_ms=200), delivery("hang_async", "9", timeout_ms=200),
        delivery("nobody_handles_this", "10"),
    )
    after = time.time() * 1000

    kinds = {tid: K.Name(o.kind) for tid, o in out.items()}
    assert kinds == {
        "1": "OUTCOME_KIND_SUCCEEDED",
        "2": "OUTCOME_KIND_SUCCEEDED",
        "3": "OUTCOME_KIND_RETRYABLE_FAILURE",
        "4": "OUTCOME_KIND_RETRYABLE_FAILURE",
        "5": "OUTCOME_KIND_RETRYABLE_FAILURE",
        "6": "OUTCOME_KIND_NON_RETRYABLE_FAILURE",
        "7": "OUTCOME_KIND_NON_RETRYABLE_FAILURE",
        "8": "OUTCOME_KIND_TIMED_OUT",
        "9": "OUTCOME_KIND_TIMED_OUT",
        "10": "OUTCOME_KIND_NO_HANDLER",
    }
    assert out["1"].attempt == 2 and out["1"].error == "" and out["1"].stack_trace == ""
    assert out["3"].error == "RetryableError: gateway down"
    assert out["4"].error == "ValueError: bad value"
    assert "in bug" in out["4"].stack_trace and "Traceback" in out["4"].stack_trace
    assert "in bug_async" in out["5"].stack_trace
    assert out["6"].error == "NonRetryableError: no such customer"
    assert "200 ms" in out["8"].error
    assert "in hang" in out["8"].stack_trace  # where the stuck thread is
    assert "in hang_async" in out["9"].stack_trace  # where the coroutine was cancelled
    assert "nobody_handles_this" in out["10"].error
    for o in out.values():
        assert before - 1 <= o.started_at_ms <= o.finished_at_ms <= after + 1
    assert out["8"].finished_at_ms >= before + 200 - 2  # not before its deadline (from receipt)
    assert out["9"].finished_at_ms >= before + 200 - 2

    (ctx,) = seen
    assert (ctx.task_id, ctx.namespace, ctx.task_type, ctx.attempt, ctx.epoch) == ("1", "shop", "ok", 2, 42)
    assert ctx.payload == {"n": 1} and ctx.payload_version == 3 and ctx.trace_id == "trace-1"
    assert ctx.created_at is not None and ctx.created_at.year == 2030
    assert 0 < ctx.deadline - time.monotonic() < 5


def test_a_handlers_own_timeout_error_is_an_ordinary_failure(make_executor):
    ex = make_executor()

    @ex.handler("t")
    async def t(ctx):
        raise TimeoutError("upstream took too long")

    ex.start()
    out = call(ex, delivery("t", "1"))
    assert out["1"].kind == K.OUTCOME_KIND_RETRYABLE_FAILURE
    assert out["1"].error == "TimeoutError: upstream took too long"


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_max_in_flight_holds_across_concurrent_batches(make_executor, release, flavour):
    ex = make_executor(max_in_flight=3)
    running = Running()

    if flavour == "sync":
        @ex.handler("work")
        def work(ctx):
            running.enter()
            try:
                release.wait()
            finally:
                running.leave()
    else:
        @ex.handler("work")
        async def work(ctx):
            running.enter()
            try:
                while not release.is_set():
                    await asyncio.sleep(0.005)
            finally:
                running.leave()

    ex.start()
    with grpc.insecure_channel(ex.address) as channel:
        stub = pb_grpc.ExecutorServiceStub(channel)
        calls = [
            stub.Execute.future(pb.ExecuteRequest(deliveries=[delivery("work", f"{b}-{i}") for i in range(5)]),
                                timeout=30)
            for b in range(2)
        ]
        wait_until(lambda: ex.in_flight == 3 and ex.waiting == 7, what="3 running and 7 waiting")
        assert running.now == 3
        release.set()
        outcomes = [o for c in calls for o in c.result().outcomes]
    assert len(outcomes) == 10
    assert all(o.kind == K.OUTCOME_KIND_SUCCEEDED for o in outcomes)
    assert running.peak == 3
    wait_until(lambda: ex.in_flight == 0 and ex.waiting == 0, what="all slots free")


def test_a_timed_out_sync_handler_keeps_its_slot_until_it_returns(make_executor, release):
    ex = make_executor(max_in_flight=1)

    @ex.handler("hang")
    def hang(ctx):
        release.wait()

    @ex.handler("ok")
    def ok(ctx):
        pass

    ex.start()
    assert call(ex, delivery("hang", "1", timeout_ms=100))["1"].kind == K.OUTCOME_KIND_TIMED_OUT
    assert ex.in_flight == 1  # the thread still runs

    out = call(ex, delivery("ok", "2", timeout_ms=100))["2"]
    assert out.kind == K.OUTCOME_KIND_TIMED_OUT
    assert "waiting for a free slot" in out.error

    release.set()
    wait_until(lambda: ex.in_flight == 0, what="the hung thread to return its slot")
    assert call(ex, delivery("ok", "3"))["3"].kind == K.OUTCOME_KIND_SUCCEEDED


def test_a_delivery_that_cannot_start_within_start_within_ms_is_not_run(make_executor, release):
    ex = make_executor(max_in_flight=1)
    ran: list[str] = []
    busy = threading.Event()

    @ex.handler("hold")
    def hold(ctx):
        busy.set()
        release.wait(5)

    @ex.handler("ok")
    def ok(ctx):
        ran.append(ctx.task_id)

    ex.start()
    # Given the only slot busy until `release` is set
    holder = threading.Thread(target=call, args=(ex, delivery("hold", "h", timeout_ms=10_000)))
    holder.start()
    assert busy.wait(5)
    # When a delivery that must start within 100 ms waits behind it for longer
    d = delivery("ok", "late", timeout_ms=10_000)
    d.start_within_ms = 100
    waiter = threading.Timer(0.5, release.set)
    waiter.start()
    out = call(ex, d)["late"]
    holder.join(10)
    # Then it was never run, and says so (the dispatcher gives it back unspent)
    assert out.kind == K.OUTCOME_KIND_NOT_STARTED and out.started_at_ms == 0
    assert ran == []
    # While one that starts in time runs as usual
    d = delivery("ok", "on-time")
    d.start_within_ms = 5_000
    assert call(ex, d)["on-time"].kind == K.OUTCOME_KIND_SUCCEEDED and ran == ["on-time"]


def test_a_delivery_arriving_after_its_start_by_instant_is_not_run(make_executor):
    import time as time_
    ex = make_executor()
    ran: list[str] = []

    @ex.handler("ok")
    def ok(ctx):
        ran.append(ctx.task_id)

    ex.start()
    # A batch held up on its way (its dispatcher froze as it sent it): the lease it
    # carries had run out before it arrived, however long start_within_ms says.
    late = delivery("ok", "late")
    late.start_within_ms = 60_000
    late.start_by_unix_ms = int(time_.time() * 1000) - 1
    on_time = delivery("ok", "on-time")
    on_time.start_within_ms = 60_000
    on_time.start_by_unix_ms = int(time_.time() * 1000) + 60_000
    out = call(ex, late, on_time)
    assert out["late"].kind == K.OUTCOME_KIND_NOT_STARTED and "not started by" in out["late"].error
    assert out["on-time"].kind == K.OUTCOME_KIND_SUCCEEDED and ran == ["on-time"]


def test_a_sync_wrapper_around_a_coroutine_is_reported_not_silently_dropped(make_executor):
    ex = make_executor()

    async def real(ctx):
        pass

    ex.add_handler("t", lambda ctx: real(ctx))
    ex.start()
    out = call(ex, delivery("t", "1"))["1"]
    assert out.kind == K.OUTCOME_KIND_RETRYABLE_FAILURE
    assert "async def" in out.error


def test_a_payload_that_is_not_an_object_is_not_retried(make_executor):
    ex = make_executor()
    ex.add_handler("t", lambda ctx: None)
    ex.start()
    out = call(ex, delivery("t", "1", payload="[1,2]"))["1"]
    assert out.kind == K.OUTCOME_KIND_NON_RETRYABLE_FAILURE
    assert out.error.startswith("payload_json")


def test_a_large_batch_of_no_op_tasks(make_executor):
    ex = make_executor(max_in_flight=16)
    count = 0
    lock = threading.Lock()

    @ex.handler("sync")
    def sync(ctx):
        nonlocal count
        with lock:
            count += 1

    @ex.handler("async")
    async def async_(ctx):
        nonlocal count
        with lock:
            count += 1

    ex.start()
    out = call(ex, *(delivery("sync" if i % 2 else "async", str(i)) for i in range(2000)))
    assert {o.kind for o in out.values()} == {K.OUTCOME_KIND_SUCCEEDED}
    assert count == 2000


# ---- lifecycle ----


def test_stop_is_safe_before_start_and_twice(make_executor):
    ex = make_executor()
    ex.add_handler("t", lambda ctx: None)
    ex.stop()
    ex.stop()
    with pytest.raises(RuntimeError):
        ex.start()  # an executor runs once

    ex2 = make_executor()
    ex2.add_handler("t", lambda ctx: None)
    ex2.start()
    address = ex2.address
    ex2.stop(grace_s=1)
    ex2.stop(grace_s=1)
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as info:
        pb_grpc.ExecutorServiceStub(channel).Execute(pb.ExecuteRequest(), timeout=2)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_stop_drains_a_running_batch(make_executor):
    ex = make_executor()
    started = threading.Event()
    finish = threading.Event()

    @ex.handler("slow")
    def slow(ctx):
        started.set()
        finish.wait(5)

    ex.start()
    with grpc.insecure_channel(ex.address) as channel:
        pending = pb_grpc.ExecutorServiceStub(channel).Execute.future(
            pb.ExecuteRequest(deliveries=[delivery("slow", "1")]), timeout=10)
        assert started.wait(5)
        stopper = threading.Thread(target=ex.stop, kwargs={"grace_s": 5})
        stopper.start()
        finish.set()
        assert pending.result().outcomes[0].kind == K.OUTCOME_KIND_SUCCEEDED
        stopper.join(10)
        assert not stopper.is_alive()


def test_registration_rules(make_executor):
    ex = make_executor()
    with pytest.raises(RuntimeError):
        _ = ex.address
    with pytest.raises(RuntimeError, match="no handlers"):
        ex.start()
    ex.add_handler("t", lambda ctx: None)
    with pytest.raises(ValueError, match="already"):
        ex.add_handler("t", lambda ctx: None)
    with pytest.raises(ValueError, match="task_type"):
        ex.add_handler("bad type!", lambda ctx: None)
    ex.start()
    with pytest.raises(RuntimeError, match="before start"):
        ex.add_handler("u", lambda ctx: None)
    host, port = ex.address.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert ex.task_types == ("t",)
    assert ex.registration_path is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"max_in_flight": 0}, "max_in_flight"), ({"instance_id": "a/b"}, "instance_id"), ({"port": 70000}, "port")],
)
def test_bad_configuration_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Executor("shop", zk_hosts=None, **kwargs)
    with pytest.raises(ValueError, match="namespace"):
        Executor("Shop!", zk_hosts=None)


def test_serve_forever_returns_after_stop_from_another_thread(make_executor):
    ex = make_executor()
    ex.add_handler("t", lambda ctx: None)
    t = threading.Thread(target=ex.serve_forever, kwargs={"grace_s": 1})
    t.start()

    def started() -> bool:
        try:
            return bool(ex.address)
        except RuntimeError:
            return False

    wait_until(started, what="the executor to start")
    ex.stop(grace_s=1)
    t.join(10)
    assert not t.is_alive()


# The address is printed only once serve_forever has put its SIGTERM handler in place: a
# SIGTERM sent between start() and serve_forever() would meet Python's default handler and
# kill the process, which is not what this test is about.
SERVE_SCRIPT = """
import signal, threading, time
from taskring import Executor
ex = Executor("shop", zk_hosts=None)
ex.add_handler("t", lambda ctx: None)
ex.start()
def announce():
    while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        time.sleep(0.005)
    print(ex.address, flush=True)
threading.Thread(target=announce, daemon=True).start()
ex.serve_forever(grace_s=1)
print("stopped", flush=True)
"""


def test_serve_forever_stops_cleanly_on_sigterm():
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None  # stdout=PIPE
        address = proc.stdout.readline().strip()
        assert address.startswith("127.0.0.1:")
        assert call_address(address)  # it serves
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert proc.stdout.read().strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def call_address(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        resp = pb_grpc.ExecutorServiceStub(channel).Execute(
            pb.ExecuteRequest(deliveries=[delivery("t", "1")]), timeout=10)
    return resp.outcomes[0].kind == K.OUTCOME_KIND_SUCCEEDED
