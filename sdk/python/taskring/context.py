"""What a handler is told about the task it runs.

A `TaskContext` is built once per delivery from the wire message and handed to
the handler as its only argument. It carries ``(task_id, attempt, epoch)`` so a
handler can make its effects idempotent: at-least-once delivery means the same
attempt can arrive twice (e.g. after a dispatcher handoff), and the epoch tells
a stale dispatcher's delivery from the current owner's.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from taskring._heartbeat import Beat, Link

if TYPE_CHECKING:   # graph.py imports the client's envelope code; a context needs neither to run
    from taskring.graph import AddedTasks, Additions

MAX_RESULT_BYTES = 65_536
"""The most a handler's result may take as JSON (the server refuses more)."""


@dataclass(frozen=True, slots=True)
class ParentResult:
    """How a task that this one depends on ended, and what its handler returned."""

    key: str
    task_id: str
    outcome: str
    """``"succeeded"``, ``"failed"``, ``"ignored"`` (failed under ``on_failure("ignore")``),
    ``"skipped"`` or ``"cancelled"``."""
    error: str
    """Its last error, for one that failed."""
    result_json: str
    """Its handler's return value as JSON ("" when it returned None or failed)."""
    truncated: bool = False
    """The results of this task's parents came to more than 1 MiB, and this one's was left
    out of the delivery: read it with ``Client.get_graph(..., with_results=True)``."""

    @property
    def result(self) -> Any:
        """The value its handler returned (decoded), or None."""
        if self.truncated:
            raise LookupError(f"the result of {self.key!r} was not delivered: the parents' results are over 1 MiB;"
                              " read it with Client.get_graph(namespace, graph_id, with_results=True)")
        return json.loads(self.result_json) if self.result_json else None


class GraphPart:
    """The graph part of a delivery, decoded on first use."""

    __slots__ = ("_decoded", "_raw", "_truncated", "added", "client", "graph_id", "keep_result")

    def __init__(self, keep_result: bool, raw: Sequence[Any], truncated: bool, graph_id: str = "",
                 client: Any = None):
        self.keep_result = keep_result
        self._raw = raw
        self._truncated = truncated
        self._decoded: dict[str, ParentResult] | None = None
        self.graph_id = graph_id
        self.client = client
        """The executor's Client (Executor(client=...)), for add_tasks; None: none given."""
        self.added = False
        """The handler added tasks (ctx.add_tasks): they wait for its end, and may want its result."""

    def parents(self) -> Mapping[str, ParentResult]:
        if self._decoded is None:
            self._decoded = {p.key: ParentResult(p.key, p.task_id, p.outcome, p.error, p.result_json,
                                                 self._truncated and not p.result_json and p.outcome == "succeeded")
                             for p in self._raw}
        return self._decoded


def result_json_of(value: Any) -> tuple[str, str]:
    """(the JSON of a handler's return value, "") or ("", why it cannot be kept)."""
    if value is None:
        return "", ""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        return "", f"result: the handler's return value is not JSON ({e})"
    size = len(text.encode())
    if size > MAX_RESULT_BYTES:
        return "", f"result: {size} bytes as JSON, more than {MAX_RESULT_BYTES}"
    return text, ""


@dataclass(frozen=True, slots=True)
class TaskContext:
    """One attempt of one task, as seen by its handler."""

    task_id: str
    namespace: str
    task_type: str
    payload: dict[str, Any]
    """The submitted JSON object, decoded. Mutating it changes nothing upstream."""
    attempt: int
    """1 for the first run, 2 for the first retry, ..."""
    epoch: int
    """Ownership epoch of the task's slot at dispatch (the fencing token)."""
    trace_id: str
    deadline: float
    """When this attempt times out, on the `time.monotonic()` clock.

    Counted from when the executor received the delivery, so time spent waiting
    for a free slot (max_in_flight) is part of the attempt's budget.
    """
    payload_version: int
    created_at: datetime | None
    """When the task was accepted (UTC), as recorded by the server."""
    _beat: Beat | Link | None = field(default=None, repr=False, compare=False)
    """Where heartbeats go: the attempt's own (its type heartbeats), its stream's, or None
    (a delivery of an Execute call, with no stream to send on)."""
    _graph: GraphPart | None = field(default=None, repr=False, compare=False)
    """For a task of a graph: whether its result is wanted, and its parents' ends."""

    # ---- graphs (taskring.graph, docs/graphs.md) ----

    @property
    def parent_results(self) -> Mapping[str, ParentResult]:
        """For a task of a graph, how each task it depends on ended, with the value its handler
        returned, by key ({} for any other task)."""
        return self._graph.parents() if self._graph is not None else {}

    @property
    def keeps_result(self) -> bool:
        """Whether the value this handler returns is kept and handed to the tasks that depend
        on it (it must then be JSON, at most 64 KiB); otherwise the return value is ignored."""
        return self._graph is not None and (self._graph.keep_result or self._graph.added)

    def add_tasks(self, additions: Additions, *, also_before: Sequence[str] = ()) -> AddedTasks:
        """Add tasks to this task's graph while it runs (a fan-out known only now: one task per
        order line). Each new task runs once this task has ended (it is an implicit parent of
        each: if this task fails for good, they are skipped) and after the tasks it names; the
        waiting tasks named in `also_before` (by key) also wait for every new one, so a fan-in
        after this task counts them. A new task's key in the graph is ``"<this key>:<key>"``.

        Idempotent by key: a later attempt of this task adding the same keys adds nothing twice,
        so add before doing what cannot be repeated. Blocks for one call to the server (from an
        ``async def`` handler: ``await asyncio.to_thread(ctx.add_tasks, ...)``). Needs the
        executor's client (``Executor(..., client=Client(...))``). Raises `InvalidArgument`
        naming the field, or `FailedPrecondition` when this attempt no longer runs or an
        `also_before` task no longer waits."""
        graph = self._graph
        if graph is None:
            raise RuntimeError("add_tasks: this task is not a task of a graph")
        if graph.client is None:
            raise RuntimeError("add_tasks: the executor has no client to call the server with:"
                               " Executor(namespace, ..., client=Client(target))")
        graph.added = True   # set first: a call that fails halfway may still have added some
        return graph.client.add_graph_tasks(self.namespace, graph.graph_id, self.task_id, self.attempt, additions,
                                            also_before=also_before)

    # ---- heartbeats (docs/limits.md, "Heartbeats") ----

    def heartbeat(self, details: Any = None) -> None:
        """Tell the dispatcher this attempt is alive, with `details` (any JSON value, at most
        64 KiB) to resume from: the task's next attempt, if there is one, finds the last
        details sent in `heartbeat_details`. None keeps the last ones.

        For a task type with a heartbeat timeout, call it more often than that: an attempt
        whose heartbeats stop for that long is given up as timed out and retried. It does not
        wait for the dispatcher's answer; once an answer says the task was cancelled, or the
        attempt was given up, an async handler is interrupted at its next ``await`` and this
        raises `taskring.errors.TaskStopped`. Raises `taskring.errors.InvalidHeartbeat` for
        details that are not JSON or too large (nothing is sent). A delivery that came by an
        Execute call rather than a Work stream has nowhere to send: nothing is sent.
        """
        beat = self._beat
        if beat is None:
            return
        if isinstance(beat, Link):
            beat = beat.adopt(self.task_id, self.attempt)
            object.__setattr__(self, "_beat", beat)
        beat.beat(details)

    @property
    def heartbeat_timeout_ms(self) -> int:
        """The heartbeat timeout of the task's type (0: it need not heartbeat)."""
        return self._beat.timeout_ms if isinstance(self._beat, Beat) else 0

    @property
    def heartbeat_details(self) -> Any:
        """The details of the last heartbeat an earlier attempt of this task sent (decoded
        JSON), or None. Given to types with a heartbeat timeout."""
        beat = self._beat
        if isinstance(beat, Beat) and beat.last_details_json:
            return json.loads(beat.last_details_json)
        return None

    @property
    def stopped(self) -> str | None:
        """"cancelled" or "lost" once the dispatcher told this attempt to stop, else None."""
        return self._beat.stopped if isinstance(self._beat, Beat) else None

    def remaining_s(self) -> float:
        """Seconds left before the deadline (negative once passed).

        Pass it on as the timeout of the calls the handler makes, so they give up
        before the attempt is declared TIMED_OUT.
        """
        return self.deadline - time.monotonic()
