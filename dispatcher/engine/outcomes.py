"""What one finished attempt does next: pure decisions, no I/O.

succeeded, retry at T (on the Kafka path when T is within the route threshold, else
on the MySQL path), or dead-lettered when retries ran out or the failure is not
retryable. The events of the attempt go with the decision, so the store writes the
row and its history in one transaction.
"""
from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable

from dispatcher.base.clock import ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.engine.due import KAFKA, MYSQL, Due
from dispatcher.log.codec import queued_message
from dispatcher.log.interface import OutMessage
from dispatcher.policy.retry import RetryPolicy, next_delay_ms
from dispatcher.store import records as r
from taskring.task import TaskState
from taskring.wire import pb


@dataclasses.dataclass(slots=True)
class Decision:
    write: r.OutcomeWrite
    """The row's next state and the attempt's events."""
    message: OutMessage | None
    """The retry's Kafka message, for a retry on the Kafka path."""
    kind: str
    """The outcome's kind (succeeded, retryable_failure, ...), for the metrics."""
    retry_path: str | None = None
    """KAFKA or MYSQL for a retry, else None."""


_KIND_NAMES = {number: name.removeprefix("OUTCOME_KIND_").lower() for name, number in pb.OutcomeKind.items()}


def outcome_kind(o: pb.Outcome) -> str:
    """succeeded, retryable_failure, ...: the outcome's kind as the metrics and events name it."""
    name = _KIND_NAMES.get(o.kind)
    return name if name is not None else pb.OutcomeKind.Name(o.kind).removeprefix("OUTCOME_KIND_").lower()


@dataclasses.dataclass(frozen=True, slots=True)
class DecideParams:
    """The three settings a decision reads, and nothing else of the node's config."""
    node_id: str
    route_threshold_ms: int
    """A retry due within this goes back to Kafka; later, to MySQL."""
    topic_for: Callable[[int], str]
    """The Kafka topic of a priority."""

    def __post_init__(self) -> None:
        positive(self, "route_threshold_ms")


MAX_RESULT_BYTES = 65_536
"""The most a handler's result (for the tasks that depend on it) may take, as JSON."""


def _bad_result(result_json: str) -> str | None:
    """Why a handler's result cannot be kept (None when it can): the SDKs check it too, and
    an executor that did not is refused here rather than stored."""
    size = len(result_json.encode())
    if size > MAX_RESULT_BYTES:
        return f"result_json: {size} bytes, more than {MAX_RESULT_BYTES}"
    try:
        json.loads(result_json)
    except ValueError as exc:
        return f"result_json: not JSON ({exc})"
    return None


def decide(d: Due, o: pb.Outcome, now_ms: int, params: DecideParams, rng: random.Random) -> Decision:
    """Turn one outcome into the row's next state (and a Kafka message for a short retry)."""
    node = params.node_id
    now = ms_to_datetime(now_ms)
    # The executor's clock says when it started; keep that inside [dispatched, now] on
    # this node's clock, so that the history stays in order across the two machines.
    started = ms_to_datetime(max(d.dispatched_ms, min(o.started_at_ms, now_ms))) if o.started_at_ms else None
    events = [r.Event(d.task.task_id, TaskState.RUNNING, started, node, d.attempt)] if started else []
    kind = outcome_kind(o)
    task_id, slot, attempt = d.task.task_id, d.slot, d.attempt
    # A task of a graph whose end its dependents wait for (the envelope says so: no read), or
    # one that added tasks to its graph while it ran (they wait for it: AddGraphTasks).
    in_graph = d.task.HasField("graph")
    notify = in_graph and (d.task.graph.has_dependents or o.added_graph_tasks)
    bad_result = _bad_result(o.result_json) if notify and o.result_json else None
    if o.kind == pb.OUTCOME_KIND_SUCCEEDED and bad_result is None:
        events.append(r.Event(task_id, TaskState.SUCCEEDED, now, node, attempt))
        return Decision(r.OutcomeWrite(task_id, slot, attempt, result=r.SUCCEEDED, events=tuple(events),
                                       notify=notify, result_json=o.result_json if notify else None), None, kind)
    if bad_result is not None:
        kind = "non_retryable_failure"
    error = bad_result or o.error or kind
    # A result its dependents cannot be given is the handler's defect: running it again
    # would return the same.
    retryable = o.kind != pb.OUTCOME_KIND_NON_RETRYABLE_FAILURE and bad_result is None
    if retryable and attempt <= d.task.max_retries:
        policy = RetryPolicy.from_pb(d.task.retry_policy, RetryPolicy())
        delay = next_delay_ms(policy, attempt, rng)
        due_ms = now_ms + delay
        short = delay <= params.route_threshold_ms
        detail = f"{kind}: {error}; retry in {delay} ms"
        events.append(r.Event(task_id, TaskState.RETRY_WAIT, now, node, attempt, detail, o.stack_trace or None))
        message = None
        if short:
            message = queued_message(params.topic_for(d.task.priority), d.task, slot, attempt + 1, due_ms)
        write = r.OutcomeWrite(task_id, slot, attempt, result=r.RETRY, events=tuple(events),
                               retry_status=r.ENQUEUED if short else r.PENDING, retry_at=ms_to_datetime(due_ms),
                               error=error, stack_trace=o.stack_trace or None, in_graph=in_graph,
                               # A failed attempt is what `continue` dependents wait for.
                               notify=in_graph and d.task.graph.continue_dependents)
        return Decision(write, message, kind, KAFKA if short else MYSQL)
    events.append(r.Event(task_id, TaskState.FAILED, now, node, attempt, f"{kind}: {error}", o.stack_trace or None))
    events.append(r.Event(task_id, TaskState.DEAD_LETTERED, now, node, attempt,
                          "non-retryable failure" if not retryable else f"gave up after {attempt} attempts"))
    write = r.OutcomeWrite(task_id, slot, attempt, result=r.DEAD_LETTERED, events=tuple(events), error=error,
                           stack_trace=o.stack_trace or None, notify=notify)
    return Decision(write, None, kind)
