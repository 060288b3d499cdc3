"""The real MariaDB does what the dispatcher's MySQL poller relies on: two pollers claiming due
rows with `SELECT ... FOR UPDATE SKIP LOCKED` + `UPDATE` in transactions never claim the same
row, never wait on each other's locks, and between them claim every row.

Run under both isolation levels the code may meet: the server's default, REPEATABLE-READ
(MariaDB's default, as in the stack's my.cnf), and READ-COMMITTED, set per session.
"""
from __future__ import annotations

import threading
import time
import uuid

import pymysql
import pytest

pytestmark = pytest.mark.integration

ROWS = 1_000
BATCH = 25
DEADLINE_S = 60.0
RETRYABLE = {1213, 1205}  # deadlock, lock wait timeout: roll back and poll again


@pytest.mark.parametrize("isolation", ["REPEATABLE-READ", "READ-COMMITTED"])
def test_two_pollers_claim_disjoint_batches_covering_every_row(mysql_connect, isolation):
    # Given 1,000 pending rows in a table of the test database
    table = f"claim_{uuid.uuid4().hex[:8]}"
    admin = mysql_connect()
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.tx_isolation")
        (server_default,) = cur.fetchone()
        assert server_default == "REPEATABLE-READ", "the stack's MariaDB should run with its default isolation"
        cur.execute(
            f"CREATE TABLE `{table}` ("
            " id BIGINT UNSIGNED NOT NULL PRIMARY KEY,"
            " status VARCHAR(16) NOT NULL,"
            " claimed_by VARCHAR(16) NULL,"
            " KEY status_id (status, id)) ENGINE=InnoDB"
        )
        cur.executemany(f"INSERT INTO `{table}` (id, status) VALUES (%s, 'pending')",
                        [(i,) for i in range(1, ROWS + 1)])
        cur.execute(f"SELECT COUNT(*) FROM `{table}` WHERE status = 'pending'")
        assert cur.fetchone()[0] == ROWS

    claimed: dict[str, list[int]] = {"a": [], "b": []}
    retries: dict[str, int] = {"a": 0, "b": 0}
    failures: list[str] = []
    first_batch_held = {"a": threading.Event(), "b": threading.Event()}
    start = threading.Barrier(2, timeout=DEADLINE_S)

    def poller(name: str, other: str) -> None:
        try:
            conn = mysql_connect()
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION tx_isolation = '{isolation}'")
                cur.execute("SELECT @@tx_isolation")
                assert cur.fetchone()[0] == isolation
            start.wait()
            first = True
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                try:
                    conn.begin()
                    with conn.cursor() as cur:
                        cur.execute(
                            f"SELECT id FROM `{table}` WHERE status = 'pending' ORDER BY id LIMIT %s"
                            " FOR UPDATE SKIP LOCKED",
                            (BATCH,),
                        )
                        ids = [row[0] for row in cur.fetchall()]
                        if not ids:
                            conn.rollback()
                            # Nothing unlocked is pending. Rows the other poller holds come back
                            # only if it rolls back: stop when none are pending at all.
                            cur.execute(f"SELECT COUNT(*) FROM `{table}` WHERE status = 'pending'")
                            if cur.fetchone()[0] == 0:
                                return
                            time.sleep(0.01)
                            continue
                        if first:
                            # Hold this first batch's locks until the other poller has claimed a
                            # batch of its own: it must skip these rows, not wait for them.
                            first_batch_held[name].set()
                            if not first_batch_held[other].wait(DEADLINE_S / 2):
                                raise AssertionError(f"poller {other} could not claim while {name} held locks")
                            first = False
                        placeholders = ",".join(["%s"] * len(ids))
                        cur.execute(
                            f"UPDATE `{table}` SET status = 'claimed', claimed_by = %s"
                            f" WHERE status = 'pending' AND id IN ({placeholders})",
                            (name, *ids),
                        )
                        assert cur.rowcount == len(ids), f"{name}: claimed {len(ids)} rows but updated {cur.rowcount}"
                    conn.commit()
                    claimed[name].extend(ids)
                except pymysql.err.OperationalError as exc:
                    conn.rollback()
                    if exc.args[0] not in RETRYABLE:
                        raise
                    retries[name] += 1
            raise AssertionError(f"poller {name} still found pending rows after {DEADLINE_S}s")
        except BaseException as exc:  # reported by the main thread
            failures.append(f"poller {name}: {type(exc).__name__}: {exc}")
            first_batch_held[name].set()

    # When two pollers claim batches concurrently until none remain
    threads = [threading.Thread(target=poller, args=("a", "b")), threading.Thread(target=poller, args=("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 10)
    assert not any(t.is_alive() for t in threads), "a poller did not finish"
    assert failures == []

    # Then the union of their claims is every row and the intersection is empty
    a, b = set(claimed["a"]), set(claimed["b"])
    assert len(a) == len(claimed["a"]) and len(b) == len(claimed["b"]), "a poller claimed a row twice"
    assert a & b == set()
    assert a | b == set(range(1, ROWS + 1))
    assert a and b, "both pollers should have claimed rows"
    # ... and the table agrees with what each poller believes it claimed
    with admin.cursor() as cur:
        cur.execute(f"SELECT claimed_by, COUNT(*) FROM `{table}` GROUP BY claimed_by ORDER BY claimed_by")
        assert dict(cur.fetchall()) == {"a": len(a), "b": len(b)}
        cur.execute(f"DROP TABLE `{table}`")
