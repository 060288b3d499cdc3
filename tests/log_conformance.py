"""The Kafka log's conformance suite: the contract of dispatcher/log/interface.py,
run on the real broker and on the in-memory twin, as the store's suite is.

Not collected by itself. A runner subclasses `LogConformance` as `Test...` and
overrides the `backend` fixture:

- tests/unit/test_log_memory.py: MemoryProducer, MemoryReader over a MemoryLog;
- tests/integration/test_log_kafka.py: TaskProducer and PartitionReader on the
  local stack's broker, a fresh topic per case.

Each table row is one behaviour the engine relies on: produce and acknowledge,
read only what is assigned, start from a committed watermark, pause and resume
(across unassign, which is where librdkafka kept a stale pause flag), lag, and
the intake thread's commands.
"""
from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable

import pytest

from dispatcher.log.intake import KafkaIntake
from dispatcher.log.interface import InMessage, LogProducer, LogReader, OutMessage
from harness.wait import wait_until

WAIT_S = 20.0
QUIET_S = 1.0
"""How long "nothing is read" is watched: long enough for a fetch to have come back."""


@dataclasses.dataclass
class Backend:
    producer: LogProducer
    """Started; stopped by the runner."""
    new_reader: Callable[[], LogReader]
    """A new reader, not started; the runner stops what it made."""
    new_topic: Callable[[int], str]
    """A new empty topic with that many partitions."""
    new_producer: Callable[[], LogProducer]
    """A new producer, not started."""


def _messages(topic: str, partition: int, n: int, tag: str = "m") -> list[OutMessage]:
    return [OutMessage(topic, partition, f"k{i}".encode(), f"{tag}{i}".encode()) for i in range(n)]


def _send(producer: LogProducer, messages: list[OutMessage]) -> list[str | None]:
    return asyncio.run(producer.send(messages))


def _read(reader: LogReader, want: int, timeout_s: float = WAIT_S) -> list[InMessage]:
    """Read until `want` messages came (or the deadline); returns what came."""
    got: list[InMessage] = []

    def enough() -> bool:
        got.extend(reader.read(100, 0.05))
        return len(got) >= want
    wait_until(enough, timeout_s, f"{want} messages")
    return got


def _read_nothing(reader: LogReader) -> list[InMessage]:
    got: list[InMessage] = []

    def came() -> bool:
        got.extend(reader.read(100, 0.05))
        return bool(got)
    try:
        wait_until(came, QUIET_S, "a message")
    except AssertionError:
        pass
    return got


def _offsets(messages: list[InMessage], topic: str, partition: int) -> list[int]:
    return [m.offset for m in messages if (m.topic, m.partition) == (topic, partition)]


class LogConformance:
    @pytest.fixture
    def backend(self) -> Backend:
        raise NotImplementedError("a runner overrides the backend fixture")

    @pytest.fixture
    def reader(self, backend: Backend):
        reader = backend.new_reader()
        reader.start()
        yield reader
        reader.stop()

    # ---------------------------------------------------------------- produce and acknowledge

    def test_send_acknowledges_every_message_and_the_reader_gets_them_in_order(self, backend, reader):
        topic = backend.new_topic(2)
        sent = _messages(topic, 0, 5) + _messages(topic, 1, 3, tag="p")
        assert _send(backend.producer, sent) == [None] * 8
        reader.assign({(topic, 0): None, (topic, 1): None})
        got = _read(reader, 8)
        assert _offsets(got, topic, 0) == [0, 1, 2, 3, 4]
        assert _offsets(got, topic, 1) == [0, 1, 2]
        assert [m.value for m in got if m.partition == 0] == [f"m{i}".encode() for i in range(5)]
        assert [m.value for m in got if m.partition == 1] == [f"p{i}".encode() for i in range(3)]

    def test_send_of_nothing_is_nothing(self, backend):
        assert _send(backend.producer, []) == []

    def test_a_producer_that_is_not_running_fails_each_message_without_raising(self, backend):
        topic = backend.new_topic(1)
        results = _send(backend.new_producer(), _messages(topic, 0, 2))
        assert len(results) == 2 and all(isinstance(e, str) and e for e in results)

    # ---------------------------------------------------------------- assigned reads

    @pytest.mark.parametrize("assigned, unassigned", [((0,), (1,)), ((1,), (0,))])
    def test_only_assigned_partitions_are_read(self, backend, reader, assigned, unassigned):
        topic = backend.new_topic(2)
        assert _send(backend.producer, _messages(topic, 0, 2) + _messages(topic, 1, 2)) == [None] * 4
        reader.assign({(topic, p): None for p in assigned})
        assert reader.assigned() == {(topic, p) for p in assigned}
        got = _read(reader, 2) + _read_nothing(reader)
        assert {m.partition for m in got} == set(assigned)
        assert all(_offsets(got, topic, p) == [] for p in unassigned)

    def test_an_unassigned_partition_is_read_no_more(self, backend, reader):
        topic = backend.new_topic(2)
        reader.assign({(topic, 0): None, (topic, 1): None})
        assert _send(backend.producer, _messages(topic, 0, 1) + _messages(topic, 1, 1)) == [None, None]
        assert len(_read(reader, 2)) == 2
        reader.unassign([(topic, 0)])
        assert reader.assigned() == {(topic, 1)}
        assert _send(backend.producer, _messages(topic, 0, 3) + _messages(topic, 1, 1)) == [None] * 4
        got = _read(reader, 1) + _read_nothing(reader)
        assert [(m.partition, m.offset) for m in got] == [(1, 1)]

    @pytest.mark.parametrize("watermark", [0, 3, 6])
    def test_a_partition_assigned_from_a_committed_watermark_is_read_from_there(self, backend, reader, watermark):
        topic = backend.new_topic(1)
        assert _send(backend.producer, _messages(topic, 0, 6)) == [None] * 6
        reader.assign({(topic, 0): watermark})
        got = _read(reader, 6 - watermark) if watermark < 6 else _read_nothing(reader)
        assert _offsets(got, topic, 0) == list(range(watermark, 6))
        assert _send(backend.producer, _messages(topic, 0, 1, tag="late")) == [None]
        assert _offsets(_read(reader, 1), topic, 0) == [6]

    # ---------------------------------------------------------------- pause and resume

    def test_a_paused_reader_reads_nothing_until_resumed(self, backend, reader):
        topic = backend.new_topic(1)
        reader.assign({(topic, 0): None})
        reader.pause([topic])
        assert reader.paused == {topic}
        assert _send(backend.producer, _messages(topic, 0, 3)) == [None] * 3
        assert _read_nothing(reader) == []
        reader.resume([topic])
        assert not reader.paused
        assert _offsets(_read(reader, 3), topic, 0) == [0, 1, 2]

    def test_pausing_one_topic_leaves_the_others_read(self, backend, reader):
        # A full share of low tasks pauses the low topic only; high keeps coming in.
        low, high = backend.new_topic(1), backend.new_topic(1)
        reader.assign({(low, 0): None, (high, 0): None})
        reader.pause([low])
        assert _send(backend.producer, _messages(low, 0, 2) + _messages(high, 0, 2)) == [None] * 4
        got = _read(reader, 2)
        assert _offsets(got, high, 0) == [0, 1] and not _offsets(got, low, 0)
        assert _read_nothing(reader) == [], "the paused topic was read"
        reader.resume([low])
        assert _offsets(_read(reader, 2), low, 0) == [0, 1]

    def test_a_partition_paused_then_unassigned_is_read_again_when_assigned_back(self, backend, reader):
        topic = backend.new_topic(1)
        assert _send(backend.producer, _messages(topic, 0, 5)) == [None] * 5
        reader.assign({(topic, 0): 0})
        assert _offsets(_read(reader, 1), topic, 0)[:1] == [0]
        # Held (paused), the slot lost while paused, the hold ends, the slot claimed back.
        reader.pause([topic])
        reader.unassign([(topic, 0)])
        reader.resume([topic])
        reader.assign({(topic, 0): 2})
        assert _offsets(_read(reader, 3), topic, 0)[:3] == [2, 3, 4]

    def test_a_partition_assigned_while_paused_stays_paused_until_resume(self, backend, reader):
        topic = backend.new_topic(2)
        assert _send(backend.producer, _messages(topic, 1, 3)) == [None] * 3
        reader.assign({(topic, 0): 0})
        reader.pause([topic])
        reader.assign({(topic, 1): 0})
        assert _read_nothing(reader) == [], "a partition assigned while paused was read"
        reader.resume([topic])
        assert _offsets(_read(reader, 3), topic, 1) == [0, 1, 2]

    # ---------------------------------------------------------------- lag

    def test_lag_is_the_high_watermark_minus_the_read_position(self, backend, reader):
        topic = backend.new_topic(1)
        assert reader.lag() == {}
        assert _send(backend.producer, _messages(topic, 0, 10)) == [None] * 10
        reader.assign({(topic, 0): 4})
        got: list[InMessage] = []

        def two_came() -> bool:
            got.extend(reader.read(2 - len(got), 0.05))
            return len(got) == 2
        wait_until(two_came, WAIT_S, "two messages")
        assert _offsets(got, topic, 0) == [4, 5]
        wait_until(lambda: reader.lag() == {(topic, 0): 4}, WAIT_S, "lag 4 with offsets 6..9 unread")
        assert _offsets(_read(reader, 4), topic, 0) == [6, 7, 8, 9]
        wait_until(lambda: reader.lag() == {(topic, 0): 0}, WAIT_S, "lag 0 after reading everything")

    # ---------------------------------------------------------------- the intake thread

    def test_the_intake_delivers_what_it_is_assigned_and_holds_while_it_may_not_read(self, backend):
        topic, other = backend.new_topic(2), backend.new_topic(1)
        delivered: list[InMessage] = []
        lock = threading.Lock()
        may_read = threading.Event()

        def deliver(batch: list[InMessage]) -> None:
            with lock:
                delivered.extend(batch)

        def closed_topics() -> frozenset[str]:
            return frozenset() if may_read.is_set() else frozenset({topic})

        def seen_of(t: str) -> list[tuple[int, int]]:
            with lock:
                return sorted((m.partition, m.offset) for m in delivered if m.topic == t)

        def seen() -> list[tuple[int, int]]:
            return seen_of(topic)

        intake = KafkaIntake(backend.new_reader(), deliver, closed_topics)
        intake.start()
        try:
            assert _send(backend.producer, _messages(topic, 0, 2) + _messages(topic, 1, 2)
                         + _messages(other, 0, 1)) == [None] * 5
            assert intake.assign({(topic, 0): 1, (other, 0): 0}).wait(WAIT_S), "assign never took effect"
            wait_until(lambda: seen_of(other) == [(0, 0)], WAIT_S, "the topic not closed is read")
            assert not wait_quietly(seen), "delivered a closed topic"
            may_read.set()
            wait_until(lambda: seen() == [(0, 1)], WAIT_S, "partition 0 from offset 1")
            assert intake.unassign([(topic, 0)]).wait(WAIT_S), "unassign never took effect"
            assert intake.assign({(topic, 1): None}).wait(WAIT_S)
            wait_until(lambda: seen() == [(0, 1), (1, 0), (1, 1)], WAIT_S, "partition 1 from the beginning")
        finally:
            intake.stop()


def wait_quietly(seen: Callable[[], list]) -> list:
    """What `seen` shows after watching it for QUIET_S (empty if nothing came)."""
    try:
        return wait_until(seen, QUIET_S, "anything")
    except AssertionError:
        return []
