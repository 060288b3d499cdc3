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

Heartbeats come up the same stream (engine/heartbeats.py answers them, down the stream). A
delivery whose type declares a heartbeat timeout has a lease here: it runs the heartbeat
timeout from when it was sent, and from each heartbeat recorded after that. When a lease
runs out the attempt is over: its chunk gets a timed-out outcome for it at once, and a
later outcome or heartbeat of it is refused (LOST), as its recovery guarantees.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import grpc

from taskring.wire import pb, pb_grpc

log = logging.getLogger(__name__)


class Heartbeats(Protocol):
    """What answers the heartbeats of a stream (engine/heartbeats.py)."""

    async def answer(self, beats: list[tuple[pb.Heartbeat, pb.Delivery]]) -> list[pb.HeartbeatAnswer]: ...

    def unknown(self, beat: pb.Heartbeat) -> pb.HeartbeatAnswer: ...

    def expired(self) -> None:
        """An attempt's lease ran out (counted)."""


def time_ms() -> int:
    return time.time_ns() // 1_000_000


class StreamEnded(Exception):
    """The executor ended the stream with OK (it is stopping) before every outcome came."""


@dataclasses.dataclass(eq=False)
class _Chunk:
    """Deliveries sent together by one caller, and the outcomes that came for them."""

    expected: int
    done: asyncio.Future[None]
    deliveries: list[pb.Delivery]
    outcomes: list[pb.Outcome] = dataclasses.field(default_factory=list)
    error: BaseException | None = None
    on_outcomes: Callable[[list[pb.Outcome]], None] | None = None
    """Told of the outcomes of each frame as they come, before the chunk is over (a limit's
    places are freed then): once per frame, not per outcome, since each call frees places and
    wakes the dispatch loop."""

    def add(self, outcomes: list[pb.Outcome]) -> None:
        self.outcomes.extend(outcomes)
        if self.on_outcomes is not None:
            self.on_outcomes(outcomes)
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

    def __init__(self, stub: pb_grpc.ExecutorServiceStub, node_id: str, heartbeats: Heartbeats | None = None,
                 lease_now_s: Callable[[], float] | None = None) -> None:
        self._stub = stub
        # The time heartbeat leases run on: the loop's monotonic clock, or the node's clock where a
        # test moves it (`taskring dev`), so that moving time runs a silent attempt's lease out.
        self._lease_now_s = lease_now_s
        self._node_id = node_id
        self._heartbeats = heartbeats
        self._call: grpc.aio.StreamStreamCall | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: list[pb.Delivery] = []
        self._answers: list[pb.HeartbeatAnswer] = []
        # (task_id, attempt) -> when its lease runs out (`_now_s`), for deliveries
        # whose type heartbeats; and the heartbeat timeout of each, in seconds.
        self._leases: dict[tuple[str, int], float] = {}
        self._lease_s: dict[tuple[str, int], float] = {}
        self._lease_changed = asyncio.Event()
        self._lease_watch: asyncio.Task[None] | None = None
        self._pending_answers: set[asyncio.Task[None]] = set()
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
                  on_outcomes: Callable[[list[pb.Outcome]], None] | None = None) -> ChunkResult:
        """Send the deliveries (with the others of this loop turn) and wait for their outcomes,
        telling `on_outcomes` of those of each frame as it comes."""
        if self.ended:
            return ChunkResult([], StreamEnded("the stream had ended"))
        if self._call is None:
            self._open()
        loop = asyncio.get_running_loop()
        chunk = _Chunk(len(deliveries), loop.create_future(), deliveries, on_outcomes=on_outcomes)
        waiting = self._waiting
        keys = [(d.task.task_id, d.attempt) for d in deliveries]   # built once: two protobuf reads each
        for key in keys:
            waiting[key] = chunk
        if deliveries and deliveries[0].heartbeat_timeout_ms:   # a chunk is one task type's
            self._lease(keys, deliveries[0].heartbeat_timeout_ms / 1000, self._now_s())
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
            if self._leases:
                for key in keys:
                    self._leases.pop(key, None)
                    self._lease_s.pop(key, None)
        return ChunkResult(chunk.outcomes, chunk.error)

    # ---- leases of attempts that heartbeat ----

    def _lease(self, keys: list[tuple[str, int]], timeout_s: float, now: float) -> None:
        for key in keys:
            self._leases[key] = now + timeout_s
            self._lease_s[key] = timeout_s
        if self._lease_watch is None:
            self._lease_watch = asyncio.create_task(self._watch_leases())
            self._tasks.append(self._lease_watch)
        self._lease_changed.set()

    async def _watch_leases(self) -> None:
        """Give up each attempt whose lease ran out: a timed-out outcome for it now."""
        while True:
            self._lease_changed.clear()
            now = self._now_s()
            for key in [k for k, until in self._leases.items() if until <= now]:
                timeout_ms = round(self._lease_s.pop(key) * 1000)
                del self._leases[key]
                chunk = self._waiting.pop(key, None)
                if chunk is not None:
                    log.warning("task %s attempt %d: no heartbeat within %d ms; giving the attempt up",
                                key[0], key[1], timeout_ms)
                    chunk.add([pb.Outcome(task_id=key[0], attempt=key[1], kind=pb.OUTCOME_KIND_TIMED_OUT,
                                          error=f"no heartbeat within the heartbeat timeout ({timeout_ms} ms)",
                                          finished_at_ms=time_ms())])
                    if self._heartbeats is not None:
                        self._heartbeats.expired()
            wait = min(self._leases.values(), default=now + 3600) - now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lease_changed.wait(), max(wait, 0.001))

    def time_moved(self) -> None:
        """The node's clock was moved (`taskring dev`): look at the leases again now."""
        self._lease_changed.set()

    def _now_s(self) -> float:
        return self._lease_now_s() if self._lease_now_s is not None else asyncio.get_running_loop().time()

    def _heard(self, beats: Sequence[pb.Heartbeat]) -> None:
        """Heartbeats from the executor: those of attempts waiting here go to be recorded."""
        assert self._heartbeats is not None
        known: list[tuple[pb.Heartbeat, pb.Delivery]] = []
        for beat in beats:
            key = (beat.task_id, beat.attempt)
            chunk = self._waiting.get(key)
            delivery = None if chunk is None else next(
                (d for d in chunk.deliveries if d.task.task_id == beat.task_id and d.attempt == beat.attempt), None)
            if delivery is None:
                self._answer([self._heartbeats.unknown(beat)])
            else:
                known.append((beat, delivery))
        if known:
            task = asyncio.create_task(self._record(known))
            self._pending_answers.add(task)
            task.add_done_callback(self._pending_answers.discard)

    async def _record(self, beats: list[tuple[pb.Heartbeat, pb.Delivery]]) -> None:
        assert self._heartbeats is not None
        answers = await self._heartbeats.answer(beats)
        now = self._now_s()
        for a in answers:
            key = (a.task_id, a.attempt)
            if a.verdict == pb.HEARTBEAT_VERDICT_CONTINUE and key in self._leases:
                self._leases[key] = now + self._lease_s[key]
        self._answer(answers)

    def _answer(self, answers: list[pb.HeartbeatAnswer]) -> None:
        self._answers.extend(answers)
        self._send.set()

    def _open(self) -> None:
        self._call = self._stub.Work()
        self._tasks = [asyncio.create_task(self._write(self._call)), asyncio.create_task(self._read(self._call))]

    async def _write(self, call: grpc.aio.StreamStreamCall) -> None:
        try:
            while True:
                await self._send.wait()
                self._send.clear()
                if self._outbox or self._answers:
                    batch, self._outbox = self._outbox, []
                    answers, self._answers = self._answers, []
                    await call.write(pb.ExecuteRequest(deliveries=batch, dispatcher_node=self._node_id,
                                                       heartbeat_answers=answers))
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
                if message.heartbeats and self._heartbeats is not None:
                    self._heard(message.heartbeats)   # first: an outcome beside them ends their attempt
                waiting = self._waiting
                # A frame's outcomes, handed to their chunks a run at a time (a frame usually
                # answers one chunk, whose outcomes come together).
                current: _Chunk | None = None
                run: list[pb.Outcome] = []
                for outcome in message.outcomes:
                    chunk = waiting.pop((outcome.task_id, outcome.attempt), None)
                    if chunk is None:
                        continue
                    if chunk is not current:
                        if current is not None:
                            current.add(run)
                        current, run = chunk, []
                    run.append(outcome)
                if current is not None:
                    current.add(run)
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
        for task in [*self._tasks, *self._pending_answers]:
            if task is not asyncio.current_task():
                task.cancel()
        if self._call is not None:
            self._call.cancel()

    async def close(self) -> None:
        """Fail what waits, end the call and its tasks."""
        self._end(StreamEnded("the stream was closed by this node"))
        await asyncio.gather(*self._tasks, return_exceptions=True)
