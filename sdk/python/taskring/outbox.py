"""Transactional enqueue: a task is submitted if, and only if, the caller's transaction commits.

Design note
-----------
Submitting a task from inside a database transaction has two failure modes: the submit
succeeds and the transaction rolls back (a task about an order that does not exist), or the
transaction commits and the process dies before the submit (an order that is never
cancelled). Enqueued is not success; committed is. So `enqueue` does not talk to taskring at
all: it writes the task into an outbox table of the service's own database, in the caller's
transaction, under a task_id chosen at write time. The row commits or rolls back with
everything else the transaction did.

An `OutboxRelay` moves committed rows to taskring:

    SET TRANSACTION ISOLATION LEVEL READ COMMITTED     record locks only: enqueues never wait on a relay
    START TRANSACTION
    SELECT ... WHERE relayed_at IS NULL ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED
    client.submit_batch(rows, each with its task_id)
    UPDATE ... SET relayed_at = now WHERE id IN (rows)
    COMMIT

A relay that dies after the submit and before the commit leaves its rows unrelayed (the
server rolls the transaction back when the session ends) and the next relay sends them
again. Submit is idempotent by task_id, so the resend comes back ``duplicate=True`` and
creates nothing: every committed row becomes exactly one task. SKIP LOCKED lets several
relays run at once, each taking rows the others do not hold.

Rows are marked, not deleted: a relayed row is the evidence that the hand-over happened (for
"did my task get sent?"), and marking costs one UPDATE, as deleting would. `purge_relayed`
deletes marked rows past an age. A row the server refuses as invalid can never succeed; it
is set aside (marked, with the server's message in `rejection`) instead of blocking every
row behind it, and counted in `rejected_total`.

Limits, stated plainly:

- The caller's connection must be inside a transaction (``START TRANSACTION``/``BEGIN``, or
  autocommit off) when it calls `enqueue`; in autocommit mode the row commits on its own.
- A task's `delay` counts from the enqueue, not from the relay: the relay turns it into a
  `schedule_time` of the row's creation (database clock) plus the delay.
- Rows go out roughly in id order, but a transaction that commits late is relayed late;
  taskring does not order tasks anyway.
- Task ids must be unique: a task_id that already names another task on the server is
  reported as a duplicate and the row is marked relayed, though its own spec never ran.
- The lag is measured on the database's clock, from a row's insert (not its commit).
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, cast

from taskring._tracing import current_traceparent
from taskring.errors import InvalidArgument
from taskring.idempotency import Connection, Cursor
from taskring.task import Priority, RetryPolicy, Seconds, SubmitResult, TaskSpec, to_timedelta

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

DEFAULT_TABLE = "taskring_outbox"
MAX_BATCH_SIZE = 1000
"""The server's limit on the tasks of one SubmitBatch."""

_TABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_TASK_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
"""The server's rule for a task_id (dispatcher/api/validation.py), checked at enqueue too: a row
it refuses is found only after the caller's transaction committed, too late to tell them."""
_BATCH_INDEX_RE = re.compile(r"tasks\[(\d+)\]")
_SPEC_VERSION = 1


class BatchSubmitter(Protocol):
    """What the relay needs of a client: `taskring.Client` is one."""

    def submit_batch(self, specs: Sequence[TaskSpec], /) -> list[SubmitResult]: ...


# ---------------------------------------------------------------- the table

def table_ddl(table: str = DEFAULT_TABLE) -> str:
    """The CREATE TABLE statement, for services that keep their schema in migrations.

    `spec` is text rather than MySQL's JSON type, which would rewrite the payload (key order,
    and large integers stored as doubles) before it reached the server.
    """
    return f"""CREATE TABLE IF NOT EXISTS {_quoted(table)} (
  id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  task_id    VARCHAR(64)  NOT NULL,
  spec       MEDIUMTEXT   NOT NULL,
  created_at DATETIME(6)  NOT NULL,
  relayed_at DATETIME(6)  NULL,
  rejection  TEXT         NULL,
  PRIMARY KEY (id),
  UNIQUE KEY by_task_id (task_id),
  KEY pending (relayed_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""


def ensure_outbox_table(conn: Connection, table: str = DEFAULT_TABLE) -> None:
    """Create the outbox table if it does not exist (times are UTC, on the database's clock)."""
    cur = conn.cursor()
    try:
        cur.execute(table_ddl(table))
        conn.commit()
    finally:
        cur.close()


def purge_relayed(conn: Connection, older_than: timedelta | Seconds, *, table: str = DEFAULT_TABLE,
                  now: datetime | None = None, batch_size: int = 1000) -> int:
    """Delete rows relayed more than `older_than` ago, `batch_size` per transaction; returns
    how many. Rejected rows stay, for a person to look at."""
    age_us = to_timedelta(older_than, "older_than") // timedelta(microseconds=1)
    sql = (f"DELETE FROM {_quoted(table)} WHERE relayed_at < DATE_SUB(COALESCE(%s, UTC_TIMESTAMP(6)),"
           " INTERVAL %s MICROSECOND) AND rejection IS NULL LIMIT %s")
    total, at = 0, _utc_naive(now)
    cur = conn.cursor()
    try:
        while True:
            cur.execute(sql, (at, age_us, batch_size))
            deleted = cur.rowcount
            conn.commit()
            total += deleted
            if deleted < batch_size:
                return total
    finally:
        cur.close()


# ---------------------------------------------------------------- enqueue

def new_task_id() -> str:
    """A UUIDv7 (RFC 9562), the form of the ids the server gives tasks it names itself:
    time-ordered, so that the server's primary key stays append-mostly."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def enqueue(cursor_or_conn: Cursor | Connection, spec: TaskSpec, *, table: str = DEFAULT_TABLE) -> str:
    """Write `spec` into the outbox in the caller's open transaction; returns its task_id.

    Nothing is committed here: the task exists once the caller commits, and never if they
    roll back. The task_id is the spec's own, or a new UUIDv7; a relay submits it under that
    id, so a resend is recognised by the server. Raises ValueError for a task_id the server
    would refuse and TypeError for a payload that is not JSON.
    """
    task_id = spec.task_id if spec.task_id is not None else new_task_id()
    if not _TASK_ID_RE.fullmatch(task_id):
        raise ValueError(f"task_id: must be 1 to 64 characters of [A-Za-z0-9._:-], got {task_id!r:.80}")
    text = encode_spec(spec, task_id)
    sql = f"INSERT INTO {_quoted(table)} (task_id, spec, created_at) VALUES (%s, %s, UTC_TIMESTAMP(6))"
    if callable(getattr(cursor_or_conn, "execute", None)):
        cast(Cursor, cursor_or_conn).execute(sql, (task_id, text))
        return task_id
    cur = cast(Connection, cursor_or_conn).cursor()
    try:
        cur.execute(sql, (task_id, text))
    finally:
        cur.close()
    return task_id


# ---------------------------------------------------------------- the spec as stored

def encode_spec(spec: TaskSpec, task_id: str) -> str:
    """`spec` as the JSON text of an outbox row (durations in whole microseconds)."""
    policy = spec.retry_policy
    doc = {
        "v": _SPEC_VERSION,
        "namespace": spec.namespace,
        "task_type": spec.task_type,
        "payload": None if spec.payload is None else dict(spec.payload),
        "task_id": task_id,
        "delay_us": _us(spec.delay),
        "schedule_time": None if spec.schedule_time is None else spec.schedule_time.isoformat(),
        "timeout_us": _us(spec.timeout),
        "max_retries": spec.max_retries,
        "retry_policy": None if policy is None else {
            "initial_backoff_us": _us(policy.initial_backoff),
            "max_backoff_us": _us(policy.max_backoff),
            "multiplier": policy.multiplier,
            "schedule_us": [_us(w) for w in policy.schedule],
        },
        "priority": str(spec.priority),
        "unique_key": spec.unique_key,
        # Taken now, inside the request's transaction (and span), not when the relay sends it.
        "trace_id": spec.trace_id or current_traceparent() or None,
        "payload_version": spec.payload_version,
    }
    try:
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"payload: must be JSON-serializable: {e}") from e


def decode_spec(text: str, created_at: datetime) -> TaskSpec:
    """The TaskSpec of an outbox row; a delay becomes a schedule time counted from
    `created_at` (UTC), when the row was written."""
    doc = json.loads(text)
    if doc.get("v") != _SPEC_VERSION:
        raise ValueError(f"outbox row of version {doc.get('v')!r}; this SDK reads version {_SPEC_VERSION}")
    created = created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC)
    schedule_time = None if doc["schedule_time"] is None else datetime.fromisoformat(doc["schedule_time"])
    if doc["delay_us"] is not None:
        schedule_time = created + timedelta(microseconds=doc["delay_us"])
    rp = doc["retry_policy"]
    policy = None if rp is None else RetryPolicy(
        initial_backoff=timedelta(microseconds=rp["initial_backoff_us"]),
        max_backoff=timedelta(microseconds=rp["max_backoff_us"]),
        multiplier=rp["multiplier"],
        schedule=tuple(timedelta(microseconds=w) for w in rp["schedule_us"]))
    return TaskSpec(
        namespace=doc["namespace"], task_type=doc["task_type"], payload=doc["payload"], task_id=doc["task_id"],
        schedule_time=schedule_time,
        timeout=None if doc["timeout_us"] is None else timedelta(microseconds=doc["timeout_us"]),
        max_retries=doc["max_retries"], retry_policy=policy, priority=Priority(doc["priority"]),
        unique_key=doc["unique_key"], trace_id=doc["trace_id"], payload_version=doc["payload_version"])


def _us(value: timedelta | Seconds | None) -> int | None:
    if value is None:
        return None
    td = value if isinstance(value, timedelta) else timedelta(seconds=value)
    return td // timedelta(microseconds=1)


# ---------------------------------------------------------------- the relay

@dataclass(frozen=True, slots=True)
class _Batch:
    relayed: list[int]
    """Row ids handed over."""
    rejected: list[tuple[int, str, str]]
    """(row id, task_id, why) of rows set aside."""
    duplicates: int


class OutboxRelay:
    """Moves committed outbox rows to taskring, in one background thread.

    `connect` opens a connection to the service's database (one is kept, and opened again
    after an error); `client` submits (a `taskring.Client`). `batch_size` rows go in one
    SubmitBatch. An idle relay looks for new rows every `poll_interval_s`; after an error it
    waits, doubling up to `max_backoff_s`. With a prometheus_client `registry`, the gauge
    ``taskring_outbox_lag_seconds`` and the counters ``taskring_outbox_relayed_total`` and
    ``taskring_outbox_rejected_total`` (label ``table``) are registered in it.

    `run_once` and `lag_seconds` can also be called directly, with or without the thread.
    """

    def __init__(self, connect: Callable[[], Connection], client: BatchSubmitter, *, table: str = DEFAULT_TABLE,
                 batch_size: int = 100, poll_interval_s: float = 0.5, max_backoff_s: float = 30.0,
                 registry: CollectorRegistry | None = None) -> None:
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size: must be between 1 and {MAX_BATCH_SIZE}, got {batch_size}")
        if not poll_interval_s > 0:
            raise ValueError(f"poll_interval_s: must be positive, got {poll_interval_s}")
        if not max_backoff_s >= poll_interval_s:
            raise ValueError(f"max_backoff_s: must be at least poll_interval_s, got {max_backoff_s}")
        self._connect = connect
        self._client = client
        self._table = table
        self._name = _quoted(table)
        self._batch_size = batch_size
        self._poll_interval_s = poll_interval_s
        self._max_backoff_s = max_backoff_s
        self._metrics = _PromMetrics(registry, table) if registry is not None else None
        self._lock = threading.Lock()  # one statement at a time on the one connection
        self._conn: Connection | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._relayed_total = 0
        self._rejected_total = 0
        self._duplicates_total = 0

    # -- lifecycle

    def start(self) -> OutboxRelay:
        """Start the thread; a no-op while it runs."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stopping.clear()
        self._thread = threading.Thread(target=self._loop, name=f"taskring-outbox-relay[{self._table}]",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread (after the batch in hand) and close the connection. Safe before
        `start` and twice."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("outbox relay %s: still busy after %.1f s; left to finish", self._table, timeout_s)
                return
            self._thread = None
        with self._lock:
            self._drop_connection()

    def __enter__(self) -> OutboxRelay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- counters

    @property
    def relayed_total(self) -> int:
        """Rows handed over (and marked) by this relay, duplicates included."""
        return self._relayed_total

    @property
    def rejected_total(self) -> int:
        """Rows the server refused as invalid, set aside by this relay."""
        return self._rejected_total

    @property
    def duplicates_total(self) -> int:
        """Rows the server already knew: resent after a relay died before marking them."""
        return self._duplicates_total

    # -- the work

    def run_once(self) -> int:
        """Relay one batch of committed, unrelayed rows; returns how many were handed over.

        Raises what the database or the client raised; the rows are then left for the next run.
        """
        with self._lock:
            batch = self._relay_batch()
            self._relayed_total += len(batch.relayed)
            self._rejected_total += len(batch.rejected)
            self._duplicates_total += batch.duplicates
        if self._metrics is not None:
            self._metrics.relayed.inc(len(batch.relayed))
            self._metrics.rejected.inc(len(batch.rejected))
        for _, task_id, why in batch.rejected:
            log.error("outbox %s: the server refused task %s; set aside: %s", self._table, task_id, why)
        return len(batch.relayed)

    def lag_seconds(self, now: datetime | None = None) -> float:
        """Age of the oldest committed, unrelayed row (0.0 when there is none), on the
        database's clock (or at `now`, UTC, for tests)."""
        with self._lock:
            conn = self._connection()
            cur = conn.cursor()
            try:
                cur.execute(f"SELECT TIMESTAMPDIFF(MICROSECOND, created_at, COALESCE(%s, UTC_TIMESTAMP(6)))"
                            f" FROM {self._name} WHERE relayed_at IS NULL ORDER BY id LIMIT 1", (_utc_naive(now),))
                row = cur.fetchone()
                conn.commit()  # end the read's snapshot on a connection that does not autocommit
            except BaseException:
                self._abandon(conn)
                raise
            finally:
                cur.close()
        lag = 0.0 if row is None else max(0.0, _first(row) / 1e6)
        if self._metrics is not None:
            self._metrics.lag.set(lag)
        return lag

    def _relay_batch(self) -> _Batch:
        conn = self._connection()
        cur = conn.cursor()
        try:
            cur.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")  # the next transaction only
            cur.execute("START TRANSACTION")
            cur.execute(f"SELECT id, task_id, spec, created_at FROM {self._name} WHERE relayed_at IS NULL"
                        " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED", (self._batch_size,))
            rows = [_row(r) for r in cur.fetchall()]
            if not rows:
                conn.commit()
                return _Batch([], [], 0)
            specs: list[tuple[int, TaskSpec]] = []
            rejected: list[tuple[int, str, str]] = []
            for row_id, task_id, text, created_at in rows:
                try:
                    specs.append((row_id, decode_spec(text, created_at)))
                except (ValueError, TypeError, KeyError) as e:
                    rejected.append((row_id, task_id, f"unreadable outbox row: {e}"))
            results = self._submit(specs, rejected)
            if specs:
                marks = ", ".join(["%s"] * len(specs))
                cur.execute(f"UPDATE {self._name} SET relayed_at = UTC_TIMESTAMP(6) WHERE id IN ({marks})",
                            [row_id for row_id, _ in specs])
            for row_id, _task_id, why in rejected:
                cur.execute(f"UPDATE {self._name} SET relayed_at = UTC_TIMESTAMP(6), rejection = %s WHERE id = %s",
                            (why[:60000], row_id))
            conn.commit()
        except BaseException:
            self._abandon(conn)
            raise
        finally:
            cur.close()
        return _Batch([row_id for row_id, _ in specs], rejected, sum(1 for r in results if r.duplicate))

    def _submit(self, specs: list[tuple[int, TaskSpec]], rejected: list[tuple[int, str, str]]) -> list[SubmitResult]:
        """Submit the batch; a task the server refuses as invalid is moved to `rejected` and
        the rest sent again (the server writes nothing of a batch it refuses)."""
        while specs:
            try:
                return self._client.submit_batch([spec for _, spec in specs])
            except InvalidArgument as e:
                index = _batch_index(e.field)
                if index is None or index >= len(specs):
                    raise
                row_id, spec = specs.pop(index)
                rejected.append((row_id, spec.task_id or "", str(e)))
        return []

    def _loop(self) -> None:
        wait_s = self._poll_interval_s
        while not self._stopping.is_set():
            try:
                relayed = self.run_once()
                self.lag_seconds()
                wait_s = self._poll_interval_s
            except Exception:
                log.warning("outbox relay %s: failed; trying again in %.1f s", self._table, wait_s, exc_info=True)
                self._stopping.wait(wait_s)
                wait_s = min(wait_s * 2, self._max_backoff_s)
                continue
            if relayed < self._batch_size:  # a full batch: more may be waiting, go on at once
                self._stopping.wait(self._poll_interval_s)

    # -- the connection

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _abandon(self, conn: Connection) -> None:
        """After an error: roll back, or drop a connection that cannot even do that."""
        try:
            conn.rollback()
        except Exception:
            self._drop_connection()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


class _PromMetrics:
    """The relay's Prometheus metrics; prometheus_client is imported only when asked for."""

    def __init__(self, registry: CollectorRegistry, table: str):
        from prometheus_client import Counter, Gauge

        self.lag = Gauge("taskring_outbox_lag_seconds", "Age of the oldest committed, unrelayed outbox row.",
                         ["table"], registry=registry).labels(table)
        self.relayed = Counter("taskring_outbox_relayed_total", "Outbox rows handed over to taskring.",
                               ["table"], registry=registry).labels(table)
        self.rejected = Counter("taskring_outbox_rejected_total", "Outbox rows the server refused, set aside.",
                                ["table"], registry=registry).labels(table)


# ---------------------------------------------------------------- small parts

def _quoted(table: str) -> str:
    if not isinstance(table, str) or not _TABLE_RE.fullmatch(table):
        raise ValueError(f"table: must match {_TABLE_RE.pattern}, got {table!r}")
    return f"`{table}`"


def _utc_naive(now: datetime | None) -> datetime | None:
    if now is None or now.tzinfo is None:
        return now
    return now.astimezone(UTC).replace(tzinfo=None)


def _batch_index(field: str) -> int | None:
    match = _BATCH_INDEX_RE.match(field)
    return int(match.group(1)) if match else None


def _row(row: Any) -> tuple[int, str, str, datetime]:
    values = list(row.values()) if isinstance(row, Mapping) else row
    row_id, task_id, text, created_at = values
    return int(row_id), task_id, text, created_at


def _first(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, Mapping) else row[0]


__all__ = [
    "DEFAULT_TABLE",
    "MAX_BATCH_SIZE",
    "BatchSubmitter",
    "OutboxRelay",
    "decode_spec",
    "encode_spec",
    "enqueue",
    "ensure_outbox_table",
    "new_task_id",
    "purge_relayed",
    "table_ddl",
]
