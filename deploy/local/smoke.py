"""Smoke check of the local stack: prove each server does real work, and say what was done.

    .venv/bin/python deploy/local/smoke.py

ZooKeeper: create, read and delete a znode. Kafka: produce one message (acks=all) to a fresh
topic and consume it back, then delete the topic. MariaDB: insert and select a row in the
`taskring` database (in a temporary table, so nothing is left behind). Exits non-zero, naming
the server, on the first failure. Ports come from TASKRING_ZK_PORT, TASKRING_KAFKA_PORT and
TASKRING_MYSQL_PORT (defaults 22181, 29092, 23306).
"""
from __future__ import annotations

import logging
import os
import sys
import time
import uuid

HOST = "127.0.0.1"
ZK = f"{HOST}:{os.environ.get('TASKRING_ZK_PORT', '22181')}"
KAFKA = f"{HOST}:{os.environ.get('TASKRING_KAFKA_PORT', '29092')}"
MYSQL_PORT = int(os.environ.get("TASKRING_MYSQL_PORT", "23306"))
TAG = uuid.uuid4().hex[:8]


def zookeeper() -> None:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=ZK, timeout=5)
    zk.start(timeout=10)
    try:
        path = f"/taskring-smoke-{TAG}"
        zk.create(path, b"hello from smoke.py")
        data, stat = zk.get(path)
        assert data == b"hello from smoke.py", data
        zk.delete(path)
        assert zk.exists(path) is None
        print(f"zookeeper {ZK}: created {path}, read {data!r} (czxid {stat.czxid}), deleted it")
    finally:
        zk.stop()
        zk.close()


def kafka() -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"taskring.smoke.{TAG}"
    admin = AdminClient({"bootstrap.servers": KAFKA})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    try:
        deadline = time.monotonic() + 30
        while True:  # creation is asynchronous: wait for the partition's leader
            t = admin.list_topics(topic, timeout=10).topics.get(topic)
            if t is not None and t.error is None and t.partitions and t.partitions[0].leader >= 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic} has no leader after 30s")
            time.sleep(0.1)
        # librdkafka's transient warnings (a fresh broker's "coordinator load in progress: retrying")
        # are not news; errors still show, and a failed produce raises below with its reason.
        rdkafka_log = logging.getLogger("smoke.librdkafka")
        rdkafka_log.setLevel(logging.ERROR)
        rdkafka_log.addHandler(logging.StreamHandler(sys.stderr))
        rdkafka_log.propagate = False
        producer = Producer({"bootstrap.servers": KAFKA, "acks": "all", "enable.idempotence": True},
                            logger=rdkafka_log)
        delivered = []
        value = f"hello from smoke.py {TAG}".encode()
        producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: delivered.append((err, msg)))
        if producer.flush(30) != 0 or not delivered or delivered[0][0] is not None:
            raise RuntimeError(f"produce failed: {delivered}")
        offset = delivered[0][1].offset()
        consumer = Consumer({"bootstrap.servers": KAFKA, "group.id": f"taskring-smoke-{TAG}", "enable.auto.commit": False})
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
        print(f"kafka {KAFKA}: created topic {topic}, produced {value!r} (acks=all) at offset {offset}, "
              f"consumed it back from partition {msg.partition()} offset {msg.offset()}, deleted the topic")
    finally:
        admin.delete_topics([topic])[topic].result(timeout=30)


def mariadb() -> None:
    import pymysql

    conn = pymysql.connect(host=HOST, port=MYSQL_PORT, user="root", database="taskring", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION(), @@tx_isolation")
            version, isolation = cur.fetchone()
            cur.execute("SELECT COUNT(*) FROM schema_migrations")
            (migrations,) = cur.fetchone()
            cur.execute("CREATE TEMPORARY TABLE smoke_check (id INT PRIMARY KEY, note VARCHAR(64), at DATETIME(3))")
            cur.execute("INSERT INTO smoke_check VALUES (1, %s, UTC_TIMESTAMP(3))", (f"smoke {TAG}",))
            cur.execute("SELECT id, note, at FROM smoke_check")
            row = cur.fetchone()
        assert row[0] == 1 and row[1] == f"smoke {TAG}", row
        print(f"mariadb 127.0.0.1:{MYSQL_PORT}: MariaDB {version} ({isolation}), database taskring has "
              f"{migrations} migration(s) applied; inserted and selected {row[:2]} at {row[2]} (temporary table)")
    finally:
        conn.close()


def main() -> int:
    for name, check in (("zookeeper", zookeeper), ("kafka", kafka), ("mariadb", mariadb)):
        try:
            check()
        except Exception as exc:
            print(f"smoke: {name} FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print("smoke: all three servers work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
