"""A business service's side of the idempotency and outbox tests: its own database, the
order-cancel block, and a child process that stops at a chosen point to be killed there.

The child does its work up to the point under test, writes a flag file (JSON: what it did),
and then parks: it never goes on to commit. The parent waits for the flag (with a deadline),
looks around, and kills it with SIGKILL, so the kill lands exactly between the effect and
its record (or between a relay's submit and its mark). A parked child whose parent is gone,
or that is never killed, leaves with exit code 4 without doing anything more.

    python -m tests.integration.service_proc once-tx       --database D --table T --order N --flag F
    python -m tests.integration.service_proc once-external --database D --table T --key K --flag F
    python -m tests.integration.service_proc relay         --database D --table T --target HOST:PORT
                                                           --batch-size N --flag F
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.processes import ChildProcess
from harness.stack import StackEndpoints
from harness.wait import wait_until
from taskring import Client, SubmitResult, TaskSpec, idempotency, outbox
from taskring.idempotency import Cursor

PARK_LIMIT_S = 120.0

SERVICE_TABLES = (
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE order_events (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_id BIGINT NOT NULL,"
    " event VARCHAR(32) NOT NULL) ENGINE=InnoDB",
    # What another system received: written on a connection of its own, committed at once.
    "CREATE TABLE external_calls (id BIGINT AUTO_INCREMENT PRIMARY KEY, call_key VARCHAR(255) NOT NULL)"
    " ENGINE=InnoDB",
)


@contextlib.contextmanager
def service_database(stack: StackEndpoints) -> Iterator[str]:
    """A database of the service's own for one test, with its tables and both taskring
    tables (under their default names); dropped at the end."""
    name = f"taskring_svc_{uuid.uuid4().hex[:12]}"
    conn = stack.mysql_connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
            cur.execute(f"USE `{name}`")
            for ddl in SERVICE_TABLES:
                cur.execute(ddl)
        idempotency.ensure_table(conn)
        outbox.ensure_outbox_table(conn)
    finally:
        conn.close()
    try:
        yield name
    finally:
        conn = stack.mysql_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()


def cancel_unpaid(order_id: int, after_effect: Callable[[], None] = lambda: None) -> Callable[[Cursor], dict]:
    """The order-cancel block: cancel the order if it is still unpaid (and log an event, so a
    second run would show as a second row); `after_effect` runs once the effect is made."""

    def block(cur: Cursor) -> dict:
        cur.execute("SELECT status FROM orders WHERE id = %s FOR UPDATE", (order_id,))
        (status,) = cur.fetchone()
        if status != "unpaid":
            return {"cancelled": False, "status": status}
        cur.execute("UPDATE orders SET status = 'cancelled' WHERE id = %s", (order_id,))
        cur.execute("INSERT INTO order_events (order_id, event) VALUES (%s, 'cancelled')", (order_id,))
        after_effect()
        return {"cancelled": True, "status": "cancelled"}
    return block


# ---------------------------------------------------------------- the parent's side

def start_parked(mode: str, args: Sequence[str], logs: Path, timeout_s: float = 60.0) -> tuple[ChildProcess, dict]:
    """Start a child in `mode` and wait until it has parked; returns it and what it reported."""
    name = f"{mode}-{uuid.uuid4().hex[:6]}"
    flag = logs / f"{name}.flag"
    child = ChildProcess(name, [sys.executable, "-m", "tests.integration.service_proc", mode, *args,
                                "--flag", str(flag)], logs / f"{name}.log").start()
    try:
        wait_until(lambda: flag.exists() or not child.alive(), timeout_s, f"the {mode} child to park")
        assert child.alive(), child.describe()
    except BaseException:
        child.kill()
        raise
    return child, json.loads(flag.read_text())


# ---------------------------------------------------------------- the child's side

def _park(flag: Path, info: dict[str, Any]) -> None:
    """Report, then wait to be killed; never return."""
    tmp = flag.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, flag)  # the parent never reads half a report
    parent, deadline = os.getppid(), time.monotonic() + PARK_LIMIT_S
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.05)
    os._exit(4)


class _ParkingClient:
    """A client that parks right after its first SubmitBatch has been answered."""

    def __init__(self, client: Client, flag: Path):
        self._client, self._flag = client, flag

    def submit_batch(self, specs: Sequence[TaskSpec], /) -> list[SubmitResult]:
        results = self._client.submit_batch(specs)
        _park(self._flag, {"submitted": [r.task_id for r in results]})
        return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["once-tx", "once-external", "relay"])
    parser.add_argument("--database", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--flag", required=True, type=Path)
    parser.add_argument("--order", type=int)
    parser.add_argument("--key")
    parser.add_argument("--target")
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args()
    stack = StackEndpoints.from_env()

    def connect():
        return stack.mysql_connect(args.database)

    conn = connect()
    if args.mode == "once-tx":
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            (conn_id,) = cur.fetchone()
        block = cancel_unpaid(args.order, lambda: _park(args.flag, {"connection_id": conn_id}))
        idempotency.once(conn, f"order-cancel:{args.order}", block, table=args.table)
    elif args.mode == "once-external":
        other_system = connect()

        def effect() -> dict:
            with other_system.cursor() as cur:
                cur.execute("INSERT INTO external_calls (call_key) VALUES (%s)", (args.key,))
            _park(args.flag, {"called": args.key})
            return {"called": True}
        idempotency.once_external(conn, args.key, effect, table=args.table)
    else:
        with Client(args.target) as client:
            relay = outbox.OutboxRelay(connect, _ParkingClient(client, args.flag), table=args.table,
                                       batch_size=args.batch_size)
            relay.run_once()
    sys.exit(5)  # only a parked child is ever killed: getting here is a failure of the test's setup


if __name__ == "__main__":
    main()
