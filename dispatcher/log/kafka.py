"""The log on a real Kafka broker (dispatcher/log/interface.py's contract).

Kafka as the short-delay path: a producer that acknowledges only durable writes,
and a consumer of explicitly assigned partitions (no group management: ownership
decides which partitions a node reads, and progress lives in MySQL under the
slot's epoch, so Kafka's own group commits are not used).
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Collection, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from dispatcher.base.config import KafkaConfig
from dispatcher.log.interface import InMessage, OutMessage, Partition


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


class TaskProducer:
    """Produces with acks=all and idempotence; `send` resolves once every message is
    durable (or failed), so the API acknowledges only what Kafka has kept."""

    def __init__(self, config: KafkaConfig):
        self._config = config
        self._producer: Producer | None = None
        self._poller: threading.Thread | None = None
        self._running = False

    def start(self) -> None:
        if self._producer is not None:
            return
        self._producer = Producer({
            "bootstrap.servers": self._config.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": self._config.linger_ms,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 500000,
            "message.timeout.ms": 15000,
            "compression.type": "lz4",
        })
        self._running = True
        self._poller = threading.Thread(target=self._poll_loop, name="kafka-producer-poll", daemon=True)
        self._poller.start()

    def _poll_loop(self) -> None:
        # Delivery callbacks run here, never on the event loop.
        producer = self._producer
        assert producer is not None  # started before this thread
        while self._running:
            producer.poll(0.05)

    def stop(self) -> None:
        if self._producer is None:
            return
        self._producer.flush(10)
        self._running = False
        if self._poller is not None:
            self._poller.join(timeout=5)
        self._producer = None

    async def send(self, messages: Sequence[OutMessage]) -> list[str | None]:
        """Produce all; returns per message None (durable) or an error text."""
        if not messages:
            return []
        if self._producer is None:
            return ["kafka producer is not running"] * len(messages)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        results: list[str | None] = [None] * len(messages)
        remaining = [len(messages)]
        lock = threading.Lock()

        def on_delivery(index: int):
            def callback(err, _msg):
                if err is not None:
                    results[index] = str(err)
                with lock:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last:
                    loop.call_soon_threadsafe(_resolve, done)
            return callback

        for i, m in enumerate(messages):
            while True:
                try:
                    self._producer.produce(m.topic, value=m.value, key=m.key, partition=m.partition,
                                           on_delivery=on_delivery(i))
                    break
                except BufferError:
                    await asyncio.sleep(0.005)  # local queue full: let the poll thread drain it
                except KafkaException as exc:
                    on_delivery(i)(exc, None)
                    break
        await done
        return results


class PartitionReader:
    """A consumer of assigned partitions. Not thread-safe: one thread drives it."""

    def __init__(self, config: KafkaConfig, group_id: str):
        self._config = config
        self._group_id = group_id
        self._consumer: Consumer | None = None
        self._assigned: dict[Partition, int] = {}
        # librdkafka keeps a partition's pause flag across unassign: a partition paused
        # while held, then unassigned (slot lost) and assigned again (slot claimed back)
        # would stay paused for good. So the reader owns the flag, per topic, and sets it
        # explicitly on every partition it assigns.
        self._paused: set[str] = set()

    @property
    def _live(self) -> Consumer:
        """The consumer, between start() and stop()."""
        if self._consumer is None:
            raise RuntimeError("PartitionReader: call start() first")
        return self._consumer

    def start(self) -> None:
        if self._consumer is None:
            self._consumer = Consumer({
                "bootstrap.servers": self._config.bootstrap_servers,
                "group.id": self._group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": self._config.fetch_wait_max_ms,
                "enable.partition.eof": False,
            })

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._assigned.clear()

    def assign(self, starts: dict[Partition, int | None]) -> None:
        """Add partitions, each from a next-offset (None: from the beginning)."""
        tps = [TopicPartition(t, p, OFFSET_BEGINNING if o is None else o) for (t, p), o in starts.items()]
        if tps:
            self._live.incremental_assign(tps)
            self._assigned.update({k: 0 for k in starts})
            held = [TopicPartition(t, p) for t, p in starts if t in self._paused]
            free = [TopicPartition(t, p) for t, p in starts if t not in self._paused]
            if held:
                self._live.pause(held)
            if free:
                self._live.resume(free)

    def unassign(self, pairs: Sequence[Partition]) -> None:
        pairs = [p for p in pairs if p in self._assigned]
        if pairs:
            self._live.incremental_unassign([TopicPartition(t, p) for t, p in pairs])
            for p in pairs:
                self._assigned.pop(p, None)

    def assigned(self) -> set[Partition]:
        return set(self._assigned)

    def pause(self, topics: Collection[str]) -> None:
        """Stop fetching the assigned partitions of `topics`, and any of theirs assigned later,
        until resumed."""
        self._paused.update(topics)
        tps = [TopicPartition(t, p) for t, p in self._assigned if t in topics]
        if tps:
            self._live.pause(tps)

    def resume(self, topics: Collection[str]) -> None:
        self._paused.difference_update(topics)
        tps = [TopicPartition(t, p) for t, p in self._assigned if t in topics]
        if tps:
            self._live.resume(tps)

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(self._paused)

    def read(self, max_messages: int, timeout_s: float) -> list[InMessage]:
        if not self._assigned:
            time.sleep(timeout_s)  # nothing to read: wait as a read would, never spin
            return []
        # consume(n, timeout) waits the whole timeout unless n messages arrive, which
        # would add that wait to every task due on arrival: wait for the first
        # message only, then take what else is already there without waiting.
        first = self._live.poll(timeout_s)
        if first is None:
            return []
        out = []
        for msg in [first, *self._live.consume(max_messages - 1, 0)]:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(err)
            # The stubs type these optional (for error events); a message without an error has them all.
            out.append(InMessage(msg.topic(), msg.partition(), msg.offset(), msg.value()))  # type: ignore[arg-type]
        return out

    def lag(self) -> dict[Partition, int]:
        """High watermark minus position, per assigned partition (for the admin view)."""
        if not self._assigned:
            return {}
        tps = [TopicPartition(t, p) for t, p in self._assigned]
        out = {}
        for tp in self._live.position(tps):
            _low, high = self._live.get_watermark_offsets(tp, cached=True) or (0, 0)
            pos = tp.offset if tp.offset >= 0 else 0
            out[(tp.topic, tp.partition)] = max(0, high - pos) if high >= 0 else 0
        return out
