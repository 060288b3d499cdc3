"""Kafka intake: one thread drives the partition reader and hands batches of
messages to the event loop. Assignment changes are commands applied by that
thread between reads, because a librdkafka consumer must not be shared."""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from dispatcher.log.interface import InMessage, LogReader

log = logging.getLogger(__name__)


class KafkaIntake:
    def __init__(self, reader: LogReader, deliver: Callable[[list[InMessage]], None],
                 closed_topics: Callable[[], frozenset[str]], batch: int = 1000):
        self._reader = reader
        self._deliver = deliver          # called on this thread; must hand off quickly
        # The topics to pause now: all while the node is held, a class's topic while its
        # share of the heap is full (engine/due_queue.py).
        self._closed_topics = closed_topics
        self._batch = batch
        self._commands: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._running = False
        self._lag: dict[tuple[str, int], int] = {}

    def start(self) -> None:
        if self._thread is not None:
            return
        self._reader.start()
        self._running = True
        self._thread = threading.Thread(target=self._run, name="kafka-intake", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._running = False
        self._thread.join(timeout=10)
        self._thread = None
        self._reader.stop()

    def assign(self, starts: dict[tuple[str, int], int | None]) -> threading.Event:
        done = threading.Event()
        self._commands.put(("assign", starts, done))
        return done

    def unassign(self, pairs: list[tuple[str, int]]) -> threading.Event:
        done = threading.Event()
        self._commands.put(("unassign", pairs, done))
        return done

    def lag(self) -> dict[tuple[str, int], int]:
        return dict(self._lag)

    def _apply_commands(self) -> None:
        while True:
            try:
                kind, arg, done = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                if kind == "assign":
                    self._reader.assign(arg)
                else:
                    self._reader.unassign(arg)
            except Exception:
                log.exception("kafka intake: %s %s failed", kind, arg)
            finally:
                done.set()

    def _run(self) -> None:
        paused: frozenset[str] = frozenset()
        reads = 0
        while self._running:
            t0 = time.monotonic()
            self._apply_commands()
            t1 = time.monotonic()
            if t1 - t0 > 1:
                log.warning("kafka intake: applying assignment took %.1fs", t1 - t0)
            try:
                closed = self._closed_topics()
                if closed != paused:
                    if closed - paused:
                        self._reader.pause(closed - paused)
                    if paused - closed:
                        self._reader.resume(paused - closed)
                    paused = closed
                t2 = time.monotonic()
                messages = self._reader.read(self._batch, 0.05)
                if time.monotonic() - t2 > 1:
                    log.warning("kafka intake: a read took %.1fs", time.monotonic() - t2)
                if messages:
                    self._deliver(messages)
                reads += 1
                if reads % 40 == 0:
                    self._lag = self._reader.lag()
            except Exception:
                log.exception("kafka intake: read failed; retrying")
                threading.Event().wait(0.5)
