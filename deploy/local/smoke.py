"""Smoke check of the local stack: prove each server does real work, and say what was done.

    .venv/bin/python deploy/local/smoke.py

ZooKeeper: create, read and delete a znode. Kafka: produce one message (acks=all) to a fresh
topic and consume it back, then delete the topic. MariaDB: insert and select a row in the
`taskring` database (in a temporary table, so nothing is left behind). Exits non-zero, naming
the server, on the first failure. The endpoints are harness/stack.py's (the stack's defaults,
TASKRING_ZK_PORT, TASKRING_KAFKA_PORT, TASKRING_MYSQL_PORT, ... override them).
"""
from __future__ import annotations

import logging
import sys
import time
import uuid

from harness.stack import CLUSTER_DATABASE, StackEndpoints
from harness.world import create_topics, delete_topics


def zookeeper(stack: StackEndpoints, tag: str) -> None:
    zk = stack.zk_client(timeout=5)
    try:
        path = f"/taskring-smoke-{tag}"
        zk.create(path, b"hello from smoke.py")
        data, stat = zk.get(path)
        assert data == b"hello from smoke.py", data
        zk.delete(path)
        assert zk.exists(path) is None
        print(f"zookeeper {stack.zk_hosts}: created {path}, read {data!r} (czxid {stat.czxid}), deleted it")
    finally:
        zk.stop()
        zk.close()


def kafka(stack: StackEndpoints, tag: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    topic = f"taskring.smoke.{tag}"
    create_topics(stack, [topic], 1)  # and waits for the partition's leader: creation is asynchronous
    try:
        # librdkafka's transient warnings (a fresh broker's "coordinator load in progress: retrying")
        # are not news; errors still show, and a failed produce raises below with its reason.
        rdkafka_log = logging.getLogger("smoke.librdkafka")
        rdkafka_log.setLevel(logging.ERROR)
        rdkafka_log.addHandler(logging.StreamHandler(sys.stderr))
        rdkafka_log.propagate = False
        producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "acks": "all", "enable.idempotence": True},
                            logger=rdkafka_log)
        delivered = []
        value = f"hello from smoke.py {tag}".encode()
        producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: delivered.append((err, msg)))
        if producer.flush(30) != 0 or not delivered or delivered[0][0] is not None:
            raise RuntimeError(f"produce failed: {delivered}")
        offset = delivered[0][1].offset()
        consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"taskring-smoke-{tag}",
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + 30
            while True:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    break
                if msg is not None and msg.error() is not None:
                    raise RuntimeError(f"consume failed: {msg.error()}")
                if time.monotonic() > deadline:
                    raise RuntimeError("no message consumed within 30s")
        finally:
            consumer.close()
        assert msg.value() == value, msg.value()
        print(f"kafka {stack.kafka_bootstrap}: created topic {topic}, produced {value!r} (acks=all)"
              f" at offset {offset}, consumed it back from partition {msg.partition()} offset {msg.offset()},"
              " deleted the topic")
    finally:
        problems = delete_topics(stack, [topic])
        if problems:
            raise RuntimeError("; ".join(problems))


def mariadb(stack: StackEndpoints, tag: str) -> None:
    conn = stack.mysql_connect(CLUSTER_DATABASE)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION(), @@tx_isolation")
            version, isolation = cur.fetchone()
            cur.execute("SELECT COUNT(*) FROM schema_migrations")
            (migrations,) = cur.fetchone()
            cur.execute("CREATE TEMPORARY TABLE smoke_check (id INT PRIMARY KEY, note VARCHAR(64), at DATETIME(3))")
            cur.execute("INSERT INTO smoke_check VALUES (1, %s, UTC_TIMESTAMP(3))", (f"smoke {tag}",))
            cur.execute("SELECT id, note, at FROM smoke_check")
            row = cur.fetchone()
        assert row[0] == 1 and row[1] == f"smoke {tag}", row
        print(f"mariadb {stack.mysql_address}: MariaDB {version} ({isolation}), database {CLUSTER_DATABASE} has "
              f"{migrations} migration(s) applied; inserted and selected {row[:2]} at {row[2]} (temporary table)")
    finally:
        conn.close()


def main() -> int:
    stack, tag = StackEndpoints.from_env(), uuid.uuid4().hex[:8]
    for name, check in (("zookeeper", zookeeper), ("kafka", kafka), ("mariadb", mariadb)):
        try:
            check(stack, tag)
        except Exception as exc:
            print(f"smoke: {name} FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print("smoke: all three servers work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
