"""The task store on MySQL (MariaDB): the source of truth for every task's state.

Fencing. Every write made on behalf of a slot's owner (claiming rows, starting
a dispatch, recording outcomes, committing Kafka progress) runs in a transaction
that reads the slot's row in `slot_owners` under a shared lock and checks the
epoch the caller holds: first, or, on the hot path's happy writes, inside the
conditional UPDATE itself (fenced.epochs_hold: one round trip instead of two).
A claim bumps that epoch under an exclusive lock, so
it waits for in-flight writes of the old owner and every later one sees the new
epoch and writes nothing. A node that was paused or cut off therefore cannot
act on a slot it lost: the store reports the slot stale and the node drops it.

Transitions are conditional (`status`, `attempts`), so a task that reaches the
owner twice (replayed Kafka message, swept row) is dispatched once.

A slot's rows are found by lane (records.Lane, the `lane` column the server derives
from `status`, migrations/011_lanes.sql): equality on (slot, lane), the index's
prefix, then the status wanted. A status change inside a lane moves no index entry.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import queue
import threading
from collections.abc import Container, Iterable, Iterator, Sequence

import pymysql

from cluster.interface import SlotLeased
from dispatcher.base.config import MySQLConfig
from dispatcher.base.errors import TaskAlreadyFinished, TaskIdTaken, TaskNotFound, Unavailable
from dispatcher.store import attempt_writes, fenced, heartbeats, leases
from dispatcher.store import records as r
from dispatcher.store.graph_notes import note_end_if_graph
from dispatcher.store.sql_literals import marks, names, sql_time
from dispatcher.store.unique_keys import hold_keys
from taskring.task import TaskState

_RETRYABLE_MYSQL = {1213, 1205}  # deadlock, lock wait timeout: roll back and try again
_DUPLICATE_KEY = 1062
# The lanes as plain ints: PyMySQL would escape an IntEnum as a string.
_MYSQL, _HEAP, _LIVE = int(r.Lane.MYSQL), int(r.Lane.HEAP), int(r.Lane.LIVE)
_LANE_OF = {status: int(lane) for status, lane in r.LANE_OF.items()}
_TASK_COLUMNS = ("task_id, slot, namespace, task_type, priority, status, trigger_at, attempts, epoch, "
                 "envelope, last_error, last_stack_trace, created_at, updated_at")


class TaskStore:
    def __init__(self, config: MySQLConfig, identity: r.ShardIdentity | None = None, node: str = ""):
        """`identity`: the shard this database must be (checked at start, recorded on
        first use); None for a store used outside a cluster (tests, tools)."""
        self._config = config
        self._identity = identity
        self._node = node
        self._pool: queue.LifoQueue[pymysql.connections.Connection] = queue.LifoQueue()
        self._lock = threading.Lock()
        # At most pool_size transactions at once: callers beyond it wait for a
        # connection instead of opening more (MySQL connections are not free).
        self._slots = threading.BoundedSemaphore(config.pool_size)
        self._stopped = False
        # (slot, namespace, task_type) this store has committed to slot_task_types: the
        # admin view's list of types, written once each rather than with every insert.
        self._types_seen: set[tuple[int, str, str]] = set()

    # ---- lifecycle ----

    def start(self) -> None:
        with self.transaction() as cur:
            cur.execute("SELECT 1")
        if self._identity is not None:
            self._check_identity(self._identity)

    def _check_identity(self, want: r.ShardIdentity) -> None:
        c = self._config
        def body(cur):
            cur.execute("INSERT IGNORE INTO store_shard (id, shard_index, shard_count, slot_map, recorded_at,"
                        " recorded_by) VALUES (1, %s, %s, %s, UTC_TIMESTAMP(3), %s)",
                        (want.index, want.count, want.slot_map, self._node))
            cur.execute("SELECT shard_index, shard_count, slot_map, recorded_by FROM store_shard WHERE id = 1")
            return cur.fetchone()
        index, count, slot_map, by = self.run(body)
        if (index, count, slot_map) != (want.index, want.count, want.slot_map):
            raise r.ShardMapMismatch(
                f"mysql {c.host}:{c.port}/{c.database} is shard {index} of {count} with slot map {slot_map!r}"
                f" (recorded by {by}); this node was configured to use it as shard {want.index} of {want.count}"
                f" with slot map {want.slot_map!r}. Every node must have the same TASKRING_MYSQL_SHARDS and"
                " TASKRING_SLOT_SHARDS; moving slots between shards is not supported.")

    def stop(self) -> None:
        self._stopped = True
        while True:
            try:
                conn = self._pool.get_nowait()
            except queue.Empty:
                return
            with contextlib.suppress(Exception):
                conn.close()

    def _connect(self) -> pymysql.connections.Connection:
        c = self._config
        try:
            return pymysql.connect(
                host=c.host, port=c.port, user=c.user, password=c.password, database=c.database,
                autocommit=False, connect_timeout=5, read_timeout=c.io_timeout_s, write_timeout=c.io_timeout_s,
                # PyMySQL would negotiate TLS whenever the server offers it, paying a
                # context per connect; TLS to the store is not configured here.
                ssl_disabled=True,
                # READ COMMITTED: no gap locks, so concurrent batch inserts and
                # SKIP LOCKED claims do not block one another.
                # idle_transaction_timeout: see MySQLConfig; it is what frees a frozen
                # node's locks for the slot's next owner.
                init_command=("SET SESSION tx_isolation = 'READ-COMMITTED', time_zone = '+00:00',"
                              f" idle_transaction_timeout = {int(c.idle_transaction_timeout_s)},"
                              f" innodb_lock_wait_timeout = {int(c.lock_wait_timeout_s)}"),
            )
        except pymysql.err.OperationalError as exc:
            raise Unavailable(f"mysql {c.host}:{c.port}/{c.database}: {exc.args[-1]}") from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[pymysql.cursors.Cursor]:
        """One transaction on a pooled connection. A deadlock or lock-wait timeout
        rolls back and surfaces as Unavailable("... rolled back ..."); `run` retries those."""
        with self._slots:
            yield from self._transaction()

    def _transaction(self):
        try:
            conn = self._pool.get_nowait()
        except queue.Empty:
            conn = self._connect()
        ok = False
        try:
            cur = conn.cursor()
            yield cur
            conn.commit()
            ok = True
        except pymysql.err.OperationalError as exc:
            with contextlib.suppress(Exception):
                conn.rollback()
            code = exc.args[0] if exc.args else None
            if code in _RETRYABLE_MYSQL:
                ok = True  # the connection is fine
                raise Unavailable(f"mysql: transaction rolled back ({code}): {exc.args[-1]}") from exc
            raise Unavailable(f"mysql: {exc.args[-1] if exc.args else exc}") from exc
        except BaseException:
            with contextlib.suppress(Exception):
                conn.rollback()
                ok = True
            raise
        finally:
            if ok and not self._stopped:
                self._pool.put(conn)
            else:
                with contextlib.suppress(Exception):
                    conn.close()

    def run(self, body, attempts: int = 5):
        """Run `body(cur)` in a transaction, retrying deadlocks and lock waits."""
        for i in range(attempts):
            try:
                with self.transaction() as cur:
                    return body(cur)
            except Unavailable as exc:
                if "rolled back" not in str(exc) or i == attempts - 1:
                    raise

    def ensure_slots(self, slot_count: int) -> None:
        self.ensure_slot_records(range(slot_count))

    def ensure_slot_records(self, slots: Iterable[int]) -> None:
        """ensure_slots for exactly these slots (a shard holds the records of its own)."""
        rows = [(s,) for s in slots]
        def body(cur):
            cur.executemany("INSERT IGNORE INTO slot_owners (slot, epoch, owner) VALUES (%s, 0, '')", rows)
        if rows:
            self.run(body)

    def claim_slot(self, slot: int, node: str, now: dt.datetime, lease_ms: int = 0) -> int:
        """Take the slot under a new epoch and return it, leased to `node` for `lease_ms`.

        Refused (SlotLeased, the slot marked wanted by `node`, nothing else written) while
        another node's lease on the slot is live. Rows the previous owner held in its
        heap (claimed) or had handed to an executor without recording the outcome
        (dispatched) go back to pending: they run again, which is the price of
        at-least-once after a crash. If the previous owner did not release the slot,
        `enqueued` rows go to pending too.
        """
        def body(cur) -> int | SlotLeased:
            # slot_owners first, then slot_leases: release_slot locks them in that order too.
            cur.execute("INSERT IGNORE INTO slot_owners (slot, epoch, owner) VALUES (%s, 0, '')", (slot,))
            cur.execute("SELECT owner FROM slot_owners WHERE slot = %s FOR UPDATE", (slot,))
            crashed = cur.fetchone()[0] != ""  # the previous owner never released the slot
            refused = leases.refused_claim(cur, slot, node)
            if refused is not None:
                return refused
            cur.execute("UPDATE slot_owners SET epoch = epoch + 1, owner = %s, claimed_at = %s WHERE slot = %s",
                        (node, now, slot))
            cur.execute("SELECT epoch FROM slot_owners WHERE slot = %s", (slot,))
            epoch = cur.fetchone()[0]
            leases.grant(cur, slot, node, epoch, lease_ms)
            # After a crash, an `enqueued` row may have no Kafka message (the owner died
            # between its write and its produce): take every such row into the MySQL
            # path now rather than after the sweeper's grace. Any message that does
            # exist is then skipped at dispatch, so nothing runs twice for it.
            # A dispatched row keeps its dispatched_at/_by on the way back to pending: the
            # attempt is in doubt (its handler may still run) until its timeout from then has
            # passed, and the new owner reads that back (attempts_in_doubt) to count it against
            # limits. The columns stay its "dispatched" event in the history, until the next
            # dispatch moves them to task_events before it overwrites them (attempt_writes.py).
            # (A claimed row has them only if it is such an attempt, not dispatched again yet.)
            for status in (r.CLAIMED, r.DISPATCHED) + ((r.ENQUEUED,) if crashed else ()):
                cur.execute("UPDATE tasks SET status = %s, epoch = %s, updated_at = %s"
                            " WHERE slot = %s AND lane = %s AND status = %s",
                            (r.PENDING, epoch, now, slot, _LANE_OF[status], status))
            return epoch
        claimed = self.run(body)
        if isinstance(claimed, SlotLeased):
            raise claimed   # after the commit: the wanted mark stands
        return claimed

    def attempts_in_doubt(self, slot: int, epoch: int, now: dt.datetime) -> list[r.InDoubt]:
        """The claim's rows taken back from dispatched (claim_slot keeps their dispatched_at).
        On the (slot, lane, trigger_at) index: they were due before `now` (the claim's time or
        later), so the range stops short of the slot's pending rows due in the future."""
        def body(cur) -> list[r.InDoubt]:
            cur.execute("SELECT task_id, namespace, task_type, attempts, dispatched_at, envelope FROM tasks"
                        " WHERE slot = %s AND lane = %s AND trigger_at <= %s AND status = %s"
                        " AND epoch = %s AND dispatched_at IS NOT NULL",
                        (slot, _MYSQL, now, r.PENDING, epoch))
            return [r.InDoubt(task_id, namespace, task_type, attempt, dispatched_at, bytes(envelope))
                    for task_id, namespace, task_type, attempt, dispatched_at, envelope in cur.fetchall()]
        return self.run(body)

    def release_slot(self, slot: int, epoch: int, now: dt.datetime) -> bool:
        """Give the slot up after a clean handoff: rows in our heap go back to pending."""
        def body(cur):
            if fenced.stale_slots(cur, {slot: epoch}):
                return False
            cur.execute("UPDATE tasks SET status = %s, updated_at = %s WHERE slot = %s AND lane = %s",
                        (r.PENDING, now, slot, _HEAP))
            cur.execute("UPDATE slot_owners SET owner = '' WHERE slot = %s AND epoch = %s", (slot, epoch))
            leases.end(cur, slot, epoch)
            return True
        return self.run(body)

    def renew_leases(self, node: str, epochs: dict[int, int], lease_ms: int, now: dt.datetime) -> dict[int, str]:
        """Extend `node`'s leases, by the server's clock; what each slot is now (SlotRecords)."""
        if not epochs:
            return {}
        return self.run(lambda cur: leases.renew(cur, node, epochs, lease_ms))

    def server_time_ms(self) -> int:
        """The store's clock, the cluster's one time (dispatcher/base/clock_sync.py)."""
        def body(cur):
            cur.execute("SELECT UNIX_TIMESTAMP(NOW(6))")
            return int(float(cur.fetchone()[0]) * 1000)
        return self.run(body)

    def slot_owners(self) -> dict[int, tuple[int, str]]:
        def body(cur):
            cur.execute("SELECT slot, epoch, owner FROM slot_owners")
            return {s: (e, o) for s, e, o in cur.fetchall()}
        return self.run(body)

    # ---- the API's writes ----

    def insert_tasks(self, tasks: Sequence[r.NewTask], node: str) -> dict[str, r.Status | r.Held]:
        """Insert new tasks in one transaction; their accepted/queued events are the
        row's accepted_by and intake columns.

        Returns what already stands for the task ids not inserted: the status of an id
        that existed (a retried Submit gets the existing task back and nothing new is
        written for it), or the Held holder of a task's unique key.
        """
        if not tasks:
            return {}
        unseen = {(t.slot, t.namespace, t.task_type) for t in tasks} - self._types_seen
        written: list[set[tuple[int, str, str]]] = []
        def body(cur):
            written.clear()
            if not any(t.unique_key for t in tasks):
                # The usual batch is all new ids: insert first, and read what stands only
                # when some id was there already. Then the INSERT fails as a whole (a
                # statement is atomic in InnoDB), leaving the transaction as it was.
                firsts = list({t.task_id: t for t in reversed(tasks)}.values())[::-1]
                try:
                    self.insert_in(cur, firsts, node, types=unseen, ignore=False)
                    written.append(unseen)
                    return {}
                except pymysql.err.IntegrityError as exc:
                    if exc.args[0] != _DUPLICATE_KEY:
                        raise
            fresh, existing = self.split_existing(cur, tasks)
            keyed = [t for t in fresh if t.unique_key]
            if keyed:
                held = hold_keys(cur, keyed, lambda holders: self.statuses(cur, [h for h, _ in holders]))
                existing.update(held)
                fresh = [t for t in fresh if t.task_id not in held]
            types = {(t.slot, t.namespace, t.task_type) for t in fresh} & unseen
            self.insert_in(cur, fresh, node, types=types)
            written.append(types)
            return existing
        existing = self.run(body)
        self._types_seen.update(*written)
        return existing

    @staticmethod
    def split_existing(cur, tasks: Sequence[r.NewTask]) -> tuple[list[r.NewTask], dict[str, r.Status | r.Held]]:
        """(the tasks to insert: new ids, each once from its first occurrence, in order;
        {task_id: status} of the ids that exist)."""
        existing: dict[str, r.Status | r.Held] = {**TaskStore.standing(cur, tasks)}
        fresh = list({t.task_id: t for t in reversed(tasks) if t.task_id not in existing}.values())[::-1]
        return fresh, existing

    @staticmethod
    def standing(cur, tasks: Sequence[r.NewTask]) -> dict[str, r.Status]:
        """{task_id: status} of the tasks whose id exists. An id that is a task of another
        namespace raises TaskIdTaken: the caller's transaction writes nothing, and the
        other task's state is never answered to a caller of another namespace."""
        namespace_of = {t.task_id: t.namespace for t in reversed(tasks)}  # each id's first occurrence
        cur.execute(f"SELECT task_id, status, namespace FROM tasks WHERE task_id IN ({names(namespace_of)})")
        out: dict[str, r.Status] = {}
        for task_id, status, namespace in cur.fetchall():
            if namespace != namespace_of[task_id]:
                raise TaskIdTaken(task_id)
            out[task_id] = r.Status(status)
        return out

    @staticmethod
    def statuses(cur, task_ids: Sequence[str]) -> dict[str, r.Status]:
        if not task_ids:
            return {}
        cur.execute(f"SELECT task_id, status FROM tasks WHERE task_id IN ({names(task_ids)})")
        return {task_id: r.Status(status) for task_id, status in cur.fetchall()}

    @staticmethod
    def insert_in(cur, fresh: Sequence[r.NewTask], node: str, *,
                  types: Iterable[tuple[int, str, str]] | None = None, ignore: bool = True) -> int:
        """Insert new rows inside a transaction the caller holds (the sharded store commits
        several shards' inserts once all of them succeeded); returns how many were
        inserted (an id that exists is left alone, as INSERT IGNORE does; with `ignore`
        False it fails the statement instead, IntegrityError 1062). `types`: the
        (slot, namespace, task_type) to record in slot_task_types, when the caller knows
        which of the rows' are new (default: all of them). A row `waiting` (a task of a graph)
        has intake 'graph': its second event is "waiting", not "queued" (migrations/016)."""
        if not fresh:
            return 0
        # One multi-row INSERT of literals (see sql_literals): the names checked in one
        # pass, the envelope as a hex literal, the times formatted once each.
        names(name for t in fresh for name in (t.task_id, t.namespace, t.task_type))
        by = cur.connection.escape(node)
        intake = {r.ENQUEUED: "'kafka'", r.PENDING: "'mysql'", r.WAITING: "'graph'"}
        values = ",".join(
            f"('{t.task_id}',{int(t.slot)},'{t.namespace}','{t.task_type}',{int(t.priority)},"
            f"'{r.Status(t.status).value}','{sql_time(t.trigger_at)}',0,0,x'{t.envelope.hex()}',"
            f"'{sql_time(t.created_at)}','{sql_time(t.created_at)}',{by},"
            f"{intake.get(t.status, 'NULL')},"
            f"{cur.connection.escape(t.trace_id) if t.trace_id else 'NULL'})" for t in fresh)
        inserted = cur.execute(f"INSERT {'IGNORE ' if ignore else ''}INTO tasks (task_id, slot, namespace, task_type,"
                               " priority, status, trigger_at, attempts, epoch, envelope, created_at, updated_at,"
                               f" accepted_by, intake, trace_id) VALUES {values}")
        new_types = sorted({(t.slot, t.namespace, t.task_type) for t in fresh} if types is None else types)
        if new_types:
            cur.executemany("INSERT IGNORE INTO slot_task_types (slot, namespace, task_type, first_seen_at)"
                            " VALUES (%s, %s, %s, %s)", [(*k, fresh[0].created_at) for k in new_types])
        return inserted

    def take_key(self, task: r.NewTask) -> r.Held | None:
        return self.run(lambda cur: hold_keys(
            cur, [task], lambda holders: self.statuses(cur, [h for h, _ in holders])).get(task.task_id))

    def withdraw_inserted(self, task_ids: Sequence[str]) -> int:
        """Delete rows of a cross-shard insert that was not committed everywhere, while no
        executor has been handed them (attempts 0: pending, enqueued, or claimed into a
        heap, where a missing row is skipped at dispatch). Returns how many were deleted."""
        if not task_ids:
            return 0
        def body(cur):
            return cur.execute(f"DELETE FROM tasks WHERE task_id IN ({names(task_ids)}) AND attempts = 0"
                               " AND status IN (%s, %s, %s)", (r.PENDING, r.ENQUEUED, r.CLAIMED))
        return self.run(body)

    def reroute_to_mysql(self, task_ids: Sequence[str], now: dt.datetime) -> int:
        """Kafka refused: the tasks stay accepted and wait in MySQL instead."""
        if not task_ids:
            return 0
        def body(cur):
            return cur.execute(
                "UPDATE tasks SET status = %s, updated_at = %s"
                f" WHERE status = %s AND task_id IN ({marks(len(task_ids))})",
                [r.PENDING, now, r.ENQUEUED, *task_ids])
        return self.run(body)

    def get_task(self, task_id: str) -> tuple[r.TaskRow, list[r.Event]]:
        def body(cur):
            cur.execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE task_id = %s", (task_id,))
            row = cur.fetchone()
            if row is None:
                raise TaskNotFound(task_id)
            cur.execute("SELECT task_id, state, at, node, attempt, detail, stack_trace FROM task_history"
                        " WHERE task_id = %s"
                        " ORDER BY seq", (task_id,))
            return r.TaskRow(*row), [r.Event(*e) for e in cur.fetchall()]
        return self.run(body)

    def cancel(self, task_id: str, node: str, now: dt.datetime,
               heartbeat_types: Container[tuple[str, str]] = ()) -> None:
        def body(cur):
            rows = fenced.lock_states(cur, [task_id])
            if task_id not in rows:
                raise TaskNotFound(task_id)
            row = rows[task_id]
            if row.status not in r.CANCELLABLE:
                if row.status != r.DISPATCHED or not self._task_type_in(cur, task_id, heartbeat_types):
                    shown = TaskState.RUNNING if row.status == r.DISPATCHED else row.status
                    raise TaskAlreadyFinished(task_id, shown)
                fenced.move_dispatch_to_events(cur, [task_id], rows)
            cur.execute("UPDATE tasks SET status = %s, updated_at = %s WHERE task_id = %s",
                        (r.CANCELLED, now, task_id))
            fenced.append_events(cur, [r.Event(task_id, TaskState.CANCELLED, now, node, row.attempts,
                                              "cancelled by request")])
            note_end_if_graph(cur, task_id, now)   # its dependents are cancelled in turn
        self.run(body)

    @staticmethod
    def _task_type_in(cur, task_id: str, types: Container[tuple[str, str]]) -> bool:
        cur.execute("SELECT namespace, task_type FROM tasks WHERE task_id = %s", (task_id,))
        return tuple(cur.fetchone()) in types

    def record_heartbeats(self, beats: Sequence[r.HeartbeatWrite], now: dt.datetime) -> list[r.HeartbeatResult]:
        return self.run(lambda cur: heartbeats.record(cur, beats, now))

    def heartbeat_details(self, task_ids: Sequence[str]) -> dict[str, str]:
        return self.run(lambda cur: heartbeats.details(cur, task_ids))

    def note_waiting(self, notes: Sequence[r.WaitNote]) -> None:
        self.run(lambda cur: heartbeats.note_waiting(cur, notes))

    def wait_note(self, task_id: str) -> tuple[int, str] | None:
        return self.run(lambda cur: heartbeats.wait_note(cur, task_id))

    # ---- the owner's writes (fenced) ----

    def claim_due(self, slot: int, epoch: int, until: dt.datetime, limit: int,
                  now: dt.datetime) -> tuple[bool, list[r.TaskRow]]:
        """Claim pending rows of one slot due by `until`; (False, []) if the slot was lost."""
        def body(cur):
            if fenced.stale_slots(cur, {slot: epoch}):
                return False, []
            # Equality on slot and lane (pending is the whole MySQL lane), range on
            # trigger_at: the index serves it without a filesort, and SKIP LOCKED keeps
            # concurrent claimers apart.
            cur.execute(f"SELECT {_TASK_COLUMNS} FROM tasks FORCE INDEX (idx_slot_lane_trigger)"
                        " WHERE slot = %s AND lane = %s AND trigger_at <= %s"
                        " ORDER BY trigger_at, task_id LIMIT %s FOR UPDATE SKIP LOCKED",
                        (slot, _MYSQL, until, limit))
            rows = [r.TaskRow(*row) for row in cur.fetchall()]
            if rows:
                ids = [row.task_id for row in rows]
                cur.execute(f"UPDATE tasks SET status = %s, epoch = %s, updated_at = %s"
                            f" WHERE task_id IN ({names(ids)})", [r.CLAIMED, epoch, now])
            return True, [dataclasses.replace(row, status=r.CLAIMED, epoch=epoch, updated_at=now) for row in rows]
        return self.run(body)

    def sweep_enqueued(self, slot: int, epoch: int, older_than: dt.datetime, limit: int,
                       now: dt.datetime) -> int:
        """Move Kafka-routed rows long past due into the MySQL path (lost produce)."""
        def body(cur):
            if fenced.stale_slots(cur, {slot: epoch}):
                return 0
            # The live lane up to `older_than`: the overdue enqueued rows and the
            # dispatched ones among them (no more than are in flight), told apart by status.
            cur.execute("SELECT task_id FROM tasks FORCE INDEX (idx_slot_lane_trigger)"
                        " WHERE slot = %s AND lane = %s AND trigger_at < %s AND status = %s"
                        " ORDER BY trigger_at LIMIT %s FOR UPDATE SKIP LOCKED",
                        (slot, _LIVE, older_than, r.ENQUEUED, limit))
            ids = [row[0] for row in cur.fetchall()]
            if ids:
                cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE task_id IN ({names(ids)})",
                            [r.PENDING, now])
            return len(ids)
        return self.run(body)

    # ---- an attempt's writes (store/attempt_writes.py: the hot path) ----

    def begin_dispatch(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                       now: dt.datetime) -> tuple[set[str], set[int]]:
        """Move eligible tasks to dispatched; returns (dispatched task ids, stale slots)."""
        return self.run(lambda cur: attempt_writes.begin_dispatch(cur, claims, epochs, node, now))

    def record_outcomes(self, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int],
                        now: dt.datetime) -> set[int]:
        """Record finished attempts; returns the stale slots whose writes were refused."""
        return self.run(lambda cur: attempt_writes.record_outcomes(cur, writes, epochs, now))

    def return_undelivered(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                           now: dt.datetime) -> set[int]:
        return self.run(lambda cur: attempt_writes.return_undelivered(cur, claims, epochs, node, now))

    def stranded(self, slot: int, epoch: int, dispatched_before: dt.datetime, claimed_before: dt.datetime,
                 limit: int) -> tuple[bool, list[r.TaskRow]]:
        def body(cur):
            if fenced.stale_slots(cur, {slot: epoch}):
                return False, []
            # By slot and lane equality (the index's prefix). The live lane holds what the
            # owner has in flight and the Kafka-path rows not yet dispatched, which the
            # sweeper keeps to those due within its grace; the heap lane holds what is in
            # the owner's heap.
            cur.execute(f"SELECT {_TASK_COLUMNS} FROM tasks FORCE INDEX (idx_slot_lane_trigger)"
                        " WHERE slot = %s AND lane = %s AND status = %s AND updated_at < %s"
                        " ORDER BY updated_at LIMIT %s", (slot, _LIVE, r.DISPATCHED, dispatched_before, limit))
            rows = [r.TaskRow(*row) for row in cur.fetchall()]
            cur.execute(f"SELECT {_TASK_COLUMNS} FROM tasks FORCE INDEX (idx_slot_lane_trigger)"
                        " WHERE slot = %s AND lane = %s AND trigger_at < %s AND updated_at < %s"
                        " ORDER BY updated_at LIMIT %s", (slot, _HEAP, claimed_before, claimed_before, limit))
            rows += [r.TaskRow(*row) for row in cur.fetchall()]
            return True, sorted(rows, key=lambda row: row.updated_at)[:limit]
        return self.run(body)

    def unclaim(self, task_ids: Sequence[str], slot: int, epoch: int, now: dt.datetime) -> bool:
        def body(cur):
            if fenced.stale_slots(cur, {slot: epoch}):
                return False
            if task_ids:
                cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE slot = %s AND lane = %s"
                            f" AND task_id IN ({marks(len(task_ids))})", [r.PENDING, now, slot, _HEAP, *task_ids])
            return True
        return self.run(body)

    # ---- Kafka progress (fenced) ----

    def load_offsets(self, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        pairs = list(pairs)
        if not pairs:
            return {}
        def body(cur):
            where = " OR ".join(["(topic = %s AND kpartition = %s)"] * len(pairs))
            cur.execute(f"SELECT topic, kpartition, next_offset FROM kafka_offsets WHERE {where}",
                        [v for p in pairs for v in p])
            return {(t, p): o for t, p, o in cur.fetchall()}
        return self.run(body)

    def commit_offsets(self, commits: Sequence[tuple[str, int, int]], epochs: dict[int, int],
                       now: dt.datetime) -> set[int]:
        """commits: (topic, partition = slot, next_offset); returns the stale slots."""
        def body(cur):
            stale = fenced.stale_slots(cur, {p: epochs[p] for _, p, _ in commits})
            rows = [(t, p, o, epochs[p], now) for t, p, o in commits if p not in stale]
            if rows:
                cur.executemany(
                    "INSERT INTO kafka_offsets (topic, kpartition, next_offset, epoch, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
                    " next_offset = VALUES(next_offset), epoch = VALUES(epoch), updated_at = VALUES(updated_at)",
                    rows)
            return stale
        return self.run(body)

    # ---- observation ----

    def pending_by_slot(self, slots: Iterable[int] | None = None) -> dict[int, int]:
        """Tasks not yet dispatched, per slot (all slots in slot_owners when None)."""
        def body(cur):
            if slots is None:
                cur.execute("SELECT slot FROM slot_owners")
                wanted = [row[0] for row in cur.fetchall()]
            else:
                wanted = list(slots)
            out = {}
            for slot in wanted:
                # By slot and lane: index ranges, never a scan of finished rows.
                cur.execute("SELECT COUNT(*) FROM tasks WHERE slot = %s AND lane IN (%s, %s, %s) AND status <> %s",
                            (slot, _MYSQL, _HEAP, _LIVE, r.DISPATCHED))
                out[slot] = cur.fetchone()[0]
            return out
        return self.run(body)

    def task_types_by_slot(self) -> dict[int, list[str]]:
        def body(cur):
            cur.execute("SELECT slot, namespace, task_type FROM slot_task_types ORDER BY slot, namespace, task_type")
            out: dict[int, list[str]] = {}
            for slot, ns, tt in cur.fetchall():
                out.setdefault(slot, []).append(f"{ns}/{tt}")
            return out
        return self.run(body)

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        def body(cur):
            cur.execute("SELECT topic, kpartition, next_offset FROM kafka_offsets")
            return {(t, p): o for t, p, o in cur.fetchall()}
        return self.run(body)
