"""How long one acknowledged produce waits, by the number of partitions it touches.

A benchmark, not a test. A Submit (and a short retry) waits for its messages to be
acknowledged (acks=all, idempotence, lz4, linger 0: the node's producer settings). On
this stack librdkafka sends one ProduceRequest per partition, and the broker answers a
connection's requests one at a time, so a SubmitBatch whose tasks fall in k slots waits
for about k requests in a row, however few messages each carries. This measures that
floor: sends of `--messages` messages spread over 1, 4 and 16 partitions of a fresh
topic, one send in flight at a time, the acknowledgements taken on a poll thread as
the node does (dispatcher/log/kafka.py).

    .venv/bin/python -m loadtest.produce_latency                    # 57 messages a send, 200 sends each
    .venv/bin/python -m loadtest.produce_latency --messages 1 --sends 500

The topic is created for the run and deleted after it.
"""
from __future__ import annotations

import argparse
import pathlib
import threading
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.stack import StackEndpoints
from harness.stats import percentile

REPO = pathlib.Path(__file__).resolve().parents[1]

PARTITIONS = 16


def _counter(messages: int, done: threading.Event):
    """A delivery callback that sets `done` at the last of `messages` acknowledgements."""
    left = [messages]

    def acked(err, _msg) -> None:
        if err is not None:
            raise RuntimeError(f"produce failed: {err}")
        left[0] -= 1
        if left[0] == 0:
            done.set()
    return acked


def measure(producer: Producer, topic: str, partitions: int, messages: int, sends: int) -> list[float]:
    """ms from the first produce() of a send to the last acknowledgement, per send."""
    value = b"x" * 155   # a no-op task's QueuedTask
    out = []
    for _ in range(sends):
        done = threading.Event()
        acked = _counter(messages, done)
        t0 = time.perf_counter()
        for i in range(messages):
            producer.produce(topic, value=value, key=b"k%d" % i, partition=i % partitions, on_delivery=acked)
        if not done.wait(10):
            raise RuntimeError("a send was not acknowledged within 10 s")
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.005)   # one send at a time, as one caller would
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=57, help="messages per send (57: a SubmitBatch of 100 in phase B"
                   " carries about that many immediate and Kafka-path tasks)")
    p.add_argument("--sends", type=int, default=200)
    p.add_argument("--kafka", default=StackEndpoints.from_env().kafka_bootstrap)
    args = p.parse_args()
    topic = f"bench-produce-latency-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": args.kafka, "log_level": 4})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": args.kafka, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "compression.type": "lz4"})
    running = True

    def poll() -> None:
        while running:
            producer.poll(0.05)
    poller = threading.Thread(target=poll, name="produce-latency-poll", daemon=True)
    poller.start()
    try:
        measure(producer, topic, PARTITIONS, PARTITIONS, 20)   # leaders known, connections warm
        print(f"produce_latency: {args.messages} messages a send, {args.sends} sends, one in flight;"
              " ms from the first produce to the last acknowledgement")
        print(f"{'partitions':>10} {'p50':>7} {'p90':>7} {'p99':>7} {'ms per partition (p50)':>24}")
        for partitions in (1, 4, PARTITIONS):
            ms = measure(producer, topic, partitions, args.messages, args.sends)
            p50, p90, p99 = (percentile(ms, p) or 0.0 for p in (50, 90, 99))   # nearest-rank, as every report
            print(f"{partitions:>10} {p50:7.2f} {p90:7.2f} {p99:7.2f} {p50 / partitions:24.2f}")
    finally:
        running = False
        poller.join(2)
        producer.flush(10)
        admin.delete_topics([topic])[topic].result(30)


if __name__ == "__main__":
    main()
