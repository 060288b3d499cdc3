"""A private world on the shared stack: a ZooKeeper chroot, a MariaDB database and Kafka
topics (`<prefix>.{high,normal,low}`) of one test, benchmark or run, created and dropped.

Several engineers run against one stack at once: everything a run makes is named after
it, and removed at the end, so runs neither collide nor leave anything behind.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from dispatcher.base.config import PRIORITY_TOPICS
from harness.stack import CLUSTER_CHROOT, CLUSTER_DATABASE, StackEndpoints
from harness.wait import wait_until

PRIORITIES = tuple(PRIORITY_TOPICS[p] for p in sorted(PRIORITY_TOPICS, reverse=True))  # high, normal, low


def new_run_id(length: int = 10) -> str:
    return uuid.uuid4().hex[:length]


@dataclasses.dataclass
class World:
    """Where a node of this world finds its servers, and a window on its database."""

    stack: StackEndpoints
    database: str
    zk_hosts: str                 # with the world's chroot
    topic_prefix: str | None      # None: the node's default
    partitions: int | None        # None: the node's default
    logs: Path
    kafka: str | None = None      # None: the stack's
    shards: int = 1
    """1: the task store on the stack's MariaDB; 2: split by slot over it and the second
    server (the same database name on both; dispatcher/store/sharded.py)."""

    def shard_stack(self, shard: int) -> StackEndpoints:
        """The endpoints whose MySQL server holds `shard`."""
        if not 0 <= shard < self.shards:
            raise ValueError(f"shard {shard} of a world with {self.shards} shard(s)")
        return self.stack if shard == 0 else self.stack.second_shard()

    @property
    def kafka_bootstrap(self) -> str:
        return self.kafka or self.stack.kafka_bootstrap

    @property
    def topics(self) -> list[str]:
        return [f"{self.topic_prefix}.{p}" for p in PRIORITIES]

    def node_env(self, **extra: str) -> dict[str, str]:
        """The environment of a `taskring node` in this world (this process's, plus ours)."""
        env = dict(os.environ)
        env.update({
            "TASKRING_ZK": self.zk_hosts,
            "TASKRING_KAFKA": self.kafka_bootstrap,
            "TASKRING_MYSQL_HOST": self.stack.host,
            "TASKRING_MYSQL_PORT": str(self.stack.mysql_port),
            "TASKRING_MYSQL_USER": self.stack.mysql_user,
            "TASKRING_MYSQL_PASSWORD": self.stack.mysql_password,
            "TASKRING_MYSQL_DATABASE": self.database,
        })
        if self.shards > 1:
            env["TASKRING_MYSQL_SHARDS"] = f"{self.stack.host}:{self.stack.mysql_shard2_port}/{self.database}"
        if self.topic_prefix is not None:
            env["TASKRING_TOPIC_PREFIX"] = self.topic_prefix
        if self.partitions is not None:
            env["TASKRING_PARTITIONS"] = str(self.partitions)
        env.update(extra)
        return env

    def sql(self, query: str, args=(), shard: int = 0, **connect) -> list[tuple]:
        conn = self.shard_stack(shard).mysql_connect(self.database, **connect)
        try:
            with conn.cursor() as cur:
                cur.execute(query, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def sql_all(self, query: str, args=()) -> list[tuple]:
        """`query` on every shard, the rows one after another (shard 0's first)."""
        return [row for shard in range(self.shards) for row in self.sql(query, args, shard=shard)]

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, n in self.sql_all("SELECT status, COUNT(*) FROM tasks GROUP BY status"):
            counts[status] = counts.get(status, 0) + n
        return counts

    def epochs(self) -> dict[int, int]:
        return dict(self.sql_all("SELECT slot, epoch FROM slot_owners"))


# ---------------------------------------------------------------- the pieces

def create_database(stack: StackEndpoints, name: str) -> str:
    """A new database `name` with every migration applied."""
    from dispatcher.store.migrate import migrate

    conn = stack.mysql_connect(autocommit=False)
    try:
        migrate(conn, name)
    finally:
        conn.close()
    return name


def drop_database(stack: StackEndpoints, name: str) -> None:
    conn = stack.mysql_connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def create_chroot(stack: StackEndpoints, path: str) -> str:
    zk = stack.zk_client()
    try:
        zk.ensure_path(path)
    finally:
        zk.stop()
        zk.close()
    return path


def drop_chroot(stack: StackEndpoints, path: str) -> None:
    # A fresh session: the one that made the chroot may be long gone (a fault test expires sessions).
    zk = stack.zk_client()
    try:
        zk.delete(path, recursive=True)
    finally:
        zk.stop()
        zk.close()


def create_topics(stack: StackEndpoints, names: list[str], partitions: int,
                  config: dict[str, str] | None = None, ready_timeout_s: float = 30.0) -> list[str]:
    """Create the topics (replication 1) and wait until every partition has a leader."""
    from confluent_kafka.admin import NewTopic

    admin = stack.kafka_admin()
    futures = admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1, config=config or {})
                                   for t in names], operation_timeout=30)
    for fut in futures.values():
        fut.result(timeout=60)

    def led(topic: str) -> bool:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        return (md is not None and md.error is None and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values()))
    wait_until(lambda: all(led(t) for t in names), ready_timeout_s, f"a leader for every partition of {names}")
    return names


def delete_topics(stack: StackEndpoints, names: list[str]) -> list[str]:
    """Delete the topics; returns the problems met (a cleanup must not hide a run's own result)."""
    problems = []
    if names:
        admin = stack.kafka_admin()  # held while the futures run: a dropped client cancels them
        for topic, fut in admin.delete_topics(names, operation_timeout=30).items():
            try:
                fut.result(timeout=60)
            except Exception as exc:
                problems.append(f"topic {topic}: {exc}")
    return problems


# ---------------------------------------------------------------- a whole world

def create_world(stack: StackEndpoints, kind: str, logs: Path, partitions: int = 16,
                 run_id: str | None = None, shards: int = 1) -> World:
    """Database `taskring_<kind>_<id>` (on both MariaDB servers when `shards` is 2), chroot
    `/taskring-<kind>-<id>`, topics `taskring-<kind>-<id>.*`."""
    if shards not in (1, 2):
        raise ValueError(f"the local stack has two MariaDB servers: shards must be 1 or 2, got {shards}")
    run_id = run_id or new_run_id()
    name = f"taskring-{kind}-{run_id}"
    database = create_database(stack, f"taskring_{kind.replace('-', '_')}_{run_id}")
    if shards == 2:
        create_database(stack.second_shard(), database)
    chroot = create_chroot(stack, "/" + name)
    world = World(stack=stack, database=database, zk_hosts=stack.zk_hosts + chroot, topic_prefix=name,
                  partitions=partitions, logs=logs, shards=shards)
    create_topics(stack, world.topics, partitions)
    logs.mkdir(parents=True, exist_ok=True)
    return world


def chroot_of(world: World) -> str:
    return world.zk_hosts[len(world.stack.zk_hosts):]


def drop_world(world: World) -> list[str]:
    """Remove the world's topics, chroot and database; returns the problems met (never raises)."""
    problems = delete_topics(world.stack, world.topics)
    drops: list[tuple[str, Callable[[], None]]] = [
        (f"chroot {chroot_of(world)}", lambda: drop_chroot(world.stack, chroot_of(world)))]
    for shard in range(world.shards):
        where = world.shard_stack(shard)
        drops.append((f"database {world.database} on {where.mysql_address}",
                      functools.partial(drop_database, where, world.database)))
    for what, drop in drops:
        try:
            drop()
        except Exception as exc:
            problems.append(f"{what}: {exc}")
    return problems


@contextlib.contextmanager
def private_world(stack: StackEndpoints, kind: str, logs: Path, partitions: int = 16,
                  shards: int = 1) -> Iterator[World]:
    world = create_world(stack, kind, logs, partitions, shards=shards)
    try:
        yield world
    finally:
        for problem in drop_world(world):
            print(f"warning: could not drop {problem}")


def cluster_world(stack: StackEndpoints, logs: Path) -> World:
    """The stack's own cluster world (chroot /taskring, database taskring, the node's
    default topics): shared, never created or dropped here."""
    return World(stack=stack, database=CLUSTER_DATABASE, zk_hosts=stack.zk_hosts + CLUSTER_CHROOT,
                 topic_prefix=None, partitions=None, logs=logs)


