"""An in-memory twin of the Kafka path, for unit tests of logic.

- `MemoryLog`: topics -> partitions -> the list of messages (an offset is an
  index into that list), shared by producers and intakes in one test.
- `MemoryProducer`: TaskProducer's contract (start/stop, `await send(messages)`
  returning per message None or an error text). It can be told to refuse sends
  (`fail_sends`), which is how a test drives the reroute-to-MySQL path.
- `MemoryReader`: PartitionReader's contract (assigned partitions read from a
  next-offset, pause/resume, lag) over a MemoryLog; tests/log_conformance.py
  runs the same cases on it and on the broker.
- `MemoryIntake`: KafkaIntake's interface (start, stop, assign(starts) -> Event,
  unassign(pairs) -> Event, lag()). It hands batches of InMessage to the
  engine's `deliver` callback, respecting `closed_topics`, either from a small thread
  (the default, woken by every append, like KafkaIntake's reading thread) or
  synchronously on `pump()` when built with `threaded=False`. Assignment
  changes take effect at once, or, after `hold_commands()`, only on
  `release_commands()`: KafkaIntake applies them on its reading thread between
  reads, so a caller may wait a while for the returned event.

What the twins do not model: retention, compaction, transaction markers,
rebalances, partial failure of one produce batch other than by `fail_sends`.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence

from dispatcher.log.interface import InMessage, OutMessage, Partition


class MemoryLog:
    """Topics of partitions of messages. `partitions`, when given, bounds every
    topic's partition numbers (Kafka refuses an unknown partition)."""

    def __init__(self, partitions: int | None = None):
        self._partitions = partitions
        self._cond = threading.Condition()
        self._data: dict[str, dict[int, list[InMessage]]] = {}
        self._version = 0

    def append(self, topic: str, partition: int, value: bytes) -> int:
        """Append one message; returns its offset."""
        if partition < 0 or (self._partitions is not None and partition >= self._partitions):
            raise ValueError(f"topic {topic!r}: unknown partition {partition} (partitions: {self._partitions})")
        with self._cond:
            messages = self._data.setdefault(topic, {}).setdefault(partition, [])
            messages.append(InMessage(topic, partition, len(messages), value))
            self._version += 1
            self._cond.notify_all()
            return len(messages) - 1

    def messages(self, topic: str, partition: int, start: int = 0) -> list[InMessage]:
        with self._cond:
            return list(self._data.get(topic, {}).get(partition, ())[start:])

    def end_offset(self, topic: str, partition: int) -> int:
        """The high watermark: the offset the next message will get."""
        with self._cond:
            return len(self._data.get(topic, {}).get(partition, ()))

    def all_messages(self) -> list[InMessage]:
        with self._cond:
            return [m for parts in self._data.values() for ms in parts.values() for m in ms]

    @property
    def version(self) -> int:
        """Grows with every append (a cheap "anything new?" for waiters)."""
        return self._version

    def wait_for_change(self, seen_version: int, timeout_s: float) -> int:
        with self._cond:
            self._cond.wait_for(lambda: self._version != seen_version, timeout_s)
            return self._version


class MemoryProducer:
    """TaskProducer's contract over a MemoryLog."""

    def __init__(self, log: MemoryLog):
        self._log = log
        self._running = False
        self._lock = threading.Lock()
        self._fail: Callable[[OutMessage], str | None] | None = None
        self.sent: list[OutMessage] = []
        """Every message made durable, in order."""
        self.refused: list[OutMessage] = []

    def start(self) -> None:
        self._running = True

    def stop(self) -> None:
        self._running = False

    def fail_sends(self, error: str | Callable[[OutMessage], str | None] = "memory log: broker unavailable") -> None:
        """Refuse sends from now on: every message (given a text), or those for which
        the given function returns an error text."""
        with self._lock:
            self._fail = error if callable(error) else (lambda _m, e=error: e)

    def heal(self) -> None:
        with self._lock:
            self._fail = None

    async def send(self, messages: Sequence[OutMessage]) -> list[str | None]:
        """Produce all; returns per message None (durable) or an error text."""
        if not messages:
            return []
        if not self._running:
            return ["kafka producer is not running"] * len(messages)
        results: list[str | None] = []
        with self._lock:
            fail = self._fail
        for m in messages:
            error = fail(m) if fail is not None else None
            if error is None:
                self._log.append(m.topic, m.partition, m.value)
                self.sent.append(m)
            else:
                self.refused.append(m)
            results.append(error)
        return results


class MemoryReader:
    """PartitionReader's contract over a MemoryLog. One thread drives it."""

    def __init__(self, log: MemoryLog):
        self._log = log
        self._positions: dict[Partition, int] = {}
        self._paused: set[str] = set()
        self._running = False

    def start(self) -> None:
        self._running = True

    def stop(self) -> None:
        self._running = False
        self._positions.clear()

    def assign(self, starts: dict[Partition, int | None]) -> None:
        for pair, offset in starts.items():
            self._positions[pair] = 0 if offset is None else offset

    def unassign(self, pairs: Sequence[Partition]) -> None:
        for pair in pairs:
            self._positions.pop(pair, None)

    def assigned(self) -> set[Partition]:
        return set(self._positions)

    def pause(self, topics: Collection[str]) -> None:
        self._paused.update(topics)

    def resume(self, topics: Collection[str]) -> None:
        self._paused.difference_update(topics)

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(self._paused)

    def read(self, max_messages: int, timeout_s: float) -> list[InMessage]:
        deadline = time.monotonic() + timeout_s
        while True:
            version = self._log.version
            out = self._take(max_messages)
            remaining = deadline - time.monotonic()
            if out or remaining <= 0:
                return out
            self._log.wait_for_change(version, remaining)

    def _take(self, max_messages: int) -> list[InMessage]:
        out: list[InMessage] = []
        for pair, pos in sorted(self._positions.items()):
            if pair[0] in self._paused:
                continue
            taken = self._log.messages(*pair, pos)[:max_messages - len(out)]
            if taken:
                self._positions[pair] = taken[-1].offset + 1
                out.extend(taken)
            if len(out) >= max_messages:
                break
        return out

    def lag(self) -> dict[Partition, int]:
        return {pair: max(0, self._log.end_offset(*pair) - pos) for pair, pos in self._positions.items()}


class MemoryIntake:
    """KafkaIntake's interface over a MemoryLog."""

    def __init__(self, log: MemoryLog, deliver: Callable[[list[InMessage]], None],
                 closed_topics: Callable[[], frozenset[str]], *, batch: int = 1000, threaded: bool = True):
        self._log = log
        self._deliver = deliver
        self._closed_topics = closed_topics
        self._batch = batch
        self._threaded = threaded
        self._lock = threading.RLock()
        self._positions: dict[tuple[str, int], int] = {}
        self._thread: threading.Thread | None = None
        self._running = False
        self.delivered: list[InMessage] = []
        self._held: list[tuple[Callable[[], None], threading.Event]] | None = None

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        if self._threaded:
            self._thread = threading.Thread(target=self._run, name="memory-intake", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def assign(self, starts: dict[tuple[str, int], int | None]) -> threading.Event:
        """Add partitions, each from a next-offset (None: from the beginning).
        The returned event is set once the assignment is in effect."""
        def apply() -> None:
            for pair, offset in starts.items():
                self._positions[pair] = 0 if offset is None else offset
        return self._command(apply)

    def unassign(self, pairs: Sequence[tuple[str, int]]) -> threading.Event:
        """Stop reading these partitions. Once the returned event is set, nothing more
        of them is delivered (a delivery in progress finishes first)."""
        def apply() -> None:
            for pair in pairs:
                self._positions.pop(pair, None)
        return self._command(apply)

    def hold_commands(self) -> None:
        """From now on, assign/unassign wait (their events unset) until release_commands()."""
        with self._lock:
            if self._held is None:
                self._held = []

    def release_commands(self) -> None:
        """Apply the held assignment changes, in order, and set their events."""
        with self._lock:
            held, self._held = self._held or [], None
            for apply, done in held:
                apply()
                done.set()

    def held_commands(self) -> int:
        with self._lock:
            return len(self._held or ())

    def _command(self, apply: Callable[[], None]) -> threading.Event:
        done = threading.Event()
        with self._lock:  # waits for a delivery in progress
            if self._held is not None:
                self._held.append((apply, done))
            else:
                apply()
                done.set()
        return done

    def assigned(self) -> dict[tuple[str, int], int]:
        """{(topic, partition): next offset to deliver}."""
        with self._lock:
            return dict(self._positions)

    def lag(self) -> dict[tuple[str, int], int]:
        with self._lock:
            return {p: max(0, self._log.end_offset(*p) - pos) for p, pos in self._positions.items()}

    def pump(self) -> int:
        """Deliver what is available now (one batch at most); returns how many messages."""
        with self._lock:  # held across the callback: unassign waits for it, as KafkaIntake's commands do
            if not self._running:
                return 0
            closed = self._closed_topics()
            out: list[InMessage] = []
            for (topic, partition), pos in sorted(self._positions.items()):
                if topic in closed:
                    continue
                taken = self._log.messages(topic, partition, pos)[:self._batch - len(out)]
                if taken:
                    self._positions[(topic, partition)] = taken[-1].offset + 1
                    out.extend(taken)
                if len(out) >= self._batch:
                    break
            if out:
                self.delivered.extend(out)
                self._deliver(out)
            return len(out)

    def _run(self) -> None:
        while self._running:
            version = self._log.version
            if self.pump():
                continue
            # Nothing to deliver: wait for an append, re-checking closed_topics and the
            # assignment every few milliseconds.
            self._log.wait_for_change(version, 0.005)
