"""The audit trail (migrations/008_operations.sql): one record per manual action.

A record is appended inside the transaction of the action it describes (`append`), so an
action without its record, or a record of an action that did not happen, cannot be.
Nothing here changes or deletes a record, and the table's triggers refuse it to SQL too.
Reads ask every shard and merge by time, newest first. The contract is interface_audit.py's.
"""
from __future__ import annotations

import datetime as dt
import heapq
import json

from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.shards import Shards
from dispatcher.store.sql_literals import equalities

_COLUMNS = "id, at, actor, address, action, target, namespace, reason, before_json, after_json"

__all__ = ["AuditRecord", "AuditStore", "append"]


def append(cur, record: AuditRecord) -> None:
    """Write `record` in the caller's transaction (the action's own)."""
    cur.execute("INSERT INTO audit_log (at, actor, address, action, target, namespace, reason, before_json,"
                " after_json) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (record.at, record.actor[:128], record.address[:64], record.action, record.target[:200],
                 record.namespace, record.reason, _dumps(record.before), _dumps(record.after)))


def _dumps(value: object) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _loads(text: str | None) -> object:
    return None if text is None else json.loads(text)


class AuditStore:
    """AuditProtocol (interface_audit.py) over the task store's shards."""

    def __init__(self, shards: Shards):
        self._shards = shards

    def append(self, record: AuditRecord, shard: int = 0) -> None:
        """A record of an action that writes nothing else (one on no task)."""
        self._shards.all[shard].run(lambda cur: append(cur, record))

    def records(self, *, target: str = "", actor: str = "", action: str = "", namespace: str = "",
                before: dt.datetime | None = None, limit: int = 100) -> list[AuditRecord]:
        """Newest first, at most `limit`, strictly older than `before` when given. Each
        condition is an equality the indexes serve (target) or a filter on the newest rows."""
        where, args = equalities((("target", target), ("actor", actor), ("action", action),
                                  ("namespace", namespace)))
        if before is not None:
            where.append("at < %s")
            args.append(before)
        sql = (f"SELECT {_COLUMNS} FROM audit_log {'WHERE ' + ' AND '.join(where) if where else ''}"
               " ORDER BY at DESC, id DESC LIMIT %s")
        per_shard = []
        for shard in self._shards.all:
            def body(cur):
                cur.execute(sql, (*args, limit))
                return [AuditRecord(at=row[1], actor=row[2], address=row[3], action=row[4], target=row[5],
                                    namespace=row[6], reason=row[7], before=_loads(row[8]), after=_loads(row[9]),
                                    id=row[0]) for row in cur.fetchall()]
            per_shard.append(shard.run(body))
        merged = heapq.merge(*per_shard, key=lambda rec: (rec.at, rec.id), reverse=True)
        return list(merged)[:limit]
