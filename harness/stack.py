"""Where the local stack (`deploy/local/stack.sh up`) answers, read in one place.

The defaults are the node's own (dispatcher/base/config.py), so a node started with no
TASKRING_* variables and the tools here agree on the same servers. The environment
overrides them with the variables stack.sh itself reads: TASKRING_STACK_HOST,
TASKRING_ZK_PORT, TASKRING_KAFKA_PORT, TASKRING_MYSQL_PORT, TASKRING_MYSQL_SHARD2_PORT,
TASKRING_MYSQL_USER, TASKRING_MYSQL_PASSWORD.
"""
from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Mapping

from dispatcher.base.config import KafkaConfig, MySQLConfig, ZooKeeperConfig


def _host_port(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host, int(port)


_ZK_HOSTS, _, _ZK_CHROOT = ZooKeeperConfig.hosts.partition("/")
_MYSQL = MySQLConfig()

DEFAULT_HOST = _MYSQL.host
DEFAULT_ZK_PORT = _host_port(_ZK_HOSTS)[1]
DEFAULT_KAFKA_PORT = _host_port(KafkaConfig.bootstrap_servers)[1]
DEFAULT_MYSQL_PORT = _MYSQL.port
DEFAULT_MYSQL_SHARD2_PORT = 23307
"""The stack's second MariaDB server: shard 1 of a store split by slot (stack.sh `mariadb2`)."""
CLUSTER_CHROOT = "/" + _ZK_CHROOT
"""The chroot of the stack's own cluster (the node's default), e.g. the demo's."""
CLUSTER_DATABASE = _MYSQL.database
"""The stack's own database (created by stack.sh), e.g. the demo's."""


@dataclasses.dataclass(frozen=True)
class StackEndpoints:
    host: str = DEFAULT_HOST
    zk_port: int = DEFAULT_ZK_PORT
    kafka_port: int = DEFAULT_KAFKA_PORT
    mysql_port: int = DEFAULT_MYSQL_PORT
    mysql_shard2_port: int = DEFAULT_MYSQL_SHARD2_PORT
    mysql_user: str = _MYSQL.user
    mysql_password: str = dataclasses.field(default=_MYSQL.password, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StackEndpoints:
        get = (os.environ if env is None else env).get
        return cls(
            host=get("TASKRING_STACK_HOST", cls.host),
            zk_port=int(get("TASKRING_ZK_PORT", cls.zk_port)),
            kafka_port=int(get("TASKRING_KAFKA_PORT", cls.kafka_port)),
            mysql_port=int(get("TASKRING_MYSQL_PORT", cls.mysql_port)),
            mysql_shard2_port=int(get("TASKRING_MYSQL_SHARD2_PORT", cls.mysql_shard2_port)),
            mysql_user=get("TASKRING_MYSQL_USER", cls.mysql_user),
            mysql_password=get("TASKRING_MYSQL_PASSWORD", cls.mysql_password),
        )

    @property
    def zk_hosts(self) -> str:
        """ZooKeeper's connect string without a chroot."""
        return f"{self.host}:{self.zk_port}"

    @property
    def kafka_bootstrap(self) -> str:
        return f"{self.host}:{self.kafka_port}"

    @property
    def mysql_address(self) -> str:
        return f"{self.host}:{self.mysql_port}"

    def second_shard(self) -> StackEndpoints:
        """These endpoints with the second MariaDB server as the MySQL one."""
        return dataclasses.replace(self, mysql_port=self.mysql_shard2_port)

    def mysql_connect(self, database: str | None = None, **kwargs):
        import pymysql

        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 5)
        return pymysql.connect(host=self.host, port=self.mysql_port, user=self.mysql_user,
                               password=self.mysql_password, database=database, **kwargs)

    def kafka_admin(self, **config):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.kafka_bootstrap, **config})

    def zk_client(self, chroot: str = "", **kwargs):
        """A started KazooClient (the caller stops and closes it)."""
        from kazoo.client import KazooClient

        kwargs.setdefault("timeout", 10)
        client = KazooClient(hosts=self.zk_hosts + chroot, **kwargs)
        client.start(timeout=15)
        return client


# ---------------------------------------------------------------- is it up?

def _check_zookeeper(ep: StackEndpoints) -> None:
    with socket.create_connection((ep.host, ep.zk_port), timeout=3) as s:
        s.sendall(b"srvr")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    if b"Mode:" not in data:
        raise RuntimeError(f"`srvr` answered without Mode: {data[:120]!r}")


def _check_kafka(ep: StackEndpoints) -> None:
    if not ep.kafka_admin().list_topics(timeout=10).brokers:
        raise RuntimeError("metadata lists no brokers")


def _check_mysql(ep: StackEndpoints) -> None:
    conn = ep.mysql_connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
    finally:
        conn.close()


START_HINT = "start the stack with `bash deploy/local/stack.sh up` (logs in .stack/logs/)"


def stack_problems(ep: StackEndpoints) -> list[str]:
    """What of the stack does not answer, one line per server (empty: all of them do)."""
    problems = []
    for name, where, check in (("ZooKeeper", ep.zk_hosts, _check_zookeeper),
                               ("Kafka", ep.kafka_bootstrap, _check_kafka),
                               ("MariaDB", ep.mysql_address, _check_mysql),
                               ("MariaDB (second shard)", ep.second_shard().mysql_address,
                                lambda e: _check_mysql(e.second_shard()))):
        try:
            check(ep)
        except Exception as exc:
            problems.append(f"{name} is not reachable at {where}: {type(exc).__name__}: {exc}")
    return problems


# ---------------------------------------------------------------- put back what a test left down

STACK_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "deploy", "local", "stack.sh")


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def servers_down(ep: StackEndpoints) -> list[str]:
    """The stack.sh names of the servers whose port refuses a connection (a cheap check, one
    connect each: a server that was stopped or killed and not started again)."""
    ports = {"zookeeper": ep.zk_port, "kafka": ep.kafka_port, "mariadb": ep.mysql_port,
             "mariadb2": ep.mysql_shard2_port}
    return [name for name, port in ports.items() if not _accepts(ep.host, port)]


def start_servers(names: list[str], timeout_s: float = 300.0) -> list[str]:
    """`stack.sh start NAME` for each (idempotent); returns one line per server that would not
    start, with the script's own error (which ends with the server's log)."""
    import subprocess

    failures = []
    for name in names:
        out = subprocess.run(["bash", STACK_SCRIPT, "start", name], capture_output=True, text=True,
                             timeout=timeout_s)
        if out.returncode != 0:
            failures.append(f"{name}: {out.stderr.strip() or out.stdout.strip()}")
    return failures
