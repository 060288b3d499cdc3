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
idx_dead_lettered_at, idx_ns_type or idx_error_group, merged across shards. The contract
is interface_dead_letters.py's.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
from collections.abc import Callable

from dispatcher.base.errors import TaskNotFound
from dispatcher.store import audit, dead_lettering, fenced
from dispatcher.store import records as r
from dispatcher.store.errors import ChangedSinceRead, NotDeadLettered, UniqueKeyHeld
from dispatcher.store.graph_notes import note_reopen_if_graph
from dispatcher.store.interface_dead_letters import (
    DeadLetterFilter,
    FailureGroup,
    Replayed,
    envelope_digest,
)
from dispatcher.store.records import DeadLetter
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import equalities
from taskring.task import TaskState

_SUMMARY = ("task_id, slot, namespace, task_type, attempts, last_error, error_class, error_shape, error_group,"
            " first_attempt_at, dead_lettered_at")

__all__ = ["ChangedSinceRead", "DeadLetter", "DeadLetterFilter", "DeadLetterStore", "FailureGroup", "NotDeadLettered",
           "Replayed", "UniqueKeyHeld", "envelope_digest"]


def _filter_sql(where: DeadLetterFilter) -> tuple[list[str], list[object]]:
    """The filter as the conditions of a WHERE on dead_letters, and their arguments."""
    clauses, args = equalities((("namespace", where.namespace), ("task_type", where.task_type),
                                ("error_class", where.error_class), ("error_group", where.error_group)))
    if where.since is not None:
        clauses.append("dead_lettered_at >= %s")
        args.append(where.since)
    if where.until is not None:
        clauses.append("dead_lettered_at < %s")
        args.append(where.until)
    return clauses, args


class DeadLetterStore:
    """DeadLetterStoreProtocol (interface_dead_letters.py) over the task store's shards."""

    def __init__(self, shards: Shards):
        self._shards = shards

    # ---- reads ----

    def page(self, where: DeadLetterFilter, *, limit: int, cursor: tuple[dt.datetime, str] | None = None,
             oldest_first: bool = False) -> list[DeadLetter]:
        """Newest first, strictly before `cursor`; or oldest first (a bulk replay's walk),
        strictly after it. At most `limit` across all shards."""
        clauses, args = _filter_sql(where)
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
        clauses, args = _filter_sql(where)
        sql = f"SELECT COUNT(*) FROM dead_letters {_where_sql(clauses)}"
        return sum(shard.run(lambda cur: _one(cur, sql, args)) for shard in self._shards.all)

    def groups(self, where: DeadLetterFilter, limit: int = 100) -> list[FailureGroup]:
        """One line per (namespace, task type, failure group), the largest first: from the
        groups' counts (migrations/010), or, for a filter by time or error class, from the
        dead letters in that range."""
        if where.since is None and where.until is None and not where.error_class:
            return self._counted_groups(where, limit)
        clauses, args = _filter_sql(where)
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
                merged[key] = _merged(merged.get(key), group, sample=lambda a, b: (
                    max(a.sample_task_id, b.sample_task_id), max(a.sample_error, b.sample_error)))
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
                found[key] = _merged(found.get(key), group, sample=lambda a, b: max(
                    (a.last_at, a.sample_task_id, a.sample_error), (b.last_at, b.sample_task_id, b.sample_error))[1:])
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
            note_reopen_if_graph(cur, task_id, now)   # a task of a graph: what it skipped waits for it again
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


def _merged(seen: FailureGroup | None, group: FailureGroup,
            sample: Callable[[FailureGroup, FailureGroup], tuple[str, str]]) -> FailureGroup:
    """One group's lines of two shards as one: counts added, the time range spanned, the
    sample that `sample` picks of the two."""
    if seen is None:
        return group
    sample_task_id, sample_error = sample(seen, group)
    return dataclasses.replace(seen, count=seen.count + group.count, first_at=min(seen.first_at, group.first_at),
                               last_at=max(seen.last_at, group.last_at), sample_task_id=sample_task_id,
                               sample_error=sample_error)


def _where_sql(clauses: list[str]) -> str:
    return "WHERE " + " AND ".join(clauses) if clauses else ""


def _fetch(cur, sql: str, args) -> list[DeadLetter]:
    cur.execute(sql, args)
    return [DeadLetter(*row) for row in cur.fetchall()]


def _one(cur, sql: str, args) -> int:
    cur.execute(sql, args)
    return int(cur.fetchone()[0])
