"""Heartbeats of long tasks, on the executor's side (docs/limits.md, "Heartbeats").

A delivery whose type declares a heartbeat timeout is alive only while its heartbeats reach
the dispatcher. Each such attempt gets a `Beat`: it sends the first heartbeat itself when
the delivery arrives, then one per `ctx.heartbeat(details)` call, up the Work stream the
delivery came by (`Link`, one per stream). The dispatcher answers each: CONTINUE, or CANCEL
(the task was cancelled), LOST (the attempt was given up) or INVALID (details refused).

On CANCEL or LOST the attempt is stopped: an async handler's timeout scope is moved to now,
so it is interrupted at its next await; the next heartbeat() of any handler raises
`TaskStopped`; and the outcome sent for the attempt is STOPPED, whatever the handler did.

Deliveries without a heartbeat timeout cost nothing here unless their handler calls
heartbeat() (the stream's Link stands in as their beat, and makes one then). Deliveries of
an Execute call have no stream to send on: their heartbeat() sends nothing.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

from taskring.errors import InvalidHeartbeat, TaskStopped
from taskring.wire import pb

log = logging.getLogger("taskring.executor")

MAX_DETAILS_BYTES = 65_536
"""The dispatcher stores a heartbeat's details with the task on every heartbeat; it refuses larger ones."""

_STOPS = {pb.HEARTBEAT_VERDICT_CANCEL: "cancelled", pb.HEARTBEAT_VERDICT_LOST: "lost"}


def details_json(details: Any) -> str:
    """The JSON text of a heartbeat's details ("" for None: keep the last ones)."""
    if details is None:
        return ""
    try:
        text = json.dumps(details, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidHeartbeat(f"details: not JSON-serializable: {exc}") from None
    size = len(text.encode())
    if size > MAX_DETAILS_BYTES:
        raise InvalidHeartbeat(f"details: {size} bytes of JSON, more than the maximum {MAX_DETAILS_BYTES}")
    return text


class Beat:
    """One attempt's heartbeats: what it was told, where it sends."""

    __slots__ = ("link", "task_id", "attempt", "timeout_ms", "last_details_json", "stopped", "reason", "scope")

    def __init__(self, link: Link | None, task_id: str, attempt: int, timeout_ms: int, last_details_json: str):
        self.link = link
        self.task_id = task_id
        self.attempt = attempt
        self.timeout_ms = timeout_ms
        self.last_details_json = last_details_json
        self.stopped: str | None = None   # "cancelled" | "lost", once told
        self.reason = ""
        self.scope: asyncio.Timeout | None = None   # an async handler's timeout scope, while it runs

    def beat(self, details: Any) -> None:
        if self.stopped is not None:
            raise TaskStopped(self.stopped, self.reason)
        text = details_json(details)
        if self.link is not None:
            self.link.send(self, text)

    def stop(self, verdict: str, reason: str) -> None:
        if self.stopped is not None:
            return
        self.stopped, self.reason = verdict, reason
        log.warning("task %s attempt %d: %s (%s); stopping its handler", self.task_id, self.attempt, verdict, reason)
        if self.scope is not None and not self.scope.expired():
            self.scope.reschedule(asyncio.get_running_loop().time())

    def running_under(self, scope: asyncio.Timeout) -> None:
        """The async handler now runs under `scope`: a stop interrupts it there."""
        self.scope = scope
        if self.stopped is not None:
            scope.reschedule(asyncio.get_running_loop().time())


class Link:
    """One Work stream's heartbeats: sends them with the outcomes, takes the answers."""

    def __init__(self, message: Any, wake: Any) -> None:
        # `message` returns the ExecuteResponse being filled; `wake` asks the writer to send it.
        self._message = message
        self._wake = wake
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._sequence = 0
        self.beats: dict[tuple[str, int], Beat] = {}
        """Attempts that heartbeat, until their outcome is written."""

    def start(self, d: pb.Delivery) -> Beat:
        """The beat of a delivery that must heartbeat; its first heartbeat goes now."""
        beat = Beat(self, d.task.task_id, d.attempt, d.heartbeat_timeout_ms, d.heartbeat_details_json)
        self.beats[(beat.task_id, beat.attempt)] = beat
        self.send(beat, "")
        return beat

    def adopt(self, task_id: str, attempt: int) -> Beat:
        """The beat of an attempt without a heartbeat timeout whose handler heartbeats anyway."""
        key = (task_id, attempt)
        beat = self.beats.get(key)
        if beat is None:
            beat = self.beats[key] = Beat(self, task_id, attempt, 0, "")
        return beat

    def send(self, beat: Beat, details: str) -> None:
        if threading.get_ident() != self._loop_thread:   # a sync handler's thread
            self._loop.call_soon_threadsafe(self._add, beat, details)
        else:
            self._add(beat, details)

    def _add(self, beat: Beat, details: str) -> None:
        self._sequence += 1
        self._message().heartbeats.add(task_id=beat.task_id, attempt=beat.attempt, details_json=details,
                                       sequence=self._sequence)
        self._wake()

    def answered(self, answers: Any) -> None:
        for a in answers:
            beat = self.beats.get((a.task_id, a.attempt))
            if beat is None:
                continue   # its outcome went already
            verdict = _STOPS.get(a.verdict)
            if verdict is not None:
                beat.stop(verdict, a.reason)
            elif a.verdict == pb.HEARTBEAT_VERDICT_INVALID:
                log.warning("task %s attempt %d: heartbeat refused: %s", a.task_id, a.attempt, a.reason)

    def settle(self, message: pb.ExecuteResponse) -> None:
        """Before `message` goes: the outcome of a stopped attempt is STOPPED, and attempts
        whose outcome goes are forgotten."""
        beats = self.beats
        for outcome in message.outcomes:
            beat = beats.pop((outcome.task_id, outcome.attempt), None)
            if beat is not None and beat.stopped is not None:
                outcome.kind = pb.OUTCOME_KIND_STOPPED
                outcome.error = f"{beat.stopped}: {beat.reason}"
                outcome.stack_trace = ""
