"""taskring.idempotency on the real MariaDB: at most once per key to completion, a recorded
result for every later delivery, and nothing pretended after a crash.

Each test has a database of the service's own (tests/integration/service_proc.py), with an
`orders` table whose cancel is the effect under test (an `order_events` row per cancel, so a
second run would show), and `external_calls` standing for another system.
"""
from __future__ import annotations

import datetime as dt
import threading

import pytest

from harness.wait import wait_until
from taskring import NonRetryableError, idempotency
from taskring.idempotency import (
    IdempotencyInProgress,
    IdempotencyUnknownOutcome,
    forget,
    once,
    once_external,
    purge_expired,
    recorded,
    resolve,
)
from tests.integration.service_proc import cancel_unpaid, start_parked

pytestmark = pytest.mark.integration

TABLE = idempotency.DEFAULT_TABLE
WAIT_S = 30.0


def sql(connect, query: str, args=()) -> list[tuple]:
    conn = connect()
    with conn.cursor() as cur:
        cur.execute(query, args)
        return list(cur.fetchall())


def new_order(connect, order_id: int, status: str = "unpaid") -> None:
    sql(connect, "INSERT INTO orders (id, status) VALUES (%s, %s)", (order_id, status))


def order_state(connect, order_id: int) -> tuple[str, int]:
    """The order's committed status and how many times it was cancelled."""
    [(status,)] = sql(connect, "SELECT status FROM orders WHERE id = %s", (order_id,))
    [(events,)] = sql(connect, "SELECT COUNT(*) FROM order_events WHERE order_id = %s", (order_id,))
    return status, events


class Counting:
    """Wraps a block and counts its runs."""

    def __init__(self, block):
        self.block, self.runs = block, 0
        self._lock = threading.Lock()

    def __call__(self, *args):
        with self._lock:
            self.runs += 1
        return self.block(*args)


def connection_id(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        return cur.fetchone()[0]


def in_lock_wait(connect, conn_id: int) -> bool:
    return bool(sql(connect, "SELECT 1 FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %s"
                             " AND trx_state = 'LOCK WAIT'", (conn_id,)))


def waiting_on_session_lock(connect, conn_id: int) -> bool:
    return bool(sql(connect, "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %s AND STATE = 'User lock'",
                    (conn_id,)))


# ---------------------------------------------------------------- in the same database

def test_a_second_delivery_gets_the_recorded_result_and_the_block_runs_once(connect):
    # Given an unpaid order
    new_order(connect, 1)
    block = Counting(cancel_unpaid(1))
    # When the cancel is delivered twice, the second time on another connection
    first = once(connect(), "order-cancel:1", block)
    second = once(connect(), "order-cancel:1", block)
    # Then it ran once, both deliveries saw its result, and the record holds it
    assert block.runs == 1
    assert first == second == {"cancelled": True, "status": "cancelled"}
    assert order_state(connect, 1) == ("cancelled", 1)
    record = recorded(connect(), "order-cancel:1")
    assert record is not None
    assert (record.status, record.result, record.attempts) == ("done", first, 1)
    assert record.finished_at is not None and record.expires_at is None


def test_the_result_is_handed_back_as_recorded_even_the_first_time(connect):
    first = once(connect(), "shape", lambda cur: (1, "a", None))
    again = once(connect(), "shape", lambda cur: "never")
    assert first == again == [1, "a", None]


def test_a_block_that_raises_records_nothing_and_the_next_delivery_runs_it(connect):
    new_order(connect, 2)

    def fail_after_effect() -> None:
        raise RuntimeError("payment service said no")
    with pytest.raises(RuntimeError, match="payment service"):
        once(connect(), "order-cancel:2", cancel_unpaid(2, fail_after_effect))
    assert order_state(connect, 2) == ("unpaid", 0)
    assert recorded(connect(), "order-cancel:2") is None
    block = Counting(cancel_unpaid(2))
    assert once(connect(), "order-cancel:2", block) == {"cancelled": True, "status": "cancelled"}
    assert block.runs == 1 and order_state(connect, 2) == ("cancelled", 1)


def test_a_result_that_is_not_json_rolls_the_effect_back(connect):
    new_order(connect, 3)
    block = cancel_unpaid(3)
    with pytest.raises(TypeError, match="JSON-serializable"):
        once(connect(), "order-cancel:3", lambda cur: {"at": block(cur) and dt.datetime.now()})
    assert order_state(connect, 3) == ("unpaid", 0)
    assert recorded(connect(), "order-cancel:3") is None


def test_concurrent_deliveries_of_one_key_run_the_block_once(connect):
    # Given a first delivery inside its block, holding the key
    new_order(connect, 4)
    inside, release = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def hold() -> None:
        inside.set()
        assert release.wait(WAIT_S), "never released"
    block = Counting(cancel_unpaid(4, hold))
    conn_a, conn_b = connect(), connect()
    b_id = connection_id(conn_b)

    def deliver(name: str, conn) -> None:
        try:
            results[name] = once(conn, "order-cancel:4", block)
        except BaseException as e:
            results[name] = e
    a = threading.Thread(target=deliver, args=("a", conn_a))
    a.start()
    assert inside.wait(WAIT_S)
    # When a second delivery arrives, and is seen waiting for the key's lock
    b = threading.Thread(target=deliver, args=("b", conn_b))
    b.start()
    wait_until(lambda: in_lock_wait(connect, b_id), WAIT_S, "the second delivery to wait on the key's row lock")
    release.set()
    a.join(WAIT_S)
    b.join(WAIT_S)
    # Then the block ran once and both got its result
    assert not a.is_alive() and not b.is_alive()
    assert results == {"a": {"cancelled": True, "status": "cancelled"}, "b": {"cancelled": True, "status": "cancelled"}}
    assert block.runs == 1
    assert order_state(connect, 4) == ("cancelled", 1)


def test_a_crash_before_the_commit_leaves_neither_effect_nor_record(connect, service_db, tmp_path):
    # Given a delivery that made the effect inside once() and is stopped before its commit
    new_order(connect, 5)
    child, info = start_parked("once-tx", ["--database", service_db, "--table", TABLE, "--order", "5"], tmp_path)
    try:
        # (the effect and the started record are there, uncommitted: the kill lands after the effect)
        dirty = connect()
        with dirty.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
            cur.execute("SELECT status FROM orders WHERE id = 5")
            assert cur.fetchone() == ("cancelled",)
            cur.execute(f"SELECT status FROM {TABLE} WHERE idem_key = 'order-cancel:5'")
            assert cur.fetchone() == ("started",)
        # When the process is killed
        child.kill()
    finally:
        child.kill()
    assert child.started.returncode == -9
    # Then nothing of it was committed
    assert order_state(connect, 5) == ("unpaid", 0)
    assert recorded(connect(), "order-cancel:5") is None
    wait_until(lambda: not sql(connect, "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %s",
                               (info["connection_id"],)), WAIT_S, "the server to end the killed session")
    # And a redelivery runs the block once and records it
    block = Counting(cancel_unpaid(5))
    assert once(connect(), "order-cancel:5", block) == {"cancelled": True, "status": "cancelled"}
    assert once(connect(), "order-cancel:5", block) == {"cancelled": True, "status": "cancelled"}
    assert block.runs == 1
    assert order_state(connect, 5) == ("cancelled", 1)
    record = recorded(connect(), "order-cancel:5")
    assert record is not None and (record.status, record.attempts) == ("done", 1)


def test_a_result_is_forgotten_after_its_ttl_and_purged_and_unfinished_records_stay(connect):
    t0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    conn = connect()
    block = Counting(lambda cur: "sent")
    # Given a result recorded at t0 for 60 s
    assert once(conn, "k", block, ttl=60, now=t0) == "sent"
    # When a delivery comes within the ttl, it gets the result; a purge then deletes nothing
    assert once(conn, "k", block, ttl=60, now=t0 + dt.timedelta(seconds=59)) == "sent"
    assert block.runs == 1
    assert purge_expired(conn, now=t0 + dt.timedelta(seconds=59)) == 0
    # When one comes after it, the key is free again and the block runs
    assert once(conn, "k", block, ttl=60, now=t0 + dt.timedelta(seconds=61)) == "sent"
    assert block.runs == 2
    record = recorded(conn, "k")
    assert record is not None and record.attempts == 2
    assert record.expires_at == (t0 + dt.timedelta(seconds=121)).replace(tzinfo=None)
    # And a purge deletes the expired result, never an unfinished record
    with pytest.raises(RuntimeError):
        once_external(conn, "unfinished", _raise(RuntimeError("read timeout")), ttl=1, now=t0)
    assert purge_expired(conn, now=t0 + dt.timedelta(days=1), batch_size=1) == 1
    assert recorded(conn, "k") is None
    unfinished = recorded(conn, "unfinished")
    assert unfinished is not None and unfinished.status == "started"


# ---------------------------------------------------------------- outside the database

def _raise(exc: BaseException):
    def effect():
        raise exc
    return effect


def external_calls(connect, key: str) -> int:
    return sql(connect, "SELECT COUNT(*) FROM external_calls WHERE call_key = %s", (key,))[0][0]


def test_outside_the_database_a_second_delivery_gets_the_recorded_result(connect):
    effect = Counting(lambda: {"refund": "r-1"})
    assert once_external(connect(), "refund:7", effect) == {"refund": "r-1"}
    assert once_external(connect(), "refund:7", effect) == {"refund": "r-1"}
    assert effect.runs == 1
    record = recorded(connect(), "refund:7")
    assert record is not None and (record.status, record.result) == ("done", {"refund": "r-1"})


def test_outside_the_database_concurrent_deliveries_run_the_effect_once(connect):
    inside, release = threading.Event(), threading.Event()

    def call() -> str:
        inside.set()
        assert release.wait(WAIT_S), "never released"
        return "called"
    effect = Counting(call)
    conn_b = connect()
    b_id = connection_id(conn_b)
    results: dict[str, object] = {}
    a = threading.Thread(target=lambda: results.update(a=once_external(connect(), "call:1", effect)))
    a.start()
    assert inside.wait(WAIT_S)
    b = threading.Thread(target=lambda: results.update(b=once_external(conn_b, "call:1", effect,
                                                                         lock_timeout_s=WAIT_S)))
    b.start()
    wait_until(lambda: waiting_on_session_lock(connect, b_id), WAIT_S, "the second delivery to wait on the key")
    release.set()
    a.join(WAIT_S)
    b.join(WAIT_S)
    assert results == {"a": "called", "b": "called"}
    assert effect.runs == 1


def test_outside_the_database_a_crash_after_the_effect_is_an_unknown_outcome(connect, service_db, tmp_path):
    # Given a delivery that made the external call and is stopped before recording its end
    key = "notify:8"
    child, _ = start_parked("once-external", ["--database", service_db, "--table", TABLE, "--key", key], tmp_path)
    effect = Counting(lambda: {"called": True})
    try:
        assert external_calls(connect, key) == 1
        record = recorded(connect(), key)
        assert record is not None and record.status == "started"
        # (while it lives, another delivery is told the key is busy, and runs nothing)
        with pytest.raises(IdempotencyInProgress):
            once_external(connect(), key, effect, lock_timeout_s=0.2)
        # When it is killed
        child.kill()
    finally:
        child.kill()
    assert child.started.returncode == -9
    # Then a redelivery does not pretend: the outcome is unknown, and nothing runs
    with pytest.raises(IdempotencyUnknownOutcome, match="unknown") as unknown:
        once_external(connect(), key, effect, lock_timeout_s=WAIT_S)
    assert unknown.value.key == key and unknown.value.attempts == 1
    assert isinstance(unknown.value, NonRetryableError)  # in a handler: dead-lettered, not retried
    assert effect.runs == 0 and external_calls(connect, key) == 1
    # And a caller that may repeat the effect opts in to a rerun, which is then recorded
    assert once_external(connect(), key, effect, on_unknown="rerun") == {"called": True}
    assert once_external(connect(), key, effect) == {"called": True}
    assert effect.runs == 1
    record = recorded(connect(), key)
    assert record is not None and (record.status, record.attempts) == ("done", 2)


def test_an_effect_that_fails_leaves_its_outcome_unknown_unless_the_error_says_nothing_happened(connect):
    effect = Counting(lambda: "sent")
    # A failure that may have reached the other side: unknown from then on
    with pytest.raises(TimeoutError):
        once_external(connect(), "mail:1", _raise(TimeoutError("read timed out")))
    with pytest.raises(IdempotencyUnknownOutcome):
        once_external(connect(), "mail:1", effect)
    # ... until someone finds out: it did happen
    resolve(connect(), "mail:1", "sent by hand check")
    assert once_external(connect(), "mail:1", effect) == "sent by hand check"
    # A failure that proves nothing happened withdraws the mark
    with pytest.raises(ConnectionRefusedError):
        once_external(connect(), "mail:2", _raise(ConnectionRefusedError()), not_applied=(ConnectionRefusedError,))
    assert recorded(connect(), "mail:2") is None
    assert once_external(connect(), "mail:2", effect) == "sent"
    # And forget() frees a key whose effect is known not to have happened
    with pytest.raises(TimeoutError):
        once_external(connect(), "mail:3", _raise(TimeoutError()))
    assert forget(connect(), "mail:3") is True
    assert once_external(connect(), "mail:3", effect) == "sent"
    assert effect.runs == 2

