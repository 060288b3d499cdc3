"""The contract of the audit trail, kept by AuditStore (audit.py, over the task store's
shards) and its twin MemoryAuditStore (memory_ops.py); tests/conformance/audit.py checks
both.

A record is written in the transaction of the action it describes, by the store that makes
the action (cron rules, dead letters, bulk replay jobs take the record with the action), so
an action without its record, or a record of an action that did not happen, cannot be.
Nothing changes or deletes a record. Every method may raise dispatcher.base.errors.Unavailable
(nothing written). Times are naive UTC, stored with millisecond precision.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    at: dt.datetime
    actor: str
    """Who: the caller's name from its token."""
    address: str
    """From where: the caller's address."""
    action: str
    """dlq.replay, dlq.edit, dlq.delete, bulk_replay.start, cron.update, ..."""
    target: str
    """What: `task:<id>`, `bulk_replay:<id>`, `cron:<namespace>/<name>`."""
    namespace: str = ""
    reason: str | None = None
    before: object = None
    """The value before the action (JSON-able), e.g. the payload."""
    after: object = None
    id: int = 0
    """The record's id on its shard (0 before it is written)."""

    def as_dict(self) -> dict:
        return {"id": self.id, "at": self.at.isoformat(timespec="milliseconds") + "Z", "actor": self.actor,
                "address": self.address, "action": self.action, "target": self.target,
                "namespace": self.namespace, "reason": self.reason, "before": self.before, "after": self.after}


class AuditProtocol(Protocol):
    """What the operators' services and the admin view need from the audit trail."""

    def append(self, record: AuditRecord, shard: int = 0) -> None:
        """Write the record of an action that writes nothing else (one on no task), on
        `shard`. actor is cut to 128 characters, address to 64, target to 200; before and
        after are stored as JSON (read back as what json.loads gives)."""

    def records(self, *, target: str = "", actor: str = "", action: str = "", namespace: str = "",
                before: dt.datetime | None = None, limit: int = 100) -> list[AuditRecord]:
        """The records equal to every condition given ("" matches all), strictly older than
        `before` when given; newest first (at, then id, descending), at most `limit`, from
        every shard. Each has its id on its shard."""
