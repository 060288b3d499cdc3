"""Fixtures for tests that run taskring nodes: a private world per test."""
from __future__ import annotations

from typing import Iterator

import pytest
from confluent_kafka.admin import NewTopic
from kazoo.client import KazooClient

from tests.integration.harness import RecordingExecutor, TaskringEnv, new_test_id

PARTITIONS = 16


@pytest.fixture
def taskring_env(stack, tmp_path) -> Iterator[TaskringEnv]:
    """A database, a ZooKeeper chroot and Kafka topics of this test's own."""
    test_id = new_test_id()
    database = stack.create_database(f"taskring_it_{test_id}")
    chroot = f"/taskring-it-{test_id}"
    zk = KazooClient(hosts=stack.zk_hosts)
    zk.start(timeout=15)
    zk.ensure_path(chroot)
    prefix = f"taskring-it-{test_id}"
    admin = stack.kafka_admin()
    topics = [f"{prefix}.{p}" for p in ("high", "normal", "low")]
    for fut in admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1)
                                    for t in topics], operation_timeout=30).values():
        fut.result(timeout=60)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = TaskringEnv(stack=stack, database=database, zk_hosts=stack.zk_hosts + chroot, topic_prefix=prefix,
                      partitions=PARTITIONS, logs=logs)
    try:
        yield env
    finally:
        for fut in admin.delete_topics(topics, operation_timeout=30).values():
            try:
                fut.result(timeout=60)
            except Exception as exc:
                print(f"warning: could not delete a topic: {exc}")
        zk.stop()
        zk.close()
        # A fresh session: the fault matrix's ZooKeeper row outlives the one made at setup.
        zk = KazooClient(hosts=stack.zk_hosts)
        zk.start(timeout=15)
        try:
            zk.delete(chroot, recursive=True)
        finally:
            zk.stop()
            zk.close()
        stack.drop_database(database)


@pytest.fixture
def recording_executor(taskring_env) -> Iterator[RecordingExecutor]:
    executor = RecordingExecutor(taskring_env.zk_hosts).start()
    try:
        yield executor
    finally:
        executor.stop()
