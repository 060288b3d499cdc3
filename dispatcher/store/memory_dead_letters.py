"""MemoryDeadLetterStore: the dead letters' contract (interface_dead_letters.py) kept in
memory, on the twin task store's tables (its rows, its dead letters and their groups'
counts, which its record_outcomes writes) and under its lock, for unit tests; it passes the
same conformance suite as DeadLetterStore (tests/conformance/dead_letters.py)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

from dispatcher.base.errors import TaskNotFound
from dispatcher.store import records as r
from dispatcher.store.errors import ChangedSinceRead, NotDeadLettered
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter, FailureGroup, Replayed, envelope_digest
from dispatcher.store.memory import MemoryTaskStore, _ms
from dispatcher.store.memory_ops import append_audit
from taskring.task import TaskState


class MemoryDeadLetterStore:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    # ---- reads ----

    def _matching(self, where: DeadLetterFilter) -> list[r.DeadLetter]:
        with self._db._lock:
            return [e.letter for e in self._db._dead.values() if where.matches(e.letter)]

    def page(self, where: DeadLetterFilter, *, limit: int, cursor: tuple[dt.datetime, str] | None = None,
             oldest_first: bool = False) -> list[r.DeadLetter]:
        found = [d for d in self._matching(where) if cursor is None
                 or (d.cursor > cursor if oldest_first else d.cursor < cursor)]
        return sorted(found, key=lambda d: d.cursor, reverse=not oldest_first)[:limit]

    def count(self, where: DeadLetterFilter) -> int:
        return len(self._matching(where))

    def groups(self, where: DeadLetterFilter, limit: int = 100) -> list[FailureGroup]:
        if where.since is None and where.until is None and not where.error_class:
            with self._db._lock:
                found = [g for g in self._db._groups.values() if g.count > 0 and all(
                    not want or got == want for want, got in ((where.namespace, g.namespace),
                                                              (where.task_type, g.task_type),
                                                              (where.error_group, g.error_group)))]
        else:
            by_group: dict[tuple[str, str, str], list[r.DeadLetter]] = {}
            for d in self._matching(where):
                by_group.setdefault((d.namespace, d.task_type, d.error_group or ""), []).append(d)
            found = [FailureGroup(*key, min(d.error_class or "" for d in ds), min(d.error_shape or "" for d in ds),
                                  len(ds), min(d.dead_lettered_at for d in ds), max(d.dead_lettered_at for d in ds),
                                  max(d.task_id for d in ds), max(d.last_error or "" for d in ds))
                     for key, ds in by_group.items()]
        return sorted(found, key=lambda g: (-g.count, g.namespace, g.task_type, g.error_group))[:limit]

    def get(self, task_id: str) -> tuple[r.DeadLetter, str | None]:
        with self._db._lock:
            entry = self._db._dead.get(task_id)
            if entry is None:
                raise TaskNotFound(task_id)
            return entry.letter, entry.last_stack_trace

    # ---- actions ----

    def replay(self, task_id: str, *, rewrite: Callable[[bytes, int], bytes], detail: str,
               record: Callable[[Replayed], AuditRecord], node: str, now: dt.datetime,
               expect_digest: str | None = None) -> Replayed:
        db = self._db
        with db._lock:
            row = db._rows.get(task_id)
            if row is None:
                raise TaskNotFound(task_id)
            if row.status != r.DEAD_LETTERED or task_id not in db._dead:
                raise NotDeadLettered(task_id, "dead-lettered, and deleted from the dead letters"
                                      if row.status == r.DEAD_LETTERED else str(row.status))
            if expect_digest is not None and envelope_digest(row.envelope) != expect_digest:
                raise ChangedSinceRead(task_id)
            after = rewrite(row.envelope, row.attempts)
            replayed = Replayed(task_id, row.namespace, row.envelope, after, row.attempts)
            audited = record(replayed)   # before anything is written: a refusal here writes nothing
            now = _ms(now)
            db._update(task_id, status=r.PENDING, trigger_at=now, envelope=after, updated_at=now)
            self._leave(db._dead.pop(task_id).letter)
            db._append([r.Event(task_id, TaskState.RETRY_WAIT, now, node, row.attempts, detail)])
            append_audit(db, audited)
            return replayed

    def delete(self, task_id: str, record: Callable[[r.DeadLetter, bytes], AuditRecord]) -> r.DeadLetter:
        db = self._db
        with db._lock:
            entry = db._dead.get(task_id)
            if entry is None:
                raise TaskNotFound(task_id)
            audited = record(entry.letter, entry.envelope)
            del db._dead[task_id]
            self._leave(entry.letter)
            append_audit(db, audited)
            return entry.letter

    def _leave(self, letter: r.DeadLetter) -> None:
        """The twin of store/dead_lettering.py leave: one fewer in the entry's group."""
        key = (letter.namespace, letter.task_type, letter.error_group or "")
        group = self._db._groups.get(key)
        if group is not None and group.count > 0:
            self._db._groups[key] = dataclasses.replace(group, count=group.count - 1)
