"""Run a block at most once per key to completion, and give a redelivery the recorded result.

Design note
-----------
taskring delivers at least once: a task whose outcome report was lost, or whose slot changed
owner mid-attempt, runs again. A handler whose effect must not happen twice wraps it in this
module's `once` (or `once_external`) under a key: a business key (``"order-cancel:12345"``) or
the task's id (``ctx.task_id``). The first delivery to finish records the block's result in a
table of the service's own database; every later delivery of the key gets that result back
without running the block.

**`once(conn, key, block)`: the effect is in the same database.** One transaction:

    START TRANSACTION
    INSERT (key, 'started', token) ON DUPLICATE KEY UPDATE    takes the key's row lock, or waits for it
    SELECT ... FOR UPDATE                                     what is recorded, read under that lock
      'done'        -> COMMIT; return the recorded result     (the block does not run)
      our own row   -> block(cursor); UPDATE to 'done' with the result; COMMIT

The block's statements and the record commit together, so a crash anywhere leaves both or
neither, and a redelivery runs the block again only when nothing was committed. A second
delivery arriving while the first is inside the block waits on the row lock, then reads
'done'. If the block raises, everything rolls back and the key stays free.

**`once_external(conn, key, effect)`: the effect is elsewhere (an HTTP call).** No transaction
can span it, so the record is written in two steps around the effect:

    GET_LOCK(name of the key)        a session lock: one live holder per key, freed by the server
                                     when the session ends, crash included
    INSERT 'started'; COMMIT         durable before the effect begins
    effect()
    UPDATE to 'done' with the result; COMMIT
    RELEASE_LOCK

A crash between the effect and the last commit leaves a 'started' record. Whoever takes the
key next holds the session lock, so the starter is gone, and no one can know whether its
effect happened: `IdempotencyUnknownOutcome` is raised, never a silent rerun. (It is a
`NonRetryableError`: in a handler the task is dead-lettered at once, for a person or a
reconciliation job to decide, then `forget` the key to run again or `resolve` it to record
the result.) A caller whose effect is safe to repeat opts in with ``on_unknown="rerun"``.
An effect that raises leaves the record 'started' too, because an exception does not prove
that nothing happened (a read timeout after the request went out). The exception types
listed in `not_applied` are taken to mean that nothing happened (a refused connection), and
for those the mark is withdrawn so the next delivery runs the effect.

Limits, stated plainly:

- One form per key: a key is either transactional or external.
- `once` begins and ends its own transaction on `conn` (``START TRANSACTION``), so `conn` must
  not be inside one, and the block must not commit or roll back.
- A second delivery waits on the row lock for at most the server's `innodb_lock_wait_timeout`
  (50 s by default), then gets `IdempotencyInProgress`, a `RetryableError`. `once_external`
  waits `lock_timeout_s` for the session lock.
- A result is recorded as JSON and handed back as JSON decodes it, to the first caller too
  (a tuple comes back as a list), so every delivery sees the same value.
- With `ttl`, a 'done' record is forgotten once its time is up (a later delivery runs the
  block again); `purge_expired` deletes such records. A 'started' record never expires.
- Keys are case-sensitive, 1 to 255 characters.

The example, cancelling an order left unpaid 30 minutes after it was created::

    # when the order is created: client.submit("shop", "cancel_unpaid", {"order": 12345}, delay=1800)

    @executor.handler("cancel_unpaid")
    def cancel_unpaid(ctx: TaskContext) -> None:
        order_id = ctx.payload["order"]

        def cancel(cur) -> dict:
            cur.execute("SELECT status FROM orders WHERE id = %s FOR UPDATE", (order_id,))
            (status,) = cur.fetchone()
            if status != "unpaid":
                return {"cancelled": False, "status": status}     # paid in time: nothing to do
            cur.execute("UPDATE orders SET status = 'cancelled' WHERE id = %s", (order_id,))
            cur.execute("INSERT INTO order_events (order_id, event) VALUES (%s, 'cancelled')", (order_id,))
            return {"cancelled": True, "status": "cancelled"}

        with pool.connection() as conn:              # the shop's own database
            once(conn, f"order-cancel:{order_id}", cancel, ttl=timedelta(days=7))
"""
from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from taskring.errors import NonRetryableError, RetryableError, TaskringError
from taskring.task import Seconds, to_timedelta

DEFAULT_TABLE = "taskring_idempotency"

STARTED, DONE = "started", "done"
"""The two states of a record: the block or effect began, and its result is recorded."""

_MAX_KEY_CHARS = 255
_TABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_ER_LOCK_WAIT_TIMEOUT, _ER_LOCK_DEADLOCK = 1205, 1213
_DEADLOCK_TRIES = 3
"""Taking the key's lock can deadlock when three deliveries race for a new key (InnoDB's
duplicate-key locks); nothing has run yet then, so the step is simply taken again."""


# ---------------------------------------------------------------- DB-API (PEP 249)

class Cursor(Protocol):
    """The part of a PEP 249 cursor this module uses (PyMySQL's, mysqlclient's, ...)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: str, args: Any = ..., /) -> object: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def close(self) -> object: ...


class Connection(Protocol):
    """The part of a PEP 249 connection to MySQL 8 or MariaDB 10.6+ this module uses."""

    def cursor(self) -> Cursor: ...

    def commit(self) -> object: ...

    def rollback(self) -> object: ...

    def close(self) -> object: ...


# ---------------------------------------------------------------- errors

class IdempotencyError(TaskringError):
    """Base of the errors of this module."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"idempotency key {key!r}: {message}")


class IdempotencyUnknownOutcome(NonRetryableError, IdempotencyError):
    """An earlier delivery started the effect of `once_external` and never recorded its end.

    Whether the effect happened cannot be known from here, so nothing is run. Raised in a
    handler, it dead-letters the task at once: retrying cannot resolve it. Find out (ask the
    other system), then `forget` the key to run the effect again, or `resolve` it to record the
    result. `started_at` (UTC) and `attempts` describe the record.
    """

    def __init__(self, key: str, started_at: datetime, attempts: int):
        self.started_at = started_at
        self.attempts = attempts
        IdempotencyError.__init__(
            self, key, f"an earlier delivery started the effect at {started_at.isoformat()} (attempt {attempts})"
            " and never recorded its end, so whether it took effect is unknown; check, then forget() the key"
            " to run it again or resolve() it to record the result")


class IdempotencyInProgress(RetryableError, IdempotencyError):
    """Another delivery holds the key and did not finish within the wait; try again later."""

    def __init__(self, key: str, waited: str):
        IdempotencyError.__init__(self, key, f"another delivery still holds the key after {waited}")


# ---------------------------------------------------------------- the table

def table_ddl(table: str = DEFAULT_TABLE) -> str:
    """The CREATE TABLE statement, for services that keep their schema in migrations."""
    return f"""CREATE TABLE IF NOT EXISTS {_quoted(table)} (
  idem_key    VARCHAR({_MAX_KEY_CHARS}) NOT NULL,
  status      VARCHAR(8)   NOT NULL,
  token       CHAR(32)     NOT NULL,
  attempts    INT UNSIGNED NOT NULL,
  result      JSON         NULL,
  started_at  DATETIME(6)  NOT NULL,
  finished_at DATETIME(6)  NULL,
  expires_at  DATETIME(6)  NULL,
  PRIMARY KEY (idem_key),
  KEY by_expiry (status, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""


def ensure_table(conn: Connection, table: str = DEFAULT_TABLE) -> None:
    """Create the table if it does not exist (times are UTC; `token` names the delivery that
    wrote 'started'; `attempts` counts the runs begun for the key)."""
    _execute_and_commit(conn, table_ddl(table), ())


@dataclass(frozen=True, slots=True)
class Record:
    """A key's row, as `recorded` reads it."""

    key: str
    status: str
    """`STARTED` or `DONE`."""
    result: Any
    """The recorded result (decoded JSON); None while started."""
    attempts: int
    started_at: datetime
    finished_at: datetime | None
    expires_at: datetime | None
    """UTC; None: kept until deleted."""


def recorded(conn: Connection, key: str, *, table: str = DEFAULT_TABLE) -> Record | None:
    """The key's record, or None: for operators and tests; it takes no lock."""
    cur = conn.cursor()
    try:
        cur.execute(f"SELECT status, result, attempts, started_at, finished_at, expires_at FROM {_quoted(table)}"
                    " WHERE idem_key = %s", (_checked_key(key),))
        row = cur.fetchone()
        conn.commit()  # end the read's snapshot on a connection that does not autocommit
    finally:
        _close_quietly(cur)
    if row is None:
        return None
    status, result, attempts, started_at, finished_at, expires_at = _values(row)
    return Record(key, status, None if result is None else json.loads(result), attempts, started_at, finished_at,
                  expires_at)


# ---------------------------------------------------------------- the two forms

def once(conn: Connection, key: str, block: Callable[[Cursor], object], *, table: str = DEFAULT_TABLE,
         ttl: timedelta | Seconds | None = None, now: datetime | None = None) -> Any:
    """Run ``block(cursor)`` in a transaction on `conn` at most once per `key`, to completion.

    The block's statements on `cursor` and the record of its result commit together. Returns
    the result as recorded (its JSON round trip), whether the block ran now or earlier. If the
    block raises, everything rolls back and the error propagates; the key stays free.

    `conn` must not be inside a transaction (one is begun here); the block must not commit or
    roll back. `ttl` (timedelta or seconds) bounds how long the result is remembered; `now`
    (UTC) replaces the database's clock, for tests. Raises `IdempotencyInProgress` when
    another delivery holds the key past the server's lock wait timeout.
    """
    name, key, ttl_us, at = _quoted(table), _checked_key(key), _ttl_us(ttl), _utc_naive(now)
    token = uuid.uuid4().hex
    cur = conn.cursor()
    try:
        row = _begin_and_lock(conn, cur, name, key, token, at)
        try:
            if row.status == DONE and not row.expired:
                conn.commit()
                return row.decoded_result()
            if row.status == STARTED and row.token != token:
                raise IdempotencyUnknownOutcome(key, row.started_at, row.attempts)  # a once_external key
            if row.token != token:
                _restart(cur, name, key, token, at)  # done, but past its ttl: forgotten
            text = _dumps(key, block(cur))
            _finish(cur, name, key, token, text, ttl_us, at)
            conn.commit()
        except BaseException:
            _rollback_quietly(conn)
            raise
        return json.loads(text)
    finally:
        _close_quietly(cur)


def once_external(conn: Connection, key: str, effect: Callable[[], object], *, table: str = DEFAULT_TABLE,
                  ttl: timedelta | Seconds | None = None, lock_timeout_s: float = 10.0,
                  on_unknown: Literal["raise", "rerun"] = "raise",
                  not_applied: tuple[type[BaseException], ...] = (), now: datetime | None = None) -> Any:
    """Run ``effect()``, which acts outside this database, at most once per `key` that is known
    to have finished; see the module's note for what a crash leaves behind.

    Returns the recorded result (its JSON round trip). Raises `IdempotencyUnknownOutcome` when
    an earlier delivery started the effect and never recorded its end, unless `on_unknown` is
    ``"rerun"`` (the effect is safe to repeat); `IdempotencyInProgress` when another live
    delivery holds the key for longer than `lock_timeout_s`. An exception from the effect
    leaves the record 'started' (its outcome is unknown), except those of the `not_applied`
    types, which withdraw the mark. `conn` must not be inside a transaction and stays in use
    for the whole call (it holds the key's session lock).
    """
    if on_unknown not in ("raise", "rerun"):
        raise ValueError(f"on_unknown: must be 'raise' or 'rerun', got {on_unknown!r}")
    if not lock_timeout_s >= 0:
        raise ValueError(f"lock_timeout_s: must be >= 0, got {lock_timeout_s}")
    name, key, ttl_us, at = _quoted(table), _checked_key(key), _ttl_us(ttl), _utc_naive(now)
    token = uuid.uuid4().hex
    cur = conn.cursor()
    try:
        _take_session_lock(conn, cur, table, key, lock_timeout_s)
        try:
            row = _begin_and_lock(conn, cur, name, key, token, at)
            try:
                if row.status == DONE and not row.expired:
                    conn.commit()
                    return row.decoded_result()
                if row.status == STARTED and row.token != token and on_unknown == "raise":
                    raise IdempotencyUnknownOutcome(key, row.started_at, row.attempts)
                if row.token != token:
                    _restart(cur, name, key, token, at)
                conn.commit()  # 'started' is durable before the effect begins
            except BaseException:
                _rollback_quietly(conn)
                raise
            try:
                value = effect()
            except not_applied:
                _execute_and_commit(conn, f"DELETE FROM {name} WHERE idem_key = %s AND token = %s", (key, token))
                raise
            text = _dumps(key, value)  # not JSON: the effect happened but cannot be recorded; stays 'started'
            cur.execute("START TRANSACTION")
            try:
                if not _finish(cur, name, key, token, text, ttl_us, at):
                    raise IdempotencyError(key, "the record was changed (forget or resolve) while the effect ran")
                conn.commit()
            except BaseException:
                _rollback_quietly(conn)
                raise
            return json.loads(text)
        finally:
            _release_session_lock_quietly(conn, cur, table, key)
    finally:
        _close_quietly(cur)


# ---------------------------------------------------------------- by hand, and cleanup

def forget(conn: Connection, key: str, *, table: str = DEFAULT_TABLE) -> bool:
    """Delete the key's record, so that the next delivery runs the block; True if there was one.

    For an `IdempotencyUnknownOutcome` once it is known that the effect did not happen.
    """
    return _execute_and_commit(conn, f"DELETE FROM {_quoted(table)} WHERE idem_key = %s", (_checked_key(key),)) > 0


def resolve(conn: Connection, key: str, result: Any, *, table: str = DEFAULT_TABLE,
            ttl: timedelta | Seconds | None = None, now: datetime | None = None) -> None:
    """Record `result` as the key's outcome, as if the block had returned it.

    For an `IdempotencyUnknownOutcome` once it is known that the effect did happen.
    """
    key, ttl_us, at = _checked_key(key), _ttl_us(ttl), _utc_naive(now)
    token, text = uuid.uuid4().hex, _dumps(key, result)  # a new token: a holder still running cannot finish over it
    _execute_and_commit(
        conn,
        f"INSERT INTO {_quoted(table)} (idem_key, status, token, attempts, result, started_at, finished_at,"
        " expires_at) VALUES (%s, 'done', %s, 0, %s, COALESCE(%s, UTC_TIMESTAMP(6)), COALESCE(%s, UTC_TIMESTAMP(6)),"
        " DATE_ADD(COALESCE(%s, UTC_TIMESTAMP(6)), INTERVAL %s MICROSECOND))"
        " ON DUPLICATE KEY UPDATE status = 'done', token = %s, result = %s,"
        " finished_at = COALESCE(%s, UTC_TIMESTAMP(6)),"
        " expires_at = DATE_ADD(COALESCE(%s, UTC_TIMESTAMP(6)), INTERVAL %s MICROSECOND)",
        (key, token, text, at, at, at, ttl_us, token, text, at, at, ttl_us))


def purge_expired(conn: Connection, *, table: str = DEFAULT_TABLE, now: datetime | None = None,
                  batch_size: int = 1000) -> int:
    """Delete the 'done' records whose ttl is up, `batch_size` rows per transaction (so that a
    large purge never holds many locks at once); returns how many. 'started' records stay."""
    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    sql = (f"DELETE FROM {_quoted(table)} WHERE status = 'done' AND expires_at <= COALESCE(%s, UTC_TIMESTAMP(6))"
           " LIMIT %s")
    total, at = 0, _utc_naive(now)
    while True:
        deleted = _execute_and_commit(conn, sql, (at, batch_size))
        total += deleted
        if deleted < batch_size:
            return total


# ---------------------------------------------------------------- the steps

@dataclass(frozen=True, slots=True)
class _Row:
    status: str
    token: str
    result: str | None
    attempts: int
    started_at: datetime
    expired: bool

    def decoded_result(self) -> Any:
        return None if self.result is None else json.loads(self.result)


def _begin_and_lock(conn: Connection, cur: Cursor, name: str, key: str, token: str, at: datetime | None) -> _Row:
    """Begin a transaction holding the key's row lock, the row created (as ours) if absent."""
    for attempt in range(1, _DEADLOCK_TRIES + 1):
        cur.execute("START TRANSACTION")
        try:
            # The no-op update makes a duplicate wait for, then take, the row's exclusive lock.
            cur.execute(f"INSERT INTO {name} (idem_key, status, token, attempts, started_at)"
                        " VALUES (%s, 'started', %s, 1, COALESCE(%s, UTC_TIMESTAMP(6)))"
                        " ON DUPLICATE KEY UPDATE idem_key = idem_key", (key, token, at))
            cur.execute(f"SELECT status, token, result, attempts, started_at,"
                        f" expires_at IS NOT NULL AND expires_at <= COALESCE(%s, UTC_TIMESTAMP(6))"
                        f" FROM {name} WHERE idem_key = %s FOR UPDATE", (at, key))
            status, row_token, result, attempts, started_at, expired = _values(cur.fetchone())
            return _Row(status, row_token, result, attempts, started_at, bool(expired))
        except Exception as e:
            _rollback_quietly(conn)
            code = _mysql_errno(e)
            if code == _ER_LOCK_DEADLOCK and attempt < _DEADLOCK_TRIES:
                continue
            if code == _ER_LOCK_WAIT_TIMEOUT:
                raise IdempotencyInProgress(key, "the server's innodb_lock_wait_timeout") from e
            raise
    raise AssertionError("unreachable")


def _restart(cur: Cursor, name: str, key: str, token: str, at: datetime | None) -> None:
    cur.execute(f"UPDATE {name} SET status = 'started', token = %s, attempts = attempts + 1, result = NULL,"
                " started_at = COALESCE(%s, UTC_TIMESTAMP(6)), finished_at = NULL, expires_at = NULL"
                " WHERE idem_key = %s", (token, at, key))


def _finish(cur: Cursor, name: str, key: str, token: str, text: str, ttl_us: int | None,
            at: datetime | None) -> bool:
    """Record the result; False when the row is no longer ours (it was forgotten or resolved)."""
    cur.execute(f"UPDATE {name} SET status = 'done', result = %s, finished_at = COALESCE(%s, UTC_TIMESTAMP(6)),"
                " expires_at = DATE_ADD(COALESCE(%s, UTC_TIMESTAMP(6)), INTERVAL %s MICROSECOND)"
                " WHERE idem_key = %s AND token = %s", (text, at, at, ttl_us, key, token))
    return cur.rowcount > 0


_LOCK_NAME = "CONCAT('taskring-idem:', SHA1(CONCAT_WS('/', DATABASE(), %s, %s)))"
"""Session locks are server-wide (at most 64 characters), so the name hashes the database,
the table and the key."""


def _take_session_lock(conn: Connection, cur: Cursor, table: str, key: str, timeout_s: float) -> None:
    cur.execute(f"SELECT GET_LOCK({_LOCK_NAME}, %s)", (table, key, timeout_s))
    (got,) = _values(cur.fetchone())
    conn.commit()
    if got is None:
        raise IdempotencyError(key, "the server could not take the key's session lock (GET_LOCK returned NULL)")
    if not got:
        raise IdempotencyInProgress(key, f"{timeout_s:g} s")


def _release_session_lock_quietly(conn: Connection, cur: Cursor, table: str, key: str) -> None:
    try:  # a lost connection has released it already; never hide the caller's own error
        cur.execute(f"SELECT RELEASE_LOCK({_LOCK_NAME})", (table, key))
        cur.fetchone()
        conn.commit()
    except Exception:
        pass


# ---------------------------------------------------------------- small parts

def _quoted(table: str) -> str:
    if not isinstance(table, str) or not _TABLE_RE.fullmatch(table):
        raise ValueError(f"table: must match {_TABLE_RE.pattern}, got {table!r}")
    return f"`{table}`"


def _checked_key(key: str) -> str:
    if not isinstance(key, str) or not 1 <= len(key) <= _MAX_KEY_CHARS:
        raise ValueError(f"key: must be a string of 1 to {_MAX_KEY_CHARS} characters, got {key!r:.80}")
    return key


def _ttl_us(ttl: timedelta | Seconds | None) -> int | None:
    if ttl is None:
        return None
    td = to_timedelta(ttl, "ttl")
    if td <= timedelta(0):
        raise ValueError(f"ttl: must be positive, got {td}")
    return td // timedelta(microseconds=1)


def _utc_naive(now: datetime | None) -> datetime | None:
    """A datetime as the DATETIME columns hold it: UTC, without an offset."""
    if now is None or now.tzinfo is None:
        return now
    return now.astimezone(UTC).replace(tzinfo=None)


def _dumps(key: str, value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"idempotency key {key!r}: the result must be JSON-serializable: {e}") from e


def _values(row: Any) -> Sequence[Any]:
    """A row as a sequence, from a tuple cursor or a dict cursor alike."""
    if row is None:
        raise AssertionError("the key's row vanished under its lock")
    return list(row.values()) if isinstance(row, dict) else row


def _mysql_errno(exc: BaseException) -> int | None:
    """The server's error number of a driver's exception (PyMySQL and mysqlclient put it in
    args[0], mysql-connector in .errno)."""
    if isinstance(exc, OSError):
        return None
    code = getattr(exc, "errno", None)
    if isinstance(code, int):
        return code
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _execute_and_commit(conn: Connection, sql: str, args: Sequence[Any]) -> int:
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        count = cur.rowcount
        conn.commit()
        return count
    except BaseException:
        _rollback_quietly(conn)
        raise
    finally:
        _close_quietly(cur)


def _rollback_quietly(conn: Connection) -> None:
    try:
        conn.rollback()
    except Exception:
        pass


def _close_quietly(cur: Cursor) -> None:
    try:
        cur.close()
    except Exception:
        pass


__all__ = [
    "DEFAULT_TABLE",
    "DONE",
    "STARTED",
    "Connection",
    "Cursor",
    "IdempotencyError",
    "IdempotencyInProgress",
    "IdempotencyUnknownOutcome",
    "Record",
    "ensure_table",
    "forget",
    "once",
    "once_external",
    "purge_expired",
    "recorded",
    "resolve",
    "table_ddl",
]
