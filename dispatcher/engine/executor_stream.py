"""One Work stream from this node to one executor: deliveries down, outcomes up.

The executor pool sends every chunk for an executor through its stream (when the
executor implements Work; it falls back to Execute calls otherwise). Chunks handed to
`run` in the same turn of the event loop go out in one message, whatever their task
types: the batch of one dispatch becomes one message per executor rather than one
call per type. An Execute call costs both sides several hundred µs of gRPC's work
whatever it carries; a message on an open stream about a third of that
(loadtest/executor_cost.py, `--transport`).

Each chunk waits for its own deliveries' outcomes only: the executor writes outcomes
as tasks finish, so a chunk is not held back by a slow task of another. A chunk whose
outcomes do not all come within its deadline (its longest timeout plus a margin, as
an Execute call's) returns what came; the pool turns the rest into retryable
failures, as for a call that timed out. When the stream fails or ends, every chunk
still waiting returns what it has and the error; the pool opens a new stream for the
next chunk.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

import grpc

from taskring.wire import pb, pb_grpc

log = logging.getLogger(__name__)


class StreamEnded(Exception):
    """The executor ended the stream with OK (it is stopping) before every outcome came."""


@dataclasses.dataclass(eq=False)
class _Chunk:
    """Deliveries sent together by one caller, and the outcomes that came for them."""

    expected: int
    done: asyncio.Future[None]
    outcomes: list[pb.Outcome] = dataclasses.field(default_factory=list)
    error: BaseException | None = None
    on_outcome: Callable[[pb.Outcome], None] | None = None
    """Told of each outcome as it comes, before the chunk is over (a limit's place is freed then)."""

    def add(self, outcome: pb.Outcome) -> None:
        self.outcomes.append(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        if len(self.outcomes) == self.expected and not self.done.done():
            self.done.set_result(None)

    def fail(self, error: BaseException) -> None:
        if not self.done.done():
            self.error = error
            self.done.set_result(None)


@dataclasses.dataclass
class ChunkResult:
    """The outcomes that came, and why the others did not (None: all came)."""

    outcomes: list[pb.Outcome]
    error: BaseException | None


class ExecutorStream:
    """The node's Work stream to one executor address; opened on first use."""

    def __init__(self, stub: pb_grpc.ExecutorServiceStub, node_id: str) -> None:
        self._stub = stub
        self._node_id = node_id
        self._call: grpc.aio.StreamStreamCall | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: list[pb.Delivery] = []
        self._send = asyncio.Event()
        self._waiting: dict[tuple[str, int], _Chunk] = {}
        self.ended = False
        """Failed or closed: the pool opens a new stream in its place for the next chunk."""

    def taken(self, deliveries: list[pb.Delivery]) -> bool:
        """Whether one of these (task, attempt) already waits on this stream: an outcome
        names only the task and attempt, so two in flight could not be told apart."""
        waiting = self._waiting
        return any((d.task.task_id, d.attempt) in waiting for d in deliveries)

    async def run(self, deliveries: list[pb.Delivery], deadline_s: float,
                  on_outcome: Callable[[pb.Outcome], None] | None = None) -> ChunkResult:
        """Send the deliveries (with the others of this loop turn) and wait for their outcomes,
        telling `on_outcome` of each as it comes."""
        if self.ended:
            return ChunkResult([], StreamEnded("the stream had ended"))
        if self._call is None:
            self._open()
        chunk = _Chunk(len(deliveries), asyncio.get_running_loop().create_future(), on_outcome=on_outcome)
        waiting = self._waiting
        keys = [(d.task.task_id, d.attempt) for d in deliveries]   # built once: two protobuf reads each
        for key in keys:
            waiting[key] = chunk
        self._outbox.extend(deliveries)
        self._send.set()
        try:
            await asyncio.wait((chunk.done,), timeout=deadline_s)
            chunk.fail(TimeoutError(f"no outcome within {deadline_s:.1f} s"))  # (nothing, if all came)
        finally:
            if len(chunk.outcomes) < chunk.expected:   # all came: each was popped as it came
                for key in keys:
                    if waiting.get(key) is chunk:
                        del waiting[key]
        return ChunkResult(chunk.outcomes, chunk.error)

    def _open(self) -> None:
        self._call = self._stub.Work()
        self._tasks = [asyncio.create_task(self._write(self._call)), asyncio.create_task(self._read(self._call))]

    async def _write(self, call: grpc.aio.StreamStreamCall) -> None:
        try:
            while True:
                await self._send.wait()
                self._send.clear()
                if self._outbox:
                    batch, self._outbox = self._outbox, []
                    await call.write(pb.ExecuteRequest(deliveries=batch, dispatcher_node=self._node_id))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the call failed: the reader sees the same and ends the stream
            log.debug("executor stream write failed: %s", exc)

    async def _read(self, call: grpc.aio.StreamStreamCall) -> None:
        error: BaseException
        try:
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    error = StreamEnded("the executor ended the stream")
                    break
                assert isinstance(message, pb.ExecuteResponse)
                waiting = self._waiting
                for outcome in message.outcomes:
                    chunk = waiting.pop((outcome.task_id, outcome.attempt), None)
                    if chunk is not None:
                        chunk.add(outcome)
        except asyncio.CancelledError:
            error = StreamEnded("the stream was closed by this node")
            self._end(error)
            raise
        except grpc.aio.AioRpcError as exc:
            error = exc
        except Exception as exc:
            error = exc
        self._end(error)

    def _end(self, error: BaseException) -> None:
        if self.ended:
            return
        self.ended = True
        for chunk in set(self._waiting.values()):
            chunk.fail(error)
        self._waiting.clear()
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if self._call is not None:
            self._call.cancel()

    async def close(self) -> None:
        """Fail what waits, end the call and its tasks."""
        self._end(StreamEnded("the stream was closed by this node"))
        await asyncio.gather(*self._tasks, return_exceptions=True)
