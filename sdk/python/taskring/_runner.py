"""Run the deliveries of one Execute call or Work message to outcomes: the executor's hot path.

Design note.

- Every delivery gets a deadline of ``received + timeout_ms`` on the monotonic
  clock (the loop's clock too). The dispatcher's RPC deadline is the batch's
  longest task timeout plus a margin (5 s), so counting from receipt, not from
  when a handler starts, keeps the outcome inside the time the dispatcher is
  still listening. A delivery that waits for a free slot past its deadline is
  reported TIMED_OUT without running. An Execute reply waits for every delivery of
  the batch (the wire contract: "returns once every task in it has an outcome");
  a Work stream (`_stream.py`) sends each outcome once it is known.
- `max_in_flight` is a count of free slots shared by all Execute calls, with a
  FIFO queue of waiters once it runs out. A slot is held for as long as the
  handler really runs. (Not an asyncio.Semaphore: taking a free slot must not
  need an ``await``, see the next point.)
- The batch is one plain loop. An async handler that can start at once (a free
  slot, inside its lease) has its first step run right there, with no Task: most
  handlers of a hot path either finish in that step or are cheap to hand on, and
  a Task, a gather and a timeout scope per task cost several times the handler.
  A handler finishing in its first step cannot be interrupted by a timeout anyway
  (a timeout cancels at an ``await``), so it needs none. While it runs,
  ``asyncio.current_task()`` is a *host* Task made for the purpose, not the
  Execute call's task: a handler that enters ``asyncio.timeout``, a TaskGroup or
  an aiohttp request in its first step captures the current task, and must capture
  the one that goes on running it. (The swap uses asyncio's `_enter_task` /
  `_leave_task`, the hooks documented for third-party task implementations.) When
  a handler suspends, its host takes the rest of it over (under
  ``asyncio.timeout_at`` of its deadline: at the deadline it is cancelled and
  reported TIMED_OUT) and a fresh host stands in for the next ones; so a Task and
  a timeout scope are paid only by handlers that really wait. Each handler runs in
  its own copy of the context, as in a Task of its own.
- Clock: one monotonic read per delivery, after it is dealt with; the wall-clock
  times of the outcomes are derived from it and one wall-clock read per batch. A
  handler's start time is the end of the previous delivery's handling, which is
  when it started, to well under a millisecond; the lease checks use it too.
- Deliveries that must wait for a slot each get a Task (it waits, then runs the
  handler under its own timeout scope).
- Sync handlers run on up to `max_in_flight` daemon threads (`_threads.py`), one
  future and one timer each; finished ones are handed back to the loop in bulk
  (one wake-up for all that finish before the loop runs). At the deadline the attempt is reported TIMED_OUT
  (with the thread's current stack, which says where it hung), but a Python
  thread cannot be killed: the handler runs on, and keeps its slot, until it
  returns. That is deliberate. The slot accounts for a thread that is really
  busy, so hung handlers reduce this executor's capacity visibly (see
  `in_flight`) instead of piling up threads without bound. Handlers that may
  hang should honour `ctx.remaining_s()`.
"""
from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import json
import logging
import sys
import threading
import time
import traceback
from asyncio.tasks import _enter_task, _leave_task
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import CoroutineType
from typing import Any

from taskring._heartbeat import Beat, Link
from taskring._threads import DaemonThreads
from taskring.context import GraphPart, TaskContext, result_json_of
from taskring.errors import NonRetryableError
from taskring.wire import pb

log = logging.getLogger("taskring.executor")

FALLBACK_TIMEOUT_MS = 300_000
"""Deadline when neither the delivery nor the task carries one (a dispatcher always should)."""

MAX_TRACE_CHARS = 16_384
"""Stack traces are stored with the task's history; keep the innermost frames of long ones."""

HandlerFn = Callable[[TaskContext], Any] | Callable[[TaskContext], Awaitable[Any]]

SUCCEEDED = pb.OUTCOME_KIND_SUCCEEDED
RETRYABLE = pb.OUTCOME_KIND_RETRYABLE_FAILURE
NON_RETRYABLE = pb.OUTCOME_KIND_NON_RETRYABLE_FAILURE
TIMED_OUT = pb.OUTCOME_KIND_TIMED_OUT
NO_HANDLER = pb.OUTCOME_KIND_NO_HANDLER
NOT_STARTED = pb.OUTCOME_KIND_NOT_STARTED


@dataclass(frozen=True, slots=True)
class Handler:
    """A registered handler and whether it is a coroutine function."""

    fn: HandlerFn
    is_async: bool

    @classmethod
    def of(cls, fn: HandlerFn) -> Handler:
        # The __call__ method itself is wanted here (an object with an `async def __call__`),
        # not a test of whether fn is callable.
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )
        return cls(fn, is_async)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _trim(trace: str) -> str:
    if len(trace) <= MAX_TRACE_CHARS:
        return trace
    return "...(truncated)\n" + trace[-MAX_TRACE_CHARS:]


def _describe(exc: BaseException) -> tuple[str, str]:
    """(error, stack_trace) of an exception, for an Outcome."""
    return f"{type(exc).__name__}: {exc}", _trim("".join(traceback.format_exception(exc)))


def _failure_kind(exc: BaseException) -> pb.OutcomeKind:
    return NON_RETRYABLE if isinstance(exc, NonRetryableError) else RETRYABLE


def _task_timeout_ms(task: pb.Task) -> int:
    """The task's own timeout, for a delivery that carries none."""
    return task.timeout_ms if task.HasField("timeout_ms") else FALLBACK_TIMEOUT_MS


# ---- the handler's context, built without the dataclass machinery ----

# The C scanner json.loads runs (JSONDecoder sets it up; typeshed does not list it).
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode_payload(text: str) -> dict[str, Any]:
    """The payload object. `json.loads` answers the same, but its wrappers (type checks,
    two whitespace regexes) cost twice the scan itself; it still decides every text the
    plain scan does not take whole, so results and errors stay exactly json.loads'."""
    if not text:
        return {}
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        value, end = None, -1
    if end != len(text):
        value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _parse_created_at(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None  # informational only; never fail a task over it


_new_object = object.__new__


def _slot_setter(name: str) -> Callable[[TaskContext, Any], None]:
    """The __set__ of one of TaskContext's slots (it sets even on a frozen dataclass)."""
    setter: Callable[[TaskContext, Any], None] = vars(TaskContext)[name].__set__
    return setter


_set_task_id = _slot_setter("task_id")
_set_namespace = _slot_setter("namespace")
_set_task_type = _slot_setter("task_type")
_set_payload = _slot_setter("payload")
_set_attempt = _slot_setter("attempt")
_set_epoch = _slot_setter("epoch")
_set_trace_id = _slot_setter("trace_id")
_set_deadline = _slot_setter("deadline")
_set_payload_version = _slot_setter("payload_version")
_set_created_at = _slot_setter("created_at")
_set_beat = _slot_setter("_beat")
_set_graph = _slot_setter("_graph")


def _kept_result(ctx: TaskContext, value: Any) -> tuple[str, str]:
    """(result_json, "") for a success whose result its graph keeps; ("", why) when the value
    cannot be kept (the attempt then fails, non-retryably: it would return the same again);
    ("", "") when no result is wanted."""
    graph = ctx._graph
    if graph is None or not (graph.keep_result or graph.added):
        return "", ""
    return result_json_of(value)


def _added(ctx: TaskContext) -> bool:
    """Whether the handler added tasks to its graph: its end is what they wait for."""
    return ctx._graph is not None and ctx._graph.added

def _make_context(task_id: str, namespace: str, task_type: str, payload: dict[str, Any], attempt: int,
                  epoch: int, trace_id: str, deadline: float, payload_version: int,
                  created_at: datetime | None, _beat: Beat | Link | None,
                  _graph: GraphPart | None = None) -> TaskContext:
    """TaskContext(...) by its slots: a frozen dataclass's __init__ sets each field through
    object.__setattr__, three times the cost of the rest of a no-op task's context.
    The same object (test_runner_internals pins it against the constructor and its fields)."""
    ctx = _new_object(TaskContext)
    _set_task_id(ctx, task_id)
    _set_namespace(ctx, namespace)
    _set_task_type(ctx, task_type)
    _set_payload(ctx, payload)
    _set_attempt(ctx, attempt)
    _set_epoch(ctx, epoch)
    _set_trace_id(ctx, trace_id)
    _set_deadline(ctx, deadline)
    _set_payload_version(ctx, payload_version)
    _set_created_at(ctx, created_at)
    _set_beat(ctx, _beat)
    _set_graph(ctx, _graph)
    return ctx


# ---- the rest of a handler that suspended in its first step ----


class _Resumed:
    """Awaitable: the rest of a coroutine whose first step already ran (and yielded `first`),
    each step in the handler's own context. What ``yield from`` would do, with the first
    yield replayed to the awaiting Task."""

    __slots__ = ("_context", "_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any, context: contextvars.Context) -> None:
        self._coro = coro
        self._first = first
        self._context = context

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, run = self._coro, self._context.run
        yielded = self._first
        self._first = None
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                run(coro.close)
                raise
            except BaseException as exc:  # a cancellation (the timeout's) goes to the handler
                try:
                    yielded = run(coro.throw, exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = run(coro.send, sent)
                except StopIteration as done:
                    return done.value


@dataclass(slots=True)
class _Rest:
    """What a host Task needs to run a suspended handler on to its outcome."""

    awaitable: Awaitable[Any]
    """The rest of the handler (a `_Resumed`), or the awaitable it returned."""
    close: Callable[[], Any] | None
    """Closes the handler's coroutine, if it is never run on."""
    context: contextvars.Context
    ctx: TaskContext
    timeout_ms: int
    started_ms: int
    running: bool = False


class _Host:
    """A Task that is current while handlers take their first step, and runs on the
    first one that suspends (see the design note)."""

    __slots__ = ("job", "task")

    def __init__(self, runner: DeliveryRunner, loop: asyncio.AbstractEventLoop) -> None:
        self.job: asyncio.Future[_Rest | None] = loop.create_future()
        self.task: asyncio.Task[pb.Outcome | None] = loop.create_task(runner._host(self.job))


# ---- the runner ----


class DeliveryRunner:
    """Runs deliveries on the executor's loop; create and use it on that loop only."""

    def __init__(self, handlers: Mapping[str, Handler], max_in_flight: int, client: Any = None) -> None:
        self._handlers = dict(handlers)
        self._client = client   # the executor's Client, for ctx.add_tasks (None: none given)
        self._max_in_flight = max_in_flight
        self._free = max_in_flight
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._pool = DaemonThreads(max_in_flight, "taskring-handler")
        self._sync_finished: collections.deque[tuple[asyncio.Future[pb.Outcome], asyncio.TimerHandle,
                                                      pb.Outcome]] = collections.deque()
        self._sync_flush_due = False
        self._loop = asyncio.get_running_loop()
        self._any_async = any(h.is_async for h in self._handlers.values())
        self.waiting = 0
        """Deliveries waiting for a free slot."""

    @property
    def in_flight(self) -> int:
        """Handlers running now, including timed-out sync handlers that have not returned."""
        return self._max_in_flight - self._free

    def close(self) -> None:
        """Stop taking sync work; threads of hung handlers are left to finish on their own."""
        self._pool.close()

    async def run_batch(self, deliveries: Sequence[pb.Delivery]) -> pb.ExecuteResponse:
        """Every delivery of one Execute call to one outcome each; returns once all have one.

        Never raises, except when cancelled (or when a handler raises a BaseException
        that is not an Exception, as before)."""
        response = pb.ExecuteResponse()
        pending = self.start_batch(deliveries, response)
        if pending:
            for outcome in await asyncio.gather(*pending):
                if outcome is not None:
                    response.outcomes.append(outcome)
        return response

    def start_batch(self, deliveries: Sequence[pb.Delivery], response: pb.ExecuteResponse,
                    link: Link | None = None) -> list[asyncio.Future[Any]]:
        """Start every delivery: the outcomes known at once (a handler done in its first
        step, a refusal) go into `response`; the others are the futures returned, each
        of one outcome or None (a spare host). Run from a task on the runner's loop.
        `link`: the Work stream's heartbeats (_heartbeat.py); None for an Execute call.

        The per-delivery path is written out in one loop on purpose: at a few µs a
        task, each extra Python call would be a noticeable share of it; the rarer
        paths are methods."""
        loop = self._loop
        received = time.monotonic()
        wall0_ms = time.time() * 1000.0
        add = response.outcomes.add
        pending: list[asyncio.Future[Any]] = []
        handlers = self._handlers
        monotonic = time.monotonic
        now, now_ms = received, int(wall0_ms)
        created_text, created_at = "", None
        outer = asyncio.current_task(loop)
        host = _Host(self, loop) if self._any_async else None
        if host is not None:
            if outer is not None:
                _leave_task(loop, outer)
            _enter_task(loop, host.task)
        copy_context = contextvars.copy_context
        fresh = True  # `now` was read after the previous delivery was dealt with
        try:
            for d in deliveries:
                if not fresh:
                    now = monotonic()
                    now_ms = int(wall0_ms + (now - received) * 1000.0)
                fresh = False
                task = d.task
                try:
                    task_type = task.task_type
                    handler = handlers.get(task_type)
                    if handler is None:
                        add(task_id=task.task_id, attempt=d.attempt, kind=NO_HANDLER,
                            error=f"no handler for task type {task_type!r} in this executor",
                            started_at_ms=now_ms, finished_at_ms=now_ms)
                        continue
                    timeout_ms = d.timeout_ms or _task_timeout_ms(task)
                    if task.created_at != created_text:  # a batch's tasks often share it
                        created_text = task.created_at
                        created_at = _parse_created_at(created_text)
                    beat: Beat | Link | None = link
                    if d.heartbeat_timeout_ms:   # its type heartbeats: the first goes now
                        beat = link.start(d) if link is not None else Beat(
                            None, task.task_id, d.attempt, d.heartbeat_timeout_ms, d.heartbeat_details_json)
                    try:
                        graph = (GraphPart(d.keep_result, d.parent_results, d.parent_results_truncated,
                                           task.graph.graph_id, self._client)
                                 if task.HasField("graph") else None)
                        ctx = _make_context(task.task_id, task.namespace, task_type,
                                            _decode_payload(task.payload_json), d.attempt, d.epoch, task.trace_id,
                                            received + timeout_ms / 1000.0, task.payload_version, created_at, beat,
                                            graph)
                    except ValueError as e:  # a payload the server should never have accepted
                        add(task_id=task.task_id, attempt=d.attempt, kind=NON_RETRYABLE,
                            error=f"payload_json: {e}", started_at_ms=now_ms, finished_at_ms=now_ms)
                        continue
                    if not self._free or self._waiters:
                        pending.append(loop.create_task(self._wait_then_run(handler, ctx, d, timeout_ms, received)))
                        continue
                    within, by = d.start_within_ms, d.start_by_unix_ms
                    if (within and now - received > within / 1000.0) or (by and now_ms >= by):
                        # Past what the dispatcher's lease allowed: its slot may have a new owner
                        # by now, which runs the attempt itself. Not run, not spent.
                        add(task_id=task.task_id, attempt=d.attempt, kind=NOT_STARTED,
                            error=_too_late(d, received, now, now_ms), started_at_ms=0, finished_at_ms=now_ms)
                        continue
                    self._free -= 1
                    if not handler.is_async:
                        pending.append(self._start_sync(handler, ctx, d.attempt, timeout_ms))
                        continue
                    # The first step, inline (see the design note).
                    context = copy_context()
                    try:
                        coro = handler.fn(ctx)
                        if type(coro) is CoroutineType or isinstance(coro, Coroutine):
                            rest = _Rest(_Resumed(coro, context.run(coro.send, None), context), coro.close,
                                         context, ctx, timeout_ms, now_ms)
                        else:  # an awaitable of another kind: awaited by the host from the start
                            rest = _Rest(coro, None, context, ctx, timeout_ms, now_ms)
                    except StopIteration as done:
                        # Done in its first step. No waiter can have queued meanwhile (waiters
                        # queue from their own Tasks), so the slot goes straight back.
                        self._free += 1
                        started_ms = now_ms
                        now = monotonic()
                        now_ms = int(wall0_ms + (now - received) * 1000.0)
                        fresh = True
                        result_json, bad = _kept_result(ctx, done.value) if graph is not None else ("", "")
                        add(task_id=ctx.task_id, attempt=ctx.attempt, kind=NON_RETRYABLE if bad else SUCCEEDED,
                            error=bad, result_json=result_json, started_at_ms=started_ms, finished_at_ms=now_ms,
                            added_graph_tasks=_added(ctx))
                        continue
                    except Exception as e:
                        self._free += 1
                        started_ms = now_ms
                        now = monotonic()
                        now_ms = int(wall0_ms + (now - received) * 1000.0)
                        fresh = True
                        error, trace = _describe(e)
                        add(task_id=ctx.task_id, attempt=ctx.attempt, kind=_failure_kind(e), error=error,
                            stack_trace=trace, started_at_ms=started_ms, finished_at_ms=now_ms,
                            added_graph_tasks=_added(ctx))
                        continue
                    except BaseException:
                        self._release()
                        raise
                    # It suspended: its host runs it on; a new host stands in for the next ones.
                    assert host is not None  # an async handler exists
                    self._hand_over(host, rest)
                    pending.append(host.task)
                    _leave_task(loop, host.task)
                    host = _Host(self, loop)
                    _enter_task(loop, host.task)
                except Exception as e:  # a bug here must not fail the whole batch
                    response.outcomes.append(self._executor_error(d, e, now_ms))
        finally:
            if host is not None:
                _leave_task(loop, host.task)
                if outer is not None:
                    _enter_task(loop, outer)
                if not host.job.done():
                    host.job.set_result(None)  # the spare host ends at once
        return pending

    # ---- slots ----

    async def _take_slot(self, deadline: float) -> bool:
        """Wait (in FIFO order) for a free slot until `deadline`; False if none came."""
        if self._free and not self._waiters:
            self._free -= 1
            return True
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        self.waiting += 1
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
            return True
        except BaseException as e:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot just as we gave up: pass it on
            if isinstance(e, TimeoutError):
                return False
            raise
        finally:
            self.waiting -= 1

    def _release(self) -> None:
        """Give a slot back: to the first live waiter, else to the free count."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to it, still counted in flight
                return
        self._free += 1

    # ---- async handlers ----

    def _hand_over(self, host: _Host, rest: _Rest) -> None:
        host.job.set_result(rest)
        # A host cancelled before its first step never runs its body (so never its
        # `finally`): give back what the handler held then.
        host.task.add_done_callback(lambda _t: self._abandoned(rest))

    def _abandoned(self, rest: _Rest) -> None:
        if not rest.running:
            rest.running = True
            self._release()
            if rest.close is not None:
                rest.context.run(rest.close)

    async def _host(self, job: asyncio.Future[_Rest | None]) -> pb.Outcome | None:
        rest = await job
        if rest is None:
            return None
        rest.running = True
        return await self._finish_async(rest.awaitable, rest.ctx, rest.ctx.attempt, rest.timeout_ms, rest.started_ms)

    async def _finish_async(self, awaitable: Awaitable[Any], ctx: TaskContext, attempt: int, timeout_ms: int,
                            started_ms: int) -> pb.Outcome:
        """Await an async handler (the rest of it) under its deadline; holds a slot, gives it back."""
        kind: pb.OutcomeKind = SUCCEEDED
        error, trace, result_json = "", "", ""
        try:
            cm = asyncio.timeout_at(ctx.deadline)
            try:
                async with cm:
                    if type(ctx._beat) is Beat:   # a stop from the dispatcher interrupts it here
                        ctx._beat.running_under(cm)
                    value = await awaitable
                result_json, error = _kept_result(ctx, value)
                if error:
                    kind = NON_RETRYABLE
            except TimeoutError as e:
                if not cm.expired():
                    raise  # the handler's own TimeoutError: an ordinary failure
                kind = TIMED_OUT
                error = f"handler exceeded its timeout of {timeout_ms} ms and was cancelled"
                trace = _trim("".join(traceback.format_exception(e)))
        except Exception as e:
            kind = _failure_kind(e)
            error, trace = _describe(e)
        finally:
            self._release()
        return pb.Outcome(task_id=ctx.task_id, attempt=attempt, kind=kind, error=error, result_json=result_json,
                          stack_trace=trace, started_at_ms=started_ms, finished_at_ms=_now_ms(),
                          added_graph_tasks=_added(ctx))

    async def _wait_then_run(self, handler: Handler, ctx: TaskContext, d: pb.Delivery, timeout_ms: int,
                             received: float) -> pb.Outcome:
        """A delivery that found no free slot: wait for one within its deadline, then run."""
        try:
            if not await self._take_slot(ctx.deadline):
                now = _now_ms()
                return pb.Outcome(
                    task_id=ctx.task_id, attempt=d.attempt, kind=TIMED_OUT,
                    error=f"deadline of {timeout_ms} ms passed while waiting for a free slot "
                    f"(max_in_flight is reached)",
                    started_at_ms=now, finished_at_ms=now,
                )
            now = _now_ms()
            late = _too_late(d, received, time.monotonic(), now)
            if late:
                self._release()
                return pb.Outcome(task_id=ctx.task_id, attempt=d.attempt, kind=NOT_STARTED, error=late,
                                  started_at_ms=0, finished_at_ms=now)
            if not handler.is_async:
                return await self._start_sync(handler, ctx, d.attempt, timeout_ms)
            return await self._finish_async(_call(handler.fn, ctx), ctx, d.attempt, timeout_ms, now)
        except Exception as e:  # a bug here must not fail the whole batch
            return self._executor_error(d, e, _now_ms())

    # ---- sync handlers ----

    def _start_sync(self, handler: Handler, ctx: TaskContext, attempt: int,
                    timeout_ms: int) -> asyncio.Future[pb.Outcome]:
        """Run a sync handler on a thread, holding a slot taken for it; its outcome's future."""
        loop = self._loop
        fut: asyncio.Future[pb.Outcome] = loop.create_future()
        started_box: list[int] = []
        thread_box: list[int] = []

        def work() -> None:  # in a pool thread
            thread_box.append(threading.get_ident())
            started = _now_ms()
            started_box.append(started)
            kind: pb.OutcomeKind = SUCCEEDED
            error, trace, result_json = "", "", ""
            try:
                result = handler.fn(ctx)
                if inspect.isawaitable(result):  # e.g. a lambda around a coroutine function
                    if inspect.iscoroutine(result):
                        result.close()
                    raise TypeError("the handler returned an awaitable instead of running; "
                                    "register an `async def` so the executor awaits it")
                result_json, error = _kept_result(ctx, result)
                if error:
                    kind = NON_RETRYABLE
            except BaseException as e:  # a SystemExit in a handler is still a failed task
                kind = _failure_kind(e)
                error, trace = _describe(e)
            outcome = pb.Outcome(task_id=ctx.task_id, attempt=attempt, kind=kind, error=error, result_json=result_json,
                                 stack_trace=trace, started_at_ms=started, finished_at_ms=_now_ms(),
                                 added_graph_tasks=_added(ctx))
            self._sync_finish(fut, timer, outcome)

        def on_deadline() -> None:  # on the loop
            if fut.done():
                return
            trace = ""
            if thread_box:
                frame = sys._current_frames().get(thread_box[0])
                if frame is not None:
                    trace = "handler thread still running at:\n" + "".join(traceback.format_stack(frame))
            log.warning("task %s: sync handler for %r exceeded %d ms; its thread keeps running "
                        "and keeps its slot until it returns", ctx.task_id, ctx.task_type, timeout_ms)
            now = _now_ms()
            fut.set_result(pb.Outcome(
                task_id=ctx.task_id, attempt=attempt, kind=TIMED_OUT,
                error=f"handler exceeded its timeout of {timeout_ms} ms (a sync handler cannot be "
                "stopped; its thread runs on)",
                stack_trace=_trim(trace), started_at_ms=started_box[0] if started_box else now,
                finished_at_ms=now, added_graph_tasks=_added(ctx),
            ))

        timer = loop.call_at(ctx.deadline, on_deadline)
        try:
            self._pool.submit(work)
        except RuntimeError:  # pool shut down: the executor is stopping
            timer.cancel()
            self._release()
            now = _now_ms()
            fut.set_result(pb.Outcome(task_id=ctx.task_id, attempt=attempt, kind=RETRYABLE,
                                      error="executor is stopping", started_at_ms=now, finished_at_ms=now))
        return fut

    def _sync_finish(self, fut: asyncio.Future[pb.Outcome], timer: asyncio.TimerHandle,
                     outcome: pb.Outcome) -> None:
        """In a pool thread: queue the outcome for the loop. One wake-up of the loop takes
        every outcome queued until it runs (a wake-up is a write to the loop's self-pipe,
        which costs more than a no-op handler)."""
        self._sync_finished.append((fut, timer, outcome))
        if not self._sync_flush_due:  # read after the append: see _sync_flush
            self._sync_flush_due = True
            try:
                self._loop.call_soon_threadsafe(self._sync_flush)
            except RuntimeError:  # the loop is closed: the executor stopped while we ran
                pass

    def _sync_flush(self) -> None:
        """On the loop: settle the queued sync outcomes. The flag is cleared before the
        queue is drained, so an outcome queued by a thread that still saw it set is
        drained here, and one queued later schedules another flush."""
        self._sync_flush_due = False
        finished = self._sync_finished
        while finished:
            fut, timer, outcome = finished.popleft()
            self._release()
            timer.cancel()
            if not fut.done():
                fut.set_result(outcome)

    # ---- rare outcomes ----

    @staticmethod
    def _executor_error(d: pb.Delivery, e: Exception, now_ms: int) -> pb.Outcome:
        log.exception("executor failed to run task %s", d.task.task_id, exc_info=e)
        error, trace = _describe(e)
        return pb.Outcome(task_id=d.task.task_id, attempt=d.attempt, kind=RETRYABLE,
                          error=f"executor error: {error}", stack_trace=trace,
                          started_at_ms=now_ms, finished_at_ms=now_ms)


async def _call(fn: HandlerFn, ctx: TaskContext) -> Any:
    """Call and await an async handler, so that an error in the call itself (a wrong
    signature) is the handler's failure too; its return value."""
    return await fn(ctx)


def _too_late(d: pb.Delivery, received: float, now: float, now_ms: int) -> str:
    """Why the delivery must not start now ("" when it may): the end of the dispatcher's
    lease, as time since arrival (start_within_ms) or as an instant (start_by_unix_ms)."""
    if d.start_within_ms and now - received > d.start_within_ms / 1000.0:
        return f"not started within {d.start_within_ms} ms of arrival (max_in_flight is reached)"
    if d.start_by_unix_ms and now_ms >= d.start_by_unix_ms:
        return f"not started by {d.start_by_unix_ms} (unix ms): the dispatcher's lease had run out when it arrived"
    return ""
