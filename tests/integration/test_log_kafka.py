"""The Kafka log's conformance suite on the local stack's broker: TaskProducer and
PartitionReader (dispatcher/log/kafka.py), a fresh topic per case."""
from __future__ import annotations

import uuid

import pytest

pytest.register_assert_rewrite("tests.log_conformance")

from dispatcher.base.config import KafkaConfig  # noqa: E402
from dispatcher.log.kafka import PartitionReader, TaskProducer  # noqa: E402
from tests.log_conformance import Backend, LogConformance  # noqa: E402

pytestmark = pytest.mark.integration


class TestKafkaLog(LogConformance):
    @pytest.fixture
    def backend(self, stack, kafka_topic_factory):
        config = KafkaConfig(bootstrap_servers=stack.kafka_bootstrap, linger_ms=1)
        producer = TaskProducer(config)
        producer.start()
        readers: list[PartitionReader] = []

        def new_reader() -> PartitionReader:
            readers.append(PartitionReader(config, group_id=f"log-conformance-{uuid.uuid4().hex[:8]}"))
            return readers[-1]

        yield Backend(producer=producer, new_reader=new_reader,
                      new_topic=lambda partitions: kafka_topic_factory(partitions=partitions, name="log"),
                      new_producer=lambda: TaskProducer(config))
        producer.stop()
        for reader in readers:
            reader.stop()
