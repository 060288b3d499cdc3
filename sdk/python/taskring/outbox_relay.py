"""The outbox relay as a process of its own (taskring.outbox.OutboxRelay, run until SIGTERM).

    python -m taskring.outbox_relay --target NODE:PORT --mysql-host H --mysql-port P \\
        --mysql-user U --database D [--table taskring_outbox] [--batch-size 100] [--metrics-port N]

For services that would rather not run the relay in their own process. The password is read
from TASKRING_OUTBOX_MYSQL_PASSWORD (never from the command line). It needs PyMySQL, which the
SDK itself does not depend on. With --metrics-port (and prometheus_client installed) it serves
``taskring_outbox_lag_seconds`` and ``taskring_outbox_relayed_total`` on /metrics. Every 30 s,
and at exit, it prints one line of figures: relayed, duplicates, rejected, lag.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from taskring.outbox import DEFAULT_TABLE, OutboxRelay


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m taskring.outbox_relay", description=__doc__.splitlines()[0])
    p.add_argument("--target", required=True, help="a taskring node's gRPC address")
    p.add_argument("--mysql-host", default="127.0.0.1")
    p.add_argument("--mysql-port", type=int, default=3306)
    p.add_argument("--mysql-user", default="root")
    p.add_argument("--database", required=True, help="the service's database, which holds the outbox table")
    p.add_argument("--table", default=DEFAULT_TABLE)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--poll-interval-s", type=float, default=0.5)
    p.add_argument("--metrics-port", type=int, default=0, help="serve Prometheus /metrics here (0: no)")
    p.add_argument("--report-every-s", type=float, default=30.0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        import pymysql
    except ImportError:
        print("taskring.outbox_relay needs PyMySQL: pip install PyMySQL", file=sys.stderr)
        return 2
    from taskring import Client

    password = os.environ.get("TASKRING_OUTBOX_MYSQL_PASSWORD", "")

    def connect() -> Any:
        return pymysql.connect(host=args.mysql_host, port=args.mysql_port, user=args.mysql_user, password=password,
                               database=args.database, autocommit=False, connect_timeout=10)

    registry = None
    if args.metrics_port:
        from prometheus_client import CollectorRegistry, start_http_server
        registry = CollectorRegistry()
        start_http_server(args.metrics_port, addr="127.0.0.1", registry=registry)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with Client(args.target) as client:
        relay = OutboxRelay(connect, client, table=args.table, batch_size=args.batch_size,
                            poll_interval_s=args.poll_interval_s, registry=registry)
        relay.start()
        print(f"outbox relay: {args.database}.{args.table} -> {args.target}", flush=True)
        try:
            while not stop.wait(args.report_every_s):
                _report(relay)
        finally:
            relay.stop()
            _report(relay)
    return 0


def _report(relay: OutboxRelay) -> None:
    try:
        lag = f"{relay.lag_seconds():.1f}s"
    except Exception as exc:  # the database is away: say so, keep relaying when it is back
        lag = f"unknown ({type(exc).__name__})"
    print(f"outbox relay: relayed {relay.relayed_total}, duplicates {relay.duplicates_total},"
          f" rejected {relay.rejected_total}, lag {lag}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
