"""Fixtures for tests that run taskring nodes: a private world per test (harness/world.py)."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pymysql
import pytest
from kazoo.client import KazooClient

from harness.executors import RecordingExecutor
from harness.world import World, private_world
from tests.integration.payments import Payments
from tests.integration.service_proc import service_database

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


# ---------------------------------------------------------------- a business service's own database

@pytest.fixture
def service_db(stack) -> Iterator[str]:
    with service_database(stack) as name:
        yield name


@pytest.fixture
def connect(stack, service_db) -> Iterator[Callable[[], pymysql.Connection]]:
    """Autocommit connections to the service's database, closed after the test."""
    conns: list[pymysql.Connection] = []

    def make() -> pymysql.Connection:
        conns.append(stack.mysql_connect(service_db))
        return conns[-1]
    yield make
    for conn in conns:
        try:
            conn.close()
        except Exception:
            pass


@pytest.fixture
def payments(taskring_env) -> Iterator[Payments]:
    """The operations tests' payments service (tests/integration/payments.py), running."""
    p = Payments(taskring_env.zk_hosts)
    p.executor.start()
    yield p
    p.executor.stop(grace_s=2)
