"""Fixtures for tests that run against the real local stack (deploy/local/stack.sh up).

Endpoints come from the environment, with the stack's defaults:
TASKRING_STACK_HOST (127.0.0.1), TASKRING_ZK_PORT (22181), TASKRING_KAFKA_PORT (29092),
TASKRING_MYSQL_PORT (23306), TASKRING_MYSQL_USER (root), TASKRING_MYSQL_PASSWORD (empty).

A server that cannot be reached fails the test that needs it, naming the server: an
integration test is never skipped. Nothing here is autouse, so unit tests (tests/unit) do not
touch the stack. Each run gets its own ZooKeeper chroot, MySQL database and Kafka topics,
all removed at the end, so runs by several engineers against one stack do not collide.
"""
from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator

import pytest

RUN_ID = uuid.uuid4().hex[:12]
START_HINT = "start the stack with `bash deploy/local/stack.sh up` (logs in .stack/logs/)"


@dataclass(frozen=True)
class StackEndpoints:
    host: str = "127.0.0.1"
    zk_port: int = 22181
    kafka_port: int = 29092
    mysql_port: int = 23306
    mysql_user: str = "root"
    mysql_password: str = ""

    @classmethod
    def from_env(cls) -> "StackEndpoints":
        env = os.environ.get
        return cls(
            host=env("TASKRING_STACK_HOST", cls.host),
            zk_port=int(env("TASKRING_ZK_PORT", cls.zk_port)),
            kafka_port=int(env("TASKRING_KAFKA_PORT", cls.kafka_port)),
            mysql_port=int(env("TASKRING_MYSQL_PORT", cls.mysql_port)),
            mysql_user=env("TASKRING_MYSQL_USER", cls.mysql_user),
            mysql_password=env("TASKRING_MYSQL_PASSWORD", cls.mysql_password),
        )

    @property
    def zk_hosts(self) -> str:
        return f"{self.host}:{self.zk_port}"

    @property
    def kafka_bootstrap(self) -> str:
        return f"{self.host}:{self.kafka_port}"

    def mysql_connect(self, database: str | None = None, **kwargs):
        import pymysql

        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 5)
        return pymysql.connect(
            host=self.host,
            port=self.mysql_port,
            user=self.mysql_user,
            password=self.mysql_password,
            database=database,
            **kwargs,
        )

    def create_database(self, name: str) -> str:
        """A new database `name` with every migration applied."""
        from dispatcher.store.migrate import migrate

        conn = self.mysql_connect(autocommit=False)
        try:
            migrate(conn, name)
        finally:
            conn.close()
        return name

    def drop_database(self, name: str) -> None:
        conn = self.mysql_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()

    def kafka_admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.kafka_bootstrap})


def _check_zookeeper(ep: StackEndpoints) -> None:
    with socket.create_connection((ep.host, ep.zk_port), timeout=3) as s:
        s.sendall(b"srvr")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    if b"Mode:" not in data:
        raise RuntimeError(f"`srvr` answered without Mode: {data[:120]!r}")


def _check_kafka(ep: StackEndpoints) -> None:
    md = ep.kafka_admin().list_topics(timeout=10)
    if not md.brokers:
        raise RuntimeError("metadata lists no brokers")


def _check_mysql(ep: StackEndpoints) -> None:
    conn = ep.mysql_connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
    finally:
        conn.close()


@pytest.fixture(scope="session")
def stack() -> StackEndpoints:
    """The local stack's endpoints, after checking that all three servers answer."""
    ep = StackEndpoints.from_env()
    failures = []
    for name, where, check in (
        ("ZooKeeper", ep.zk_hosts, _check_zookeeper),
        ("Kafka", ep.kafka_bootstrap, _check_kafka),
        ("MariaDB", f"{ep.host}:{ep.mysql_port}", _check_mysql),
    ):
        try:
            check(ep)
        except Exception as exc:
            failures.append(f"{name} is not reachable at {where}: {type(exc).__name__}: {exc}")
    if failures:
        pytest.fail("; ".join(failures) + f"; {START_HINT}", pytrace=False)
    return ep


# ---------------------------------------------------------------- ZooKeeper

@pytest.fixture(scope="session")
def zk_chroot(stack: StackEndpoints) -> Iterator[str]:
    """A chroot path unique to this test run (/taskring-test-<hex>), created and deleted."""
    from kazoo.client import KazooClient

    path = f"/taskring-test-{RUN_ID}"
    zk = KazooClient(hosts=stack.zk_hosts, timeout=10)
    zk.start(timeout=15)
    try:
        zk.ensure_path(path)
        yield path
        zk.delete(path, recursive=True)
    finally:
        zk.stop()
        zk.close()


@pytest.fixture(scope="session")
def zk_hosts(stack: StackEndpoints, zk_chroot: str) -> str:
    """kazoo hosts string with this run's chroot, e.g. "127.0.0.1:22181/taskring-test-ab12"."""
    return stack.zk_hosts + zk_chroot


# ---------------------------------------------------------------- MySQL (MariaDB)

@pytest.fixture(scope="session")
def mysql_database(stack: StackEndpoints) -> Iterator[str]:
    """A database of its own for this test run, with the migrations applied; dropped at the end."""
    name = stack.create_database(f"taskring_test_{RUN_ID}")
    yield name
    stack.drop_database(name)


@pytest.fixture
def mysql_connect(stack: StackEndpoints, mysql_database: str) -> Iterator[Callable[..., object]]:
    """Factory of autocommit PyMySQL connections to the test database; closed after the test."""
    conns = []

    def connect(**kwargs):
        conn = stack.mysql_connect(mysql_database, **kwargs)
        conns.append(conn)
        return conn

    yield connect
    for conn in conns:
        try:
            conn.close()
        except Exception:
            pass


# ---------------------------------------------------------------- Kafka

@pytest.fixture
def kafka_topic_factory(stack: StackEndpoints) -> Iterator[Callable[..., str]]:
    """Factory: create a uniquely named topic with N partitions (replication 1), ready to use
    (every partition has a leader); the topics are deleted after the test."""
    from confluent_kafka.admin import NewTopic

    admin = stack.kafka_admin()
    created: list[str] = []

    def create(partitions: int = 1, name: str = "t", config: dict[str, str] | None = None) -> str:
        topic = f"taskring-test-{RUN_ID}-{name}-{len(created)}"
        fut = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})],
            operation_timeout=30,
        )[topic]
        fut.result(timeout=60)
        created.append(topic)
        deadline = time.monotonic() + 30
        while True:
            md = admin.list_topics(topic, timeout=10).topics.get(topic)
            if (
                md is not None
                and md.error is None
                and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())
            ):
                return topic
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka topic {topic}: partitions have no leader after 30s")
            time.sleep(0.05)

    yield create
    if created:
        for topic, fut in admin.delete_topics(created, operation_timeout=30).items():
            try:
                fut.result(timeout=60)
            except Exception as exc:  # cleanup must not hide the test's own result
                print(f"warning: could not delete Kafka topic {topic}: {exc}")
