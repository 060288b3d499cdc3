"""Readiness, health and setup checks for the local stack; called by deploy/local/stack.sh.

    stackctl.py wait    wait until ZooKeeper, Kafka and MariaDB answer (deadline, dead-process check);
                        --servers zookeeper waits for that one only
    stackctl.py health  one line per server: ok / down, for `stack.sh status`
    stackctl.py topics  create the taskring.tasks.* topics, or grow them to --partitions (idempotent)

Endpoints come from the same environment variables as stack.sh (TASKRING_ZK_PORT,
TASKRING_KAFKA_PORT, TASKRING_MYSQL_PORT); stack.sh also passes each server's PID file and log.
"""
from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import time

HOST = "127.0.0.1"
TOPIC_PREFIX = "taskring.tasks"  # the node's default TASKRING_TOPIC_PREFIX
PRIORITIES = ("high", "normal", "low")


def ports() -> dict[str, int]:
    # stack.sh exports these (deploy/local/endpoints.sh holds the defaults) before it runs us.
    return {
        "zookeeper": int(os.environ["TASKRING_ZK_PORT"]),
        "kafka": int(os.environ["TASKRING_KAFKA_PORT"]),
        "mariadb": int(os.environ["TASKRING_MYSQL_PORT"]),
        "mariadb2": int(os.environ["TASKRING_MYSQL_SHARD2_PORT"]),
    }


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("stackctl.librdkafka")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def check_zookeeper(port: int, timeout: float = 2.0) -> str:
    """Returns the server's mode; raises if `srvr` does not answer with `Mode:`."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(b"srvr")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    raise RuntimeError(f"srvr answered without Mode: {data[:200]!r}")


class KafkaCheck:
    def __init__(self, port: int):
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient(
            {
                "bootstrap.servers": f"{HOST}:{port}",
                "socket.timeout.ms": 2000,
                "reconnect.backoff.ms": 100,
                "reconnect.backoff.max.ms": 500,
                "log.connection.close": False,
            },
            logger=_quiet_logger(),
        )

    def __call__(self, timeout: float = 2.0) -> str:
        md = self.admin.list_topics(timeout=timeout)
        if not md.brokers:
            raise RuntimeError("metadata has no brokers")
        return f"{len(md.brokers)} broker(s), {len(md.topics)} topic(s)"


def check_mariadb(port: int, timeout: float = 2.0) -> str:
    import pymysql

    conn = pymysql.connect(host=HOST, port=port, user="root", connect_timeout=timeout)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1, VERSION()")
            one, version = cur.fetchone()
        if one != 1:
            raise RuntimeError("SELECT 1 did not return 1")
        return version
    finally:
        conn.close()


def _pid_alive(pidfile: str | None) -> bool:
    if not pidfile:
        return True
    try:
        pid = int(open(pidfile).read().strip())
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


def _tail(path: str | None, lines: int = 25) -> str:
    if not path or not os.path.exists(path):
        return "(no log)"
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def cmd_wait(args: argparse.Namespace) -> int:
    p = ports()
    kafka: list[KafkaCheck] = []  # created on first use: only `wait` for Kafka pays its import

    def check_kafka() -> str:
        if not kafka:
            kafka.append(KafkaCheck(p["kafka"]))
        return kafka[0](timeout=0.5)

    checks = {
        "zookeeper": lambda: check_zookeeper(p["zookeeper"]),
        "kafka": check_kafka,
        "mariadb": lambda: check_mariadb(p["mariadb"]),
        "mariadb2": lambda: check_mariadb(p["mariadb2"]),
    }
    unknown = set(args.servers) - set(checks)
    if unknown:
        print(f"stack: unknown server(s) {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    checks = {name: check for name, check in checks.items() if name in args.servers}
    start = time.monotonic()
    deadline = start + args.timeout
    pending = dict(checks)
    last_error: dict[str, str] = {}
    while pending:
        for name, check in list(pending.items()):
            pidfile = os.environ.get(f"STACK_{name.upper()}_PID")
            logfile = os.environ.get(f"STACK_{name.upper()}_LOG")
            if not _pid_alive(pidfile):
                print(f"stack: {name} exited before it was ready (port {p[name]}); log: {logfile}", file=sys.stderr)
                print(_tail(logfile), file=sys.stderr)
                return 1
            try:
                detail = check()
            except Exception as exc:  # not ready yet
                last_error[name] = f"{type(exc).__name__}: {exc}"
                continue
            del pending[name]
            print(f"stack: {name:9} ready on {HOST}:{p[name]} after {time.monotonic() - start:5.1f}s ({detail})")
        if not pending:
            break
        if time.monotonic() > deadline:
            for name in pending:
                logfile = os.environ.get(f"STACK_{name.upper()}_LOG")
                print(
                    f"stack: {name} not ready on {HOST}:{p[name]} after {args.timeout:.0f}s"
                    f" (last error: {last_error.get(name)}); log: {logfile}",
                    file=sys.stderr,
                )
                print(_tail(logfile), file=sys.stderr)
            return 1
        time.sleep(0.2)
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    p = ports()
    bad = 0
    for name, check in (
        ("zookeeper", lambda: "mode " + check_zookeeper(p["zookeeper"])),
        ("kafka", lambda: KafkaCheck(p["kafka"])(timeout=3.0)),
        ("mariadb", lambda: "version " + check_mariadb(p["mariadb"])),
        ("mariadb2", lambda: "version " + check_mariadb(p["mariadb2"])),
    ):
        try:
            print(f"{name} ok {check()}")
        except Exception as exc:
            bad += 1
            print(f"{name} down {type(exc).__name__}: {exc}")
    return 1 if bad else 0


def cmd_topics(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewPartitions, NewTopic

    topics = [f"{args.prefix}.{p}" for p in PRIORITIES]
    admin = KafkaCheck(ports()["kafka"]).admin
    existing = admin.list_topics(timeout=10).topics
    wanted = [t for t in topics if t not in existing]
    grow: dict[str, int] = {}
    for t in topics:
        if t in existing:
            have = len(existing[t].partitions)
            if have < args.partitions:
                # A node of P slots produces to partitions 0..P-1: against a topic of fewer, the
                # tasks of the missing slots could not be submitted. Kafka adds partitions (it can
                # never remove them), so a topic made by an older `up` with fewer is grown.
                grow[t] = have
            elif have > args.partitions:
                print(f"stack: topic {t} exists with {have} partitions, more than {args.partitions}"
                      f" (Kafka cannot remove partitions; nodes of {args.partitions} slots use the first"
                      f" {args.partitions}; delete the topic to start over)")
            else:
                print(f"stack: topic {t} exists with {have} partitions")
    if grow:
        futures = admin.create_partitions([NewPartitions(t, args.partitions) for t in grow],
                                          operation_timeout=30, request_timeout=30)
        for t, fut in futures.items():
            fut.result(timeout=60)
            print(f"stack: topic {t} grown from {grow[t]} to {args.partitions} partitions (TASKRING_PARTITIONS);"
                  " new tasks of a type may land in another slot than before")
    if wanted:
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=args.partitions, replication_factor=1) for t in wanted],
            operation_timeout=30,
            request_timeout=30,
        )
        for t, fut in futures.items():
            try:
                fut.result(timeout=60)
                print(f"stack: topic {t} created with {args.partitions} partitions, replication 1")
            except KafkaException as exc:
                if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                    raise
                print(f"stack: topic {t} exists")
    # Creation and growth are asynchronous on the broker: wait until every partition has a leader.
    deadline = time.monotonic() + 60
    while True:
        md = admin.list_topics(timeout=10).topics
        if all(t in md and len(md[t].partitions) >= args.partitions
               and all(pm.leader >= 0 for pm in md[t].partitions.values()) for t in topics):
            return 0
        if time.monotonic() > deadline:
            print(f"stack: kafka topics {', '.join(topics)} do not all have {args.partitions} partitions with"
                  " leaders after 60s", file=sys.stderr)
            return 1
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wait")
    w.add_argument("--timeout", type=float, default=120.0)
    w.add_argument("--servers", type=lambda v: [x for x in v.split(",") if x],
                   default=["zookeeper", "kafka", "mariadb", "mariadb2"], help="comma-separated; default all")
    w.set_defaults(func=cmd_wait)
    h = sub.add_parser("health")
    h.set_defaults(func=cmd_health)
    t = sub.add_parser("topics")
    # The node's default slot count (dispatcher/base/config.py): the topics must have at least as many.
    t.add_argument("--partitions", type=int, default=int(os.environ.get("TASKRING_PARTITIONS", "64")))
    t.add_argument("--prefix", default=TOPIC_PREFIX, help=f"topics <prefix>.high|normal|low; default {TOPIC_PREFIX}")
    t.set_defaults(func=cmd_topics)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
