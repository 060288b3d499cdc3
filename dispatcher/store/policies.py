"""The policies set through the API, on the first shard (migrations/015_type_policies.sql).

The contract is interface_policies.py's. A change reads the type's row under a lock
(SELECT ... FOR UPDATE), checks the caller's revision, writes the next one and its audit
record in one transaction.
"""
from __future__ import annotations

import datetime as dt

from dispatcher.store import audit
from dispatcher.store.errors import PolicyNotFound, PolicyRevisionMismatch
from dispatcher.store.interface_policies import PolicyAudit, StoredPolicy
from dispatcher.store.shards import Shards

_COLUMNS = "namespace, task_type, policy_json, revision, deleted, updated_by, updated_at"


def _row(row) -> tuple[StoredPolicy, bool]:
    return StoredPolicy(row[0], row[1], row[2], int(row[3]), row[5], row[6]), bool(row[4])


class PolicyStore:
    """PolicyStoreProtocol over the task store's first shard."""

    def __init__(self, shards: Shards):
        self._shard = shards.first

    def all(self) -> list[StoredPolicy]:
        def body(cur):
            cur.execute(f"SELECT {_COLUMNS} FROM type_policies WHERE deleted = 0 ORDER BY namespace, task_type")
            return [_row(row)[0] for row in cur.fetchall()]
        return self._shard.run(body)

    def put(self, namespace: str, task_type: str, policy_json: str, *, actor: str, now: dt.datetime,
            if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        def body(cur):
            before, revision = _locked(cur, namespace, task_type, if_revision)
            after = StoredPolicy(namespace, task_type, policy_json, revision + 1, actor[:128], _ms(now))
            cur.execute("INSERT INTO type_policies (namespace, task_type, policy_json, revision, deleted, updated_by,"
                        " updated_at) VALUES (%s, %s, %s, %s, 0, %s, %s) ON DUPLICATE KEY UPDATE"
                        " policy_json = VALUES(policy_json), revision = VALUES(revision), deleted = 0,"
                        " updated_by = VALUES(updated_by), updated_at = VALUES(updated_at)",
                        (namespace, task_type, policy_json, after.revision, after.updated_by, after.updated_at))
            if record is not None:
                audit.append(cur, record(before, after))
            return after
        return self._shard.run(body)

    def delete(self, namespace: str, task_type: str, *, actor: str, now: dt.datetime,
               if_revision: int | None = None, record: PolicyAudit | None = None) -> StoredPolicy:
        def body(cur):
            before, _ = _locked(cur, namespace, task_type, if_revision)
            if before is None:
                raise PolicyNotFound(f"{namespace}/{task_type}")
            cur.execute("UPDATE type_policies SET deleted = 1, updated_by = %s, updated_at = %s"
                        " WHERE namespace = %s AND task_type = %s", (actor[:128], _ms(now), namespace, task_type))
            if record is not None:
                audit.append(cur, record(before, None))
            return before
        return self._shard.run(body)


def _locked(cur, namespace: str, task_type: str, if_revision: int | None) -> tuple[StoredPolicy | None, int]:
    """The live entry (None if none or a tombstone) and the row's revision (0 if no row), locked,
    once the caller's revision matches."""
    cur.execute(f"SELECT {_COLUMNS} FROM type_policies WHERE namespace = %s AND task_type = %s FOR UPDATE",
                (namespace, task_type))
    row = cur.fetchone()
    live, revision = None, 0
    if row is not None:
        stored, deleted = _row(row)
        revision = stored.revision
        live = None if deleted else stored
    if if_revision is not None and if_revision != (live.revision if live is not None else 0):
        raise PolicyRevisionMismatch(f"{namespace}/{task_type}", if_revision, live.revision if live else 0)
    return live, revision


def _ms(at: dt.datetime) -> dt.datetime:
    return at.replace(microsecond=at.microsecond // 1000 * 1000)
