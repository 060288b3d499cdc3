"""The twins of the operators' stores, on the twin task store's tables and under its lock,
for unit tests: the audit trail (interface_audit.py), task search (interface_search.py),
bulk replay jobs (interface_replays.py) and the per-minute task counts (interface_stats.py).
Each passes the conformance suite of its MariaDB version (tests/conformance/audit.py,
search.py, replays.py, stats.py)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence

from dispatcher.store import records as r
from dispatcher.store.errors import JobNotFound, JobStateConflict
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter
from dispatcher.store.interface_replays import DONE, NEXT_STATE, RUNNING, Job
from dispatcher.store.interface_search import MAX_PAGE, Query, TaskSummary, trace_matches
from dispatcher.store.interface_stats import StatsRow
from dispatcher.store.memory import MemoryTaskStore, _ms


def _json(value: object) -> object:
    """A value as it reads back from its JSON column."""
    return None if value is None else json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False))


def append_audit(db: MemoryTaskStore, record: AuditRecord) -> None:
    """The twin of store/audit.py append: write `record`, under the lock the caller holds."""
    db._audit.append(dataclasses.replace(
        record, at=_ms(record.at), actor=record.actor[:128], address=record.address[:64], target=record.target[:200],
        before=_json(record.before), after=_json(record.after), id=len(db._audit) + 1))


class MemoryAuditStore:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    def append(self, record: AuditRecord, shard: int = 0) -> None:
        with self._db._lock:
            append_audit(self._db, record)

    def records(self, *, target: str = "", actor: str = "", action: str = "", namespace: str = "",
                before: dt.datetime | None = None, limit: int = 100) -> list[AuditRecord]:
        wanted = {"target": target, "actor": actor, "action": action, "namespace": namespace}
        with self._db._lock:
            found = [rec for rec in self._db._audit
                     if all(not want or getattr(rec, name) == want for name, want in wanted.items())
                     and (before is None or rec.at < before)]
        return sorted(found, key=lambda rec: (rec.at, rec.id), reverse=True)[:limit]


class MemorySearch:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    def search(self, q: Query, *, before: tuple[dt.datetime, str] | None = None,
               limit: int = 50) -> list[TaskSummary]:
        limit = max(1, min(limit, MAX_PAGE))
        db = self._db
        with db._lock:
            if q.unique_key:
                holder = db._keys.get((q.namespace, q.unique_key))
                rows = [db._rows[holder[0]]] if holder is not None and holder[0] in db._rows else []
                return [_summary(row) for row in rows][:limit]
            if q.trace_id:
                rows = [row for row in db._rows.values() if trace_matches(q.trace_id, db._traces.get(row.task_id, ""))]
            else:
                rows = [row for row in db._rows.values()
                        if (row.namespace, row.task_type) == (q.namespace, q.task_type)
                        and (not q.status or row.status == q.status)
                        and (q.since is None or row.created_at >= q.since)
                        and (q.until is None or row.created_at < q.until)]
        found = [_summary(row) for row in rows if before is None or (row.created_at, row.task_id) < before]
        return sorted(found, key=lambda t: t.cursor, reverse=True)[:limit]


def _summary(row: r.TaskRow) -> TaskSummary:
    return TaskSummary(row.task_id, row.slot, row.namespace, row.task_type, row.status, row.attempts, row.trigger_at,
                       row.created_at, row.updated_at, row.last_error)


class MemoryReplayStore:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    def create(self, where: DeadLetterFilter, *, rate_per_s: int, retries: int, total: int,
               record: AuditRecord) -> Job:
        db = self._db
        with db._lock:
            job_id = max(db._jobs, default=0) + 1
            at = _ms(record.at)
            db._jobs[job_id] = Job(job_id, where, rate_per_s, retries, RUNNING, total, 0, 0, None, None,
                                   record.reason or "", record.actor, at, at, "", None)
            append_audit(db, dataclasses.replace(record, target=f"bulk_replay:{job_id}"))
            return db._jobs[job_id]

    def get(self, job_id: int) -> Job:
        with self._db._lock:
            return self._get(job_id)

    def _get(self, job_id: int) -> Job:
        job = self._db._jobs.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return job

    def jobs(self, limit: int = 50) -> list[Job]:
        with self._db._lock:
            return [self._db._jobs[i] for i in sorted(self._db._jobs, reverse=True)[:limit]]

    def change_state(self, job_id: int, action: str, record: AuditRecord) -> Job:
        allowed, to = NEXT_STATE[action]
        db = self._db
        with db._lock:
            job = self._get(job_id)
            if job.state not in allowed:
                raise JobStateConflict(job_id, job.state, action)
            db._jobs[job_id] = dataclasses.replace(job, state=to, updated_at=_ms(record.at))
            append_audit(db, dataclasses.replace(record, before={"state": job.state}, after={"state": to}))
            return db._jobs[job_id]

    def take_lease(self, node: str, now: dt.datetime, until: dt.datetime) -> Job | None:
        db = self._db
        with db._lock:
            running = [db._jobs[i] for i in sorted(db._jobs) if db._jobs[i].state == RUNNING]
            free = [job for job in running
                    if job.lease_owner == node or job.lease_until is None or job.lease_until < now]
            if free:
                db._jobs[free[0].id] = dataclasses.replace(free[0], lease_owner=node, lease_until=_ms(until))
            held = [db._jobs[job.id] for job in running if db._jobs[job.id].lease_owner == node]
            return held[0] if held else None

    def advance(self, job_id: int, node: str, *, cursor: tuple[dt.datetime, str] | None, replayed: int,
                skipped: int, finished: bool, now: dt.datetime, lease_until: dt.datetime) -> bool:
        db = self._db
        with db._lock:
            job = db._jobs.get(job_id)
            if job is None or job.lease_owner != node:
                return False
            db._jobs[job_id] = dataclasses.replace(
                job, cursor_at=_ms(cursor[0]) if cursor else job.cursor_at,
                cursor_task_id=cursor[1] if cursor else job.cursor_task_id, replayed=job.replayed + replayed,
                skipped=job.skipped + skipped, updated_at=_ms(now), lease_until=_ms(lease_until),
                state=DONE if finished and job.state == RUNNING else job.state)
            return True


class MemoryTaskStats:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    def write(self, rows: Sequence[StatsRow]) -> None:
        with self._db._lock:
            for row in rows:
                self._db._task_stats[(row.minute, row.namespace, row.task_type, row.node)] = row

    def read(self, *, since: dt.datetime, namespace: str = "", task_type: str = "") -> list[StatsRow]:
        with self._db._lock:
            return [row for row in self._db._task_stats.values() if row.minute >= since
                    and namespace in ("", row.namespace) and task_type in ("", row.task_type)]
