"""Run one delivery to an outcome: the executor's hot path.

Design note.

- Every delivery gets a deadline of ``received + timeout_ms`` on the monotonic
  clock (the loop's clock too). The dispatcher's RPC deadline is the batch's
  longest task timeout plus a margin (5 s), so counting from receipt, not from
  when a handler starts, keeps the outcome inside the time the dispatcher is
  still listening. A delivery that
  waits for a free slot past its deadline is reported TIMED_OUT without running.
- `max_in_flight` is one asyncio.Semaphore shared by all Execute calls. A slot
  is held for as long as the handler really runs.
- Async handlers run on the executor's loop under ``asyncio.timeout_at``; at the
  deadline they are cancelled and reported TIMED_OUT.
- Sync handlers run on up to `max_in_flight` daemon threads (`_threads.py`). At the deadline
  the attempt is reported TIMED_OUT (with the thread's current stack, which
  says where it hung), but a Python thread cannot be killed: the handler runs
  on, and keeps its slot, until it returns. That is deliberate. The slot
  accounts for a thread that is really busy, so hung handlers reduce this
  executor's capacity visibly (see `in_flight`) instead of piling up threads
  without bound. Handlers that may hang should honour `ctx.remaining_s()`.
- Per-task cost is kept to one asyncio future and one timer for a sync
  handler (no `asyncio.wait_for` wrapper task), and nothing beyond the handler's
  own coroutine for an async one.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taskring._threads import DaemonThreads
from taskring.context import TaskContext
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


class DeliveryRunner:
    """Runs deliveries on the executor's loop; create and use it on that loop only."""

    def __init__(self, handlers: Mapping[str, Handler], max_in_flight: int) -> None:
        self._handlers = dict(handlers)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._pool = DaemonThreads(max_in_flight, "taskring-handler")
        self._loop = asyncio.get_running_loop()
        self.in_flight = 0
        """Handlers running now, including timed-out sync handlers that have not returned."""
        self.waiting = 0
        """Deliveries waiting for a free slot."""

    def close(self) -> None:
        """Stop taking sync work; threads of hung handlers are left to finish on their own."""
        self._pool.close()

    async def run(self, d: pb.Delivery, received: float) -> pb.Outcome:
        """One delivery to one outcome. Never raises, except when cancelled."""
        task = d.task
        try:
            handler = self._handlers.get(task.task_type)
            if handler is None:
                now = _now_ms()
                return pb.Outcome(
                    task_id=task.task_id, attempt=d.attempt, kind=NO_HANDLER,
                    error=f"no handler for task type {task.task_type!r} in this executor",
                    started_at_ms=now, finished_at_ms=now,
                )
            timeout_ms = d.timeout_ms or (task.timeout_ms if task.HasField("timeout_ms") else FALLBACK_TIMEOUT_MS)
            deadline = received + timeout_ms / 1000.0
            try:
                ctx = _context(d, deadline)
            except ValueError as e:  # a payload the server should never have accepted
                now = _now_ms()
                return pb.Outcome(
                    task_id=task.task_id, attempt=d.attempt, kind=NON_RETRYABLE,
                    error=f"payload_json: {e}", started_at_ms=now, finished_at_ms=now,
                )
            if not await self._acquire(deadline):
                now = _now_ms()
                return pb.Outcome(
                    task_id=task.task_id, attempt=d.attempt, kind=TIMED_OUT,
                    error=f"deadline of {timeout_ms} ms passed while waiting for a free slot "
                    f"(max_in_flight is reached)",
                    started_at_ms=now, finished_at_ms=now,
                )
            late = _too_late_to_start(d, received)
            if late:
                # Past what the dispatcher's lease allowed: its slot may have a new owner
                # by now, which runs the attempt itself. Not run, not spent.
                self._release()
                return pb.Outcome(task_id=task.task_id, attempt=d.attempt, kind=NOT_STARTED, error=late,
                                  started_at_ms=0, finished_at_ms=_now_ms())
            if handler.is_async:
                return await self._run_async(handler, ctx, d, timeout_ms)
            return await self._run_sync(handler, ctx, d, timeout_ms)
        except Exception as e:  # a bug here must not fail the whole batch
            log.exception("executor failed to run task %s", task.task_id)
            error, trace = _describe(e)
            now = _now_ms()
            return pb.Outcome(task_id=task.task_id, attempt=d.attempt, kind=RETRYABLE,
                              error=f"executor error: {error}", stack_trace=trace,
                              started_at_ms=now, finished_at_ms=now)

    async def _acquire(self, deadline: float) -> bool:
        if not self._slots.locked():
            await self._slots.acquire()  # does not suspend when a slot is free
        else:
            self.waiting += 1
            try:
                async with asyncio.timeout_at(deadline):
                    await self._slots.acquire()
            except TimeoutError:
                return False
            finally:
                self.waiting -= 1
        self.in_flight += 1
        return True

    def _release(self) -> None:
        self.in_flight -= 1
        self._slots.release()

    async def _run_async(self, handler: Handler, ctx: TaskContext, d: pb.Delivery, timeout_ms: int) -> pb.Outcome:
        started = _now_ms()
        kind: pb.OutcomeKind = SUCCEEDED
        error, trace = "", ""
        try:
            cm = asyncio.timeout_at(ctx.deadline)
            try:
                async with cm:
                    await handler.fn(ctx)
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
        return pb.Outcome(task_id=ctx.task_id, attempt=d.attempt, kind=kind, error=error,
                          stack_trace=trace, started_at_ms=started, finished_at_ms=_now_ms())

    async def _run_sync(self, handler: Handler, ctx: TaskContext, d: pb.Delivery, timeout_ms: int) -> pb.Outcome:
        loop = self._loop
        fut: asyncio.Future[pb.Outcome] = loop.create_future()
        started_box: list[int] = []
        thread_box: list[int] = []

        def work() -> None:  # in a pool thread
            thread_box.append(threading.get_ident())
            started = _now_ms()
            started_box.append(started)
            kind: pb.OutcomeKind = SUCCEEDED
            error, trace = "", ""
            try:
                result = handler.fn(ctx)
                if inspect.isawaitable(result):  # e.g. a lambda around a coroutine function
                    if inspect.iscoroutine(result):
                        result.close()
                    raise TypeError("the handler returned an awaitable instead of running; "
                                    "register an `async def` so the executor awaits it")
            except BaseException as e:  # a SystemExit in a handler is still a failed task
                kind = _failure_kind(e)
                error, trace = _describe(e)
            outcome = pb.Outcome(task_id=ctx.task_id, attempt=d.attempt, kind=kind, error=error,
                                 stack_trace=trace, started_at_ms=started, finished_at_ms=_now_ms())
            try:
                loop.call_soon_threadsafe(self._sync_done, fut, outcome)
            except RuntimeError:  # the loop is closed: the executor stopped while we ran
                pass

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
                task_id=ctx.task_id, attempt=d.attempt, kind=TIMED_OUT,
                error=f"handler exceeded its timeout of {timeout_ms} ms (a sync handler cannot be "
                "stopped; its thread runs on)",
                stack_trace=_trim(trace), started_at_ms=started_box[0] if started_box else now,
                finished_at_ms=now,
            ))

        try:
            self._pool.submit(work)
        except RuntimeError:  # pool shut down: the executor is stopping
            self._release()
            now = _now_ms()
            return pb.Outcome(task_id=ctx.task_id, attempt=d.attempt, kind=RETRYABLE,
                              error="executor is stopping", started_at_ms=now, finished_at_ms=now)
        timer = loop.call_at(ctx.deadline, on_deadline)
        try:
            return await fut
        finally:
            timer.cancel()

    def _sync_done(self, fut: asyncio.Future[pb.Outcome], outcome: pb.Outcome) -> None:
        self._release()
        if not fut.done():
            fut.set_result(outcome)


def _too_late_to_start(d: pb.Delivery, received: float) -> str:
    """Why the delivery must not start now ("" when it may): the end of the dispatcher's
    lease, as time since arrival (start_within_ms) or as an instant (start_by_unix_ms)."""
    if d.start_within_ms and time.monotonic() - received > d.start_within_ms / 1000.0:
        return f"not started within {d.start_within_ms} ms of arrival (max_in_flight is reached)"
    if d.start_by_unix_ms and _now_ms() >= d.start_by_unix_ms:
        return f"not started by {d.start_by_unix_ms} (unix ms): the dispatcher's lease had run out when it arrived"
    return ""


def _context(d: pb.Delivery, deadline: float) -> TaskContext:
    task = d.task
    payload = json.loads(task.payload_json) if task.payload_json else {}
    if not isinstance(payload, dict):
        raise ValueError("not a JSON object")
    created_at = None
    if task.created_at:
        try:
            created_at = datetime.fromisoformat(task.created_at)
        except ValueError:
            created_at = None  # informational only; never fail a task over it
    return TaskContext(
        task_id=task.task_id,
        namespace=task.namespace,
        task_type=task.task_type,
        payload=payload,
        attempt=d.attempt,
        epoch=d.epoch,
        trace_id=task.trace_id,
        deadline=deadline,
        payload_version=task.payload_version,
        created_at=created_at,
    )
