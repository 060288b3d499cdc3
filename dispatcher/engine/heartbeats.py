"""The heartbeats of running attempts, as the slot's owner answers them.

A handler of a long task calls heartbeat() every so often (docs/limits.md, "Heartbeats"); its
SDK sends each up the Work stream the attempt came by (engine/executor_stream.py), which hands
them here a message's worth at a time. Each is recorded in the store under its slot's epoch
(its details are what the task's next attempt resumes from) and answered: CONTINUE (the stream
then extends the attempt's lease), CANCEL (the task was cancelled while it ran), LOST (the
attempt is not the task's running one any more) or INVALID (details not JSON or too large).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from cluster.slots import slot_of
from dispatcher.base.clock import Clock
from dispatcher.base.metrics import NodeMetrics
from dispatcher.policy.heartbeat import details_problem
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from taskring.wire import pb

log = logging.getLogger(__name__)

_VERDICTS = {r.HeartbeatResult.RECORDED: pb.HEARTBEAT_VERDICT_CONTINUE,
             r.HeartbeatResult.CANCELLED: pb.HEARTBEAT_VERDICT_CANCEL,
             r.HeartbeatResult.LOST: pb.HEARTBEAT_VERDICT_LOST}
_REASONS = {r.HeartbeatResult.RECORDED: "",
            r.HeartbeatResult.CANCELLED: "the task was cancelled",
            r.HeartbeatResult.LOST: "this attempt is not the task's running attempt any more"}
_VERDICT_NAMES = {number: name.removeprefix("HEARTBEAT_VERDICT_").lower()
                  for name, number in pb.HeartbeatVerdict.items()}


def answer(beat: pb.Heartbeat, verdict: pb.HeartbeatVerdict, reason: str = "") -> pb.HeartbeatAnswer:
    return pb.HeartbeatAnswer(sequence=beat.sequence, task_id=beat.task_id, attempt=beat.attempt, verdict=verdict,
                              reason=reason)


class HeartbeatDesk:
    def __init__(self, *, store: TaskStoreProtocol, clock: Clock, slot_count: int, metrics: NodeMetrics):
        self._store = store
        self._clock = clock
        self._slot_count = slot_count
        self._metrics = metrics

    async def answer(self, beats: Sequence[tuple[pb.Heartbeat, pb.Delivery]]) -> list[pb.HeartbeatAnswer]:
        """Record the heartbeats of attempts waiting on a stream (each with its delivery) and answer each."""
        answers: list[pb.HeartbeatAnswer] = []
        writes: list[r.HeartbeatWrite] = []
        written: list[pb.Heartbeat] = []
        for beat, delivery in beats:
            problem = details_problem(beat.details_json) if beat.details_json else None
            if problem is not None:
                answers.append(answer(beat, pb.HEARTBEAT_VERDICT_INVALID, f"details: {problem}"))
                continue
            task = delivery.task
            writes.append(r.HeartbeatWrite(beat.task_id, slot_of(task.namespace, task.task_type, self._slot_count),
                                           beat.attempt, delivery.epoch, beat.details_json or None))
            written.append(beat)
        if writes:
            try:
                results = await asyncio.to_thread(self._store.record_heartbeats, writes, self._clock.now())
            except Exception as exc:
                log.warning("%d heartbeats not recorded: %s", len(writes), exc)
                answers.extend(answer(b, pb.HEARTBEAT_VERDICT_INVALID, f"not recorded (the store failed: {exc});"
                                                                       " the lease was not extended") for b in written)
            else:
                answers.extend(answer(b, _VERDICTS[result], _REASONS[result])
                               for b, result in zip(written, results, strict=True))
        for a in answers:
            self._metrics.heartbeats.labels(_VERDICT_NAMES[a.verdict]).inc()
        return answers

    def unknown(self, beat: pb.Heartbeat) -> pb.HeartbeatAnswer:
        """The answer to a heartbeat of an attempt not waiting on its stream."""
        self._metrics.heartbeats.labels("lost").inc()
        return answer(beat, pb.HEARTBEAT_VERDICT_LOST,
                      f"attempt {beat.attempt} of task {beat.task_id} is not running for this dispatcher"
                      " (it finished, its lease ran out, or the task is unknown)")

    def expired(self) -> None:
        self._metrics.heartbeat_expired.inc()
