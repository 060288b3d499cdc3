"""The real Kafka broker does what the dispatcher's Kafka path relies on: messages produced with
acks=all to chosen partitions (partition = slot) are all read back, in order per partition, by a
consumer with manually assigned partitions (no group rebalancing)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from harness.world import delete_topics, new_run_id

pytestmark = pytest.mark.integration

PARTITIONS = 4
MESSAGES = 2_000
DEADLINE_S = 60.0
STACKCTL = Path(__file__).resolve().parents[2] / "deploy" / "local" / "stackctl.py"


def test_produced_messages_arrive_complete_and_in_order_per_partition(stack, kafka_topic_factory):
    # Given a fresh topic with several partitions
    topic = kafka_topic_factory(partitions=PARTITIONS, name="order")

    # When N messages are produced with acks=all, each to a chosen partition
    producer = Producer(
        {
            "bootstrap.servers": stack.kafka_bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    delivered: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    errors = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.partition()].append((msg.offset(), msg.value()))

    for i in range(MESSAGES):
        partition = (i * 7) % PARTITIONS  # uneven interleaving across partitions
        value = f"{partition}:{len(sent[partition])}:{i}".encode()
        sent[partition].append(value)
        producer.produce(topic, key=str(i).encode(), value=value, partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(DEADLINE_S) == 0, "producer could not deliver everything before the deadline"
    assert errors == []
    for p in range(PARTITIONS):
        offsets = [o for o, _ in delivered[p]]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets), f"partition {p} offsets {offsets[:20]}"

    # ... and read back by a consumer with manually assigned partitions
    consumer = Consumer(
        {
            "bootstrap.servers": stack.kafka_bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    received: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        total = 0
        while total < MESSAGES:
            assert time.monotonic() < deadline, f"only {total} of {MESSAGES} messages consumed within {DEADLINE_S}s"
            for msg in consumer.consume(num_messages=500, timeout=1.0):
                assert msg.error() is None, msg.error()
                got_partition, got_value = msg.partition(), msg.value()
                assert got_partition is not None and got_value is not None, "a consumed message has both"
                received[got_partition].append(got_value)
                total += 1
    finally:
        consumer.close()

    # Then every message arrives exactly once, in the order it was produced within its partition
    for p in range(PARTITIONS):
        assert received[p] == sent[p], f"partition {p}: order or content differs"
    assert sum(len(v) for v in received.values()) == MESSAGES


def test_stackctl_topics_creates_grows_a_smaller_topic_and_never_shrinks_one(stack):
    # `stack.sh up` runs `stackctl.py topics --partitions $TASKRING_PARTITIONS`; a machine that ran an
    # older stack has topics of 16 partitions while the nodes now default to 64 slots. Tried here on
    # throwaway topics of the same shape (<prefix>.high|normal|low), never on the stack's own.
    prefix = f"taskring-test-grow-{new_run_id()}"
    topics = [f"{prefix}.{p}" for p in ("high", "normal", "low")]
    env = dict(os.environ, TASKRING_ZK_PORT=str(stack.zk_port), TASKRING_KAFKA_PORT=str(stack.kafka_port),
               TASKRING_MYSQL_PORT=str(stack.mysql_port), TASKRING_MYSQL_SHARD2_PORT=str(stack.mysql_shard2_port))

    def topics_cmd(partitions: int) -> str:
        done = subprocess.run([sys.executable, str(STACKCTL), "topics", "--prefix", prefix, "--partitions",
                               str(partitions)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def counts() -> list[int]:
        md = stack.kafka_admin().list_topics(timeout=10).topics
        return [len(md[t].partitions) for t in topics]

    try:
        # Given the topics as an older `up` made them
        assert "created with 4 partitions" in topics_cmd(4)
        assert counts() == [4, 4, 4]

        # When `up` runs again with more: each topic is grown, and the output says so
        out = topics_cmd(8)
        assert counts() == [8, 8, 8]
        assert all(f"topic {t} grown from 4 to 8 partitions" in out for t in topics), out

        # ... and again with the same count: nothing changes
        assert all(f"topic {t} exists with 8 partitions\n" in topics_cmd(8) for t in topics)

        # Then fewer than the topic has leaves it as it is (Kafka cannot remove partitions) and says so
        out = topics_cmd(4)
        assert counts() == [8, 8, 8]
        assert all(f"topic {t} exists with 8 partitions, more than 4" in out for t in topics), out
    finally:
        for problem in delete_topics(stack, topics):
            print(f"warning: could not delete Kafka {problem}")
