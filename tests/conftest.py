"""Fixtures for tests that run against the real local stack (deploy/local/stack.sh up).

The endpoints are harness/stack.py's (the stack's defaults, overridden by TASKRING_STACK_HOST,
TASKRING_ZK_PORT, TASKRING_KAFKA_PORT, TASKRING_MYSQL_PORT, TASKRING_MYSQL_USER,
TASKRING_MYSQL_PASSWORD).

A server that cannot be reached fails the test that needs it, naming the server: an
integration test is never skipped. Nothing here is autouse, so unit tests (tests/unit) do not
touch the stack, except for one guard that acts only around tests that use `stack`: a test that
leaves a server down (a fault test that failed between its stop and its start) fails in its
own teardown, naming the server, and the guard starts the server again, so that one failure
stays one failure instead of erroring every test after it. Each run gets its own ZooKeeper
chroot, MySQL database and Kafka topics, all removed at the end (harness/world.py), so runs
by several engineers against one stack do not collide.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from harness.stack import START_HINT, StackEndpoints, servers_down, stack_problems, start_servers
from harness.world import (
    create_chroot,
    create_database,
    create_topics,
    delete_topics,
    drop_chroot,
    drop_database,
    new_run_id,
)

# The store conformance suite's asserts, rewritten for every module that imports it (its
# runners, and unit tests that build their world with it).
pytest.register_assert_rewrite("tests.conformance")

RUN_ID = new_run_id(12)


@pytest.fixture(scope="session")
def stack() -> StackEndpoints:
    """The local stack's endpoints, after checking that all three servers answer."""
    ep = StackEndpoints.from_env()
    problems = stack_problems(ep)
    if problems:
        pytest.fail("; ".join(problems) + f"; {START_HINT}", pytrace=False)
    return ep


@pytest.fixture(autouse=True)
def _stack_left_up(request) -> Iterator[None]:
    """After a test that used the stack: every server of it still accepts connections."""
    yield
    if "stack" not in request.fixturenames:
        return
    ep = request.getfixturevalue("stack")
    down = servers_down(ep)
    if down:
        failures = start_servers(down)
        pytest.fail(f"this test left {', '.join(down)} down; started again"
                    + ("" if not failures else ", except: " + "; ".join(failures)), pytrace=False)


# ---------------------------------------------------------------- ZooKeeper

@pytest.fixture(scope="session")
def zk_chroot(stack: StackEndpoints) -> Iterator[str]:
    """A chroot path unique to this test run (/taskring-test-<hex>), created and deleted."""
    path = create_chroot(stack, f"/taskring-test-{RUN_ID}")
    yield path
    drop_chroot(stack, path)


@pytest.fixture(scope="session")
def zk_hosts(stack: StackEndpoints, zk_chroot: str) -> str:
    """kazoo hosts string with this run's chroot, e.g. "<host>:<port>/taskring-test-ab12"."""
    return stack.zk_hosts + zk_chroot


# ---------------------------------------------------------------- MySQL (MariaDB)

@pytest.fixture(scope="session")
def mysql_database(stack: StackEndpoints) -> Iterator[str]:
    """A database of its own for this test run, with the migrations applied; dropped at the end."""
    name = create_database(stack, f"taskring_test_{RUN_ID}")
    yield name
    drop_database(stack, name)


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
    created: list[str] = []

    def create(partitions: int = 1, name: str = "t", config: dict[str, str] | None = None) -> str:
        topic = f"taskring-test-{RUN_ID}-{name}-{len(created)}"
        create_topics(stack, [topic], partitions, config)
        created.append(topic)
        return topic

    yield create
    for problem in delete_topics(stack, created):  # cleanup must not hide the test's own result
        print(f"warning: could not delete Kafka {problem}")
