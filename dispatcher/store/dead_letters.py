"""Dead letters in the task store: read them grouped and paged, replay or delete them.

A dead letter is a task row in status dead_lettered plus its entry in `dead_letters`
(migrations/001, 008), on the shard of its slot. A replay, in one transaction on that
shard, locks both, rewrites the envelope (an edited payload, a new retry budget), puts
the row back to pending for its slot's poller, removes the entry, and appends a
"retry_wait" event saying who replayed it and why (due at once; the dispatch that follows
adds "queued" as for any retry), and the audit record: the task keeps its id and its
history, and the replay is in the same timeline. A replay of a task that is no longer a
dead letter writes nothing (FAILED_PRECONDITION), so a bulk replay that runs again over
the same rows after a crash is harmless.

Every list is a bounded, indexed read: keyset paging on (dead_lettered_at, task_id) over
idx_dead_lettered_at, idx_ns_type or idx_error_group, merged across shards.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import heapq
from collections.abc import Callable

import grpc

from dispatcher.base.errors import TaskNotFound, TaskringError, quote
from dispatcher.store import audit, dead_lettering, fenced
from dispatcher.store import records as r
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import equalities
from taskring.task import TaskState

_SUMMARY = ("task_id, slot, namespace, task_type, attempts, last_error, error_class, error_shape, error_group,"
            " first_attempt_at, dead_lettered_at")


class NotDeadLettered(TaskringError):
    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, task_id: str, state: str):
        self.state = state
        super().__init__(f"task {quote(task_id)} is not a dead letter (it is {state})")


class UniqueKeyHeld(TaskringError):
    """A replay that would run next to another live task with the same unique key."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, task_id: str, unique_key: str, holder: str, holder_state: str):
        self.holder = holder
        super().__init__(f"task {quote(task_id)} was not replayed: its unique key {quote(unique_key)} is held by"
                         f" task {quote(holder)} ({holder_state}) since it was dead-lettered; replaying it would"
                         " run two tasks with one key (wait for or cancel that task, then replay)")


class ChangedSinceRead(TaskringError):
    """The dead letter changed between the diff shown and the confirmation."""

    code = grpc.StatusCode.ABORTED

    def __init__(self, task_id: str):
        super().__init__(f"dead letter {quote(task_id)} changed since it was read; read it again and confirm"
                         " the new diff")


def envelope_digest(envelope: bytes) -> str:
    """What a confirmation names: the envelope the caller saw."""
    return hashlib.sha256(envelope).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class DeadLetterFilter:
    namespace: str = ""
    task_type: str = ""
    error_class: str = ""
    error_group: str = ""
    since: dt.datetime | None = None
    """Dead-lettered at or after."""
    until: dt.datetime | None = None
    """Dead-lettered before."""

    def where(self) -> tuple[list[str], list[object]]:
        clauses, args = equalities((("namespace", self.namespace), ("task_type", self.task_type),
                                    ("error_class", self.error_class), ("error_group", self.error_group)))
        if self.since is not None:
            clauses.append("dead_lettered_at >= %s")
            args.append(self.since)
        if self.until is not None:
            clauses.append("dead_lettered_at < %s")
            args.append(self.until)
        return clauses, args

    def as_dict(self) -> dict:
        return {k: (v.isoformat(timespec="milliseconds") + "Z" if isinstance(v, dt.datetime) else v)
                for k, v in dataclasses.asdict(self).items() if v}


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    attempts: int
    last_error: str | None
    error_class: str | None
    error_shape: str | None
    error_group: str | None
    first_attempt_at: dt.datetime | None
    dead_lettered_at: dt.datetime

    @property
    def cursor(self) -> tuple[dt.datetime, str]:
        return self.dead_lettered_at, self.task_id


@dataclasses.dataclass(frozen=True)
class FailureGroup:
    namespace: str
    task_type: str
    error_group: str
    error_class: str
    error_shape: str
    count: int
    first_at: dt.datetime
    last_at: dt.datetime
    sample_task_id: str
    sample_error: str


@dataclasses.dataclass(frozen=True)
class Replayed:
    task_id: str
    namespace: str
    before: bytes
    after: bytes
    attempts: int


class DeadLetterStore:
    def __init__(self, shards: Shards):
        self._shards = shards

    # ---- reads ----

    def page(self, where: DeadLetterFilter, *, limit: int, cursor: tuple[dt.datetime, str] | None = None,
             oldest_first: bool = False) -> list[DeadLetter]:
        """Newest first, strictly before `cursor`; or oldest first (a bulk replay's walk),
        strictly after it. At most `limit` across all shards."""
        clauses, args = where.where()
        newest_first = not oldest_first
        if cursor is not None:
            op = "<" if newest_first else ">"
            clauses.append(f"(dead_lettered_at {op} %s OR (dead_lettered_at = %s AND task_id {op} %s))")
            args += [cursor[0], cursor[0], cursor[1]]
        order = "DESC" if newest_first else "ASC"
        sql = (f"SELECT {_SUMMARY} FROM dead_letters {_where_sql(clauses)}"
               f" ORDER BY dead_lettered_at {order}, task_id {order} LIMIT %s")
        per_shard = [shard.run(lambda cur: _fetch(cur, sql, (*args, limit))) for shard in self._shards.all]
        merged = heapq.merge(*per_shard, key=lambda d: d.cursor, reverse=newest_first)
        return list(merged)[:limit]

    def count(self, where: DeadLetterFilter) -> int:
        clauses, args = where.where()
        sql = f"SELECT COUNT(*) FROM dead_letters {_where_sql(clauses)}"
        return sum(shard.run(lambda cur: _one(cur, sql, args)) for shard in self._shards.all)

    def groups(self, where: DeadLetterFilter, limit: int = 100) -> list[FailureGroup]:
        """One line per (namespace, task type, failure group), the largest first: from the
        groups' counts (migrations/010), or, for a filter by time or error class, from the
        dead letters in that range."""
        if where.since is None and where.until is None and not where.error_class:
            return self._counted_groups(where, limit)
        clauses, args = where.where()
        sql = ("SELECT namespace, task_type, COALESCE(error_group, ''), MIN(COALESCE(error_class, '')),"
               " MIN(COALESCE(error_shape, '')), COUNT(*), MIN(dead_lettered_at), MAX(dead_lettered_at),"
               " MAX(task_id), MAX(last_error)"
               f" FROM dead_letters {_where_sql(clauses)} GROUP BY namespace, task_type, error_group")
        merged: dict[tuple[str, str, str], FailureGroup] = {}
        for shard in self._shards.all:
            def body(cur):
                cur.execute(sql, args)
                return cur.fetchall()
            for row in shard.run(body):
                group = FailureGroup(*row)
                key = (group.namespace, group.task_type, group.error_group)
                seen = merged.get(key)
                if seen is not None:
                    group = dataclasses.replace(seen, count=seen.count + group.count,
                                                first_at=min(seen.first_at, group.first_at),
                                                last_at=max(seen.last_at, group.last_at))
                merged[key] = group
        return sorted(merged.values(), key=lambda g: (-g.count, g.namespace, g.task_type, g.error_group))[:limit]

    def _counted_groups(self, where: DeadLetterFilter, limit: int) -> list[FailureGroup]:
        clauses, args = equalities((("namespace", where.namespace), ("task_type", where.task_type),
                                    ("error_group", where.error_group)))
        clauses.append("dead > 0")
        sql = ("SELECT namespace, task_type, error_group, error_class, error_shape, dead, first_at, last_at,"
               f" sample_task_id, sample_error FROM dead_letter_groups {_where_sql(clauses)}"
               " ORDER BY dead DESC LIMIT %s")
        found: dict[tuple[str, str, str], FailureGroup] = {}
        for shard in self._shards.all:
            def body(cur):
                cur.execute(sql, (*args, limit))
                return cur.fetchall()
            for row in shard.run(body):
                group = FailureGroup(*row)
                key = (group.namespace, group.task_type, group.error_group)
                seen = found.get(key)
                found[key] = group if seen is None else dataclasses.replace(
                    seen, count=seen.count + group.count, first_at=min(seen.first_at, group.first_at),
                    last_at=max(seen.last_at, group.last_at))
        return sorted(found.values(), key=lambda g: (-g.count, g.namespace, g.task_type, g.error_group))[:limit]

    def get(self, task_id: str) -> tuple[DeadLetter, str | None]:
        """The entry and its last stack trace; TaskNotFound when no shard has it."""
        sql = f"SELECT {_SUMMARY}, last_stack_trace FROM dead_letters WHERE task_id = %s"
        for shard in self._shards.all:
            def body(cur):
                cur.execute(sql, (task_id,))
                return cur.fetchone()
            row = shard.run(body)
            if row is not None:
                return DeadLetter(*row[:-1]), row[-1]
        raise TaskNotFound(task_id)

    # ---- actions (each with its audit record, in one transaction) ----

    def replay(self, task_id: str, *, rewrite: Callable[[bytes, int], bytes], detail: str,
               record: Callable[[Replayed], audit.AuditRecord], node: str, now: dt.datetime,
               expect_digest: str | None = None) -> Replayed:
        """Put a dead letter back to pending with the envelope `rewrite(envelope, attempts)`
        gives (both under the row's lock), a "retry_wait" event with `detail`, and the audit
        record `record(replayed)`. NotDeadLettered, ChangedSinceRead (when `expect_digest`
        is given and the envelope is not the one it names) or TaskNotFound write nothing."""
        def body(cur):
            cur.execute("SELECT status, attempts, envelope, namespace FROM tasks WHERE task_id = %s FOR UPDATE",
                        (task_id,))
            row = cur.fetchone()
            if row is None:
                return None
            status, attempts, envelope, namespace = row
            cur.execute("SELECT task_type, error_group FROM dead_letters WHERE task_id = %s FOR UPDATE", (task_id,))
            listed = cur.fetchone()
            if status != r.DEAD_LETTERED or listed is None:
                shown = "dead-lettered, and deleted from the dead letters" if status == r.DEAD_LETTERED else status
                raise NotDeadLettered(task_id, shown)
            if expect_digest is not None and envelope_digest(envelope) != expect_digest:
                raise ChangedSinceRead(task_id)
            after = rewrite(envelope, attempts)
            cur.execute("UPDATE tasks SET status = %s, trigger_at = %s, envelope = %s, updated_at = %s"
                        " WHERE task_id = %s", (r.PENDING, now, after, now, task_id))
            cur.execute("DELETE FROM dead_letters WHERE task_id = %s", (task_id,))
            dead_lettering.leave(cur, namespace, *listed)
            fenced.append_events(cur, [r.Event(task_id, TaskState.RETRY_WAIT, now, node, attempts, detail)])
            replayed = Replayed(task_id, namespace, envelope, after, attempts)
            audit.append(cur, record(replayed))
            return replayed
        return self._on_its_shard(task_id, body)

    def delete(self, task_id: str, record: Callable[[DeadLetter, bytes], audit.AuditRecord]) -> DeadLetter:
        """Remove the entry (the task stays dead-lettered, its history whole), with the audit
        record `record(entry, envelope)`. TaskNotFound when no shard has it."""
        def body(cur):
            cur.execute(f"SELECT {_SUMMARY}, envelope FROM dead_letters WHERE task_id = %s FOR UPDATE", (task_id,))
            row = cur.fetchone()
            if row is None:
                return None
            entry = DeadLetter(*row[:-1])
            cur.execute("DELETE FROM dead_letters WHERE task_id = %s", (task_id,))
            dead_lettering.leave(cur, entry.namespace, entry.task_type, entry.error_group)
            audit.append(cur, record(entry, row[-1]))
            return entry
        return self._on_its_shard(task_id, body)

    def _on_its_shard(self, task_id: str, body):
        for shard in self._shards.all:
            result = shard.run(body)
            if result is not None:
                return result
        raise TaskNotFound(task_id)


def _where_sql(clauses: list[str]) -> str:
    return "WHERE " + " AND ".join(clauses) if clauses else ""


def _fetch(cur, sql: str, args) -> list[DeadLetter]:
    cur.execute(sql, args)
    return [DeadLetter(*row) for row in cur.fetchall()]


def _one(cur, sql: str, args) -> int:
    cur.execute(sql, args)
    return int(cur.fetchone()[0])
