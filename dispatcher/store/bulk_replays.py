"""Bulk replay jobs (migrations/008_operations.sql), on shard 0.

A job is a filter over the dead letters, a rate and a retry budget. A node runs it while
it holds the job's lease (take_lease), and each step stores the cursor it reached and the
counts in the same statement that renews the lease (advance), conditional on still
holding it: a node that lost the lease writes nothing, and whoever takes the job next
goes on from the stored cursor. State changes by a person (pause, resume, cancel) are
audited in their own transaction.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json

from dispatcher.store import audit
from dispatcher.store.errors import JobNotFound, JobStateConflict
from dispatcher.store.interface_dead_letters import DeadLetterFilter
from dispatcher.store.interface_replays import CANCELLED, DONE, NEXT_STATE, PAUSED, RUNNING, STATES, Job
from dispatcher.store.shards import Shards

_COLUMNS = ("id, filter_json, rate_per_s, retries, state, total, replayed, skipped, cursor_at, cursor_task_id, reason,"
            " created_by, created_at, updated_at, lease_owner, lease_until")

__all__ = ["CANCELLED", "DONE", "PAUSED", "RUNNING", "STATES", "BulkReplayStore", "Job", "JobNotFound",
           "JobStateConflict"]


def _filter_to_json(where: DeadLetterFilter) -> str:
    return json.dumps({k: (v.isoformat() if isinstance(v, dt.datetime) else v)
                       for k, v in dataclasses.asdict(where).items()})


def _filter_of_json(text: str) -> DeadLetterFilter:
    data = json.loads(text)
    for key in ("since", "until"):
        if data.get(key):
            data[key] = dt.datetime.fromisoformat(data[key])
    return DeadLetterFilter(**data)


def _job(row) -> Job:
    return Job(row[0], _filter_of_json(row[1]), *row[2:])


class BulkReplayStore:
    """ReplayStoreProtocol (interface_replays.py) on the task store's shard 0."""

    def __init__(self, shards: Shards):
        self._shard = shards.first

    def create(self, where: DeadLetterFilter, *, rate_per_s: int, retries: int, total: int,
               record: audit.AuditRecord) -> Job:
        def body(cur):
            cur.execute("INSERT INTO bulk_replays (filter_json, rate_per_s, retries, state, total, reason, created_by,"
                        " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (_filter_to_json(where), rate_per_s, retries, RUNNING, total, record.reason, record.actor,
                         record.at, record.at))
            job_id = cur.lastrowid
            audit.append(cur, dataclasses.replace(record, target=f"bulk_replay:{job_id}"))
            return job_id
        return self.get(self._shard.run(body))

    def get(self, job_id: int) -> Job:
        def body(cur):
            cur.execute(f"SELECT {_COLUMNS} FROM bulk_replays WHERE id = %s", (job_id,))
            return cur.fetchone()
        row = self._shard.run(body)
        if row is None:
            raise JobNotFound(job_id)
        return _job(row)

    def jobs(self, limit: int = 50) -> list[Job]:
        def body(cur):
            cur.execute(f"SELECT {_COLUMNS} FROM bulk_replays ORDER BY id DESC LIMIT %s", (limit,))
            return [_job(row) for row in cur.fetchall()]
        return self._shard.run(body)

    def change_state(self, job_id: int, action: str, record: audit.AuditRecord) -> Job:
        """pause, resume or cancel, with its audit record; JobStateConflict from a state that
        does not allow it (a done or cancelled job stays so)."""
        allowed, to = NEXT_STATE[action]

        def body(cur):
            cur.execute("SELECT state FROM bulk_replays WHERE id = %s FOR UPDATE", (job_id,))
            row = cur.fetchone()
            if row is None:
                raise JobNotFound(job_id)
            if row[0] not in allowed:
                raise JobStateConflict(job_id, row[0], action)
            cur.execute("UPDATE bulk_replays SET state = %s, updated_at = %s WHERE id = %s", (to, record.at, job_id))
            audit.append(cur, dataclasses.replace(record, before={"state": row[0]}, after={"state": to}))
        self._shard.run(body)
        return self.get(job_id)

    # ---- the runner's side ----

    def take_lease(self, node: str, now: dt.datetime, until: dt.datetime) -> Job | None:
        """A running job this node now holds until `until`: one it held already, else the
        oldest whose lease is free or has run out. None when there is none."""
        def body(cur):
            cur.execute("UPDATE bulk_replays SET lease_owner = %s, lease_until = %s WHERE state = %s"
                        " AND (lease_owner = %s OR lease_until IS NULL OR lease_until < %s) ORDER BY id LIMIT 1",
                        (node, until, RUNNING, node, now))
            cur.execute(f"SELECT {_COLUMNS} FROM bulk_replays WHERE state = %s AND lease_owner = %s"
                        " ORDER BY id LIMIT 1", (RUNNING, node))
            row = cur.fetchone()
            return _job(row) if row else None
        return self._shard.run(body)

    def advance(self, job_id: int, node: str, *, cursor: tuple[dt.datetime, str] | None, replayed: int,
                skipped: int, finished: bool, now: dt.datetime, lease_until: dt.datetime) -> bool:
        """Store a step's progress and renew the lease; False (nothing written) when this
        node no longer holds it. `finished`: the walk reached the end (running -> done)."""
        def body(cur):
            cur.execute(
                "UPDATE bulk_replays SET cursor_at = COALESCE(%s, cursor_at),"
                " cursor_task_id = COALESCE(%s, cursor_task_id), replayed = replayed + %s, skipped = skipped + %s,"
                " updated_at = %s, lease_until = %s, state = IF(%s AND state = %s, %s, state)"
                " WHERE id = %s AND lease_owner = %s",
                (cursor[0] if cursor else None, cursor[1] if cursor else None, replayed, skipped, now, lease_until,
                 finished, RUNNING, DONE, job_id, node))
            # Asked, not taken from the affected-row count: an update that changes no value
            # counts 0 rows in MySQL's default protocol.
            cur.execute("SELECT lease_owner FROM bulk_replays WHERE id = %s", (job_id,))
            row = cur.fetchone()
            return row is not None and row[0] == node
        return bool(self._shard.run(body))
