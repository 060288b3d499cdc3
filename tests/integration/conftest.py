"""Fixtures for tests that run taskring nodes: a private world per test (harness/world.py)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from harness.executors import RecordingExecutor
from harness.world import World, private_world

PARTITIONS = 16


@pytest.fixture
def taskring_env(stack, tmp_path) -> Iterator[World]:
    """A database, a ZooKeeper chroot and Kafka topics of this test's own."""
    with private_world(stack, "it", tmp_path / "logs", PARTITIONS) as world:
        yield world


@pytest.fixture
def recording_executor(taskring_env) -> Iterator[RecordingExecutor]:
    executor = RecordingExecutor(taskring_env.zk_hosts).start()
    try:
        yield executor
    finally:
        executor.stop()


@pytest.fixture
def hosts(zk_hosts: str) -> str:
    """ZooKeeper hosts with a chroot of this test's own, under the run's chroot (created,
    so that kazoo does not warn; removed with the run's chroot)."""
    chroot = f"t-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zk_hosts, timeout=5)
    zk.start(timeout=15)
    try:
        zk.ensure_path(f"/{chroot}")
    finally:
        zk.stop()
        zk.close()
    return f"{zk_hosts}/{chroot}"
