"""The Kafka log's conformance suite on the in-memory twin (dispatcher/log/memory.py)."""
from __future__ import annotations

import itertools

import pytest

pytest.register_assert_rewrite("tests.log_conformance")

from dispatcher.log.memory import MemoryLog, MemoryProducer, MemoryReader  # noqa: E402
from tests.log_conformance import Backend, LogConformance  # noqa: E402


class TestMemoryLog(LogConformance):
    @pytest.fixture
    def backend(self):
        log = MemoryLog()
        producer = MemoryProducer(log)
        producer.start()
        names = itertools.count()
        yield Backend(producer=producer, new_reader=lambda: MemoryReader(log),
                      new_topic=lambda partitions: f"topic-{next(names)}",
                      new_producer=lambda: MemoryProducer(log))
        producer.stop()
