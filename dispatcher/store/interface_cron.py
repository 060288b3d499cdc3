"""The contract of the cron rules, kept by CronStore (cron.py, over the task store's shards)
and its twin MemoryCronStore (memory_cron.py); tests/conformance/cron.py checks both.

A rule lives beside the rows of its fire tasks, on its slot (migrations/007_cron_rules.sql).
A name is unique in its namespace. A fire task's id is `cron-<rule_uid>-<fire ms>` (13
digits), so a rule's fires sort by time and a new rule_uid (create, update, resume) makes
new fire tasks, never the cancelled ones of the same times.

The API's writes are unfenced, conditional on the rule as it is; each may take the audit
record of the change, written in the same atomic step. The owner's write, materialize, is
fenced like the task store's: under the slot's epoch, and only while the rule is still at
the version the plan was made from. Every method may raise dispatcher.base.errors.Unavailable
(nothing written). Times are naive UTC, with millisecond precision.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from dispatcher.store import records as r
from dispatcher.store.interface_audit import AuditRecord
from taskring.wire import pb


@dataclasses.dataclass(frozen=True)
class StoredRule:
    namespace: str
    name: str
    rule_uid: str
    slot: int
    spec: bytes
    paused: bool
    planned_until: dt.datetime
    last_task_id: str | None
    skipped: int
    version: int
    created_at: dt.datetime
    updated_at: dt.datetime

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fire_prefix(self) -> str:
        return f"cron-{self.rule_uid}-"

    def message(self) -> pb.CronRule:
        """The rule as validated and stored (its caller-given fields)."""
        return pb.CronRule.FromString(self.spec)


@dataclasses.dataclass(frozen=True)
class LastFire:
    task_id: str
    fire_at: dt.datetime
    status: r.Status
    attempts: int


Audit = Callable[[StoredRule | None, StoredRule | None], AuditRecord]
"""The audit record of a change, from the rule before and after it (written with it)."""


class CronStoreProtocol(Protocol):
    """What the cron API and the materializer (dispatcher/cron) need."""

    # ---- the API's writes (unfenced; conditional on the rule's row) ----

    def create(self, namespace: str, name: str, rule_uid: str, slot: int, task_type: str, spec: bytes,
               now: dt.datetime, record: Audit | None = None) -> StoredRule:
        """A new rule: unpaused, planned_until = created_at = updated_at = `now`, version 1,
        skipped 0, no last task; with `record(None, rule)`. RuleExists (nothing written)
        when the name is taken in its namespace."""

    def update(self, namespace: str, name: str, spec: bytes, rule_uid: str, now: dt.datetime,
               node: str, record: Audit | None = None) -> StoredRule:
        """A new spec and `rule_uid`, planned again from `now`: the rule's fire tasks that
        no executor has been handed (pending, enqueued, claimed) become cancelled, each with
        a "cancelled" event at `now` by `node` saying "rule updated". version + 1,
        updated_at `now`; with `record(before, after)`. RuleNotFound writes nothing."""

    def pause(self, namespace: str, name: str, now: dt.datetime, node: str,
              record: Audit | None = None) -> StoredRule:
        """paused, its unstarted fires cancelled ("rule paused"), version + 1, updated_at
        `now`, with the audit record. RuleNotFound writes nothing."""

    def resume(self, namespace: str, name: str, rule_uid: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        """Unpaused and planned again from `now` under a new `rule_uid` (what fell due while
        paused is not caught up); no fire is cancelled. version + 1, updated_at `now`, with
        the audit record. RuleNotFound writes nothing."""

    def delete(self, namespace: str, name: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        """The rule goes, its unstarted fires cancelled ("rule deleted"), with
        `record(rule, None)`; returns the rule as it was. RuleNotFound writes nothing."""

    # ---- reads ----

    def get(self, namespace: str, name: str) -> StoredRule:
        """The rule; RuleNotFound."""

    def all(self, namespace: str = "") -> list[StoredRule]:
        """Every rule (of `namespace` when given), by (namespace, name)."""

    def last_fire(self, rule: StoredRule, now: dt.datetime) -> LastFire | None:
        """The rule's (its current rule_uid's) latest fire task due at or before `now`
        (fire ids sort by time), with its status and attempts; None when there is none."""

    # ---- the owner's side ----

    def to_plan(self, slots: Iterable[int], before: dt.datetime) -> list[StoredRule]:
        """The unpaused rules of these slots planned only up to before `before` (strictly),
        in no particular order."""

    def statuses(self, slot: int, task_ids: Sequence[str]) -> dict[str, r.Status]:
        """{task_id: status} of those of `task_ids` that exist: fire tasks of a rule of
        `slot` (the slot says where to look, not which rows match)."""

    def materialize(self, rule: StoredRule, epoch: int, fires: Sequence[r.NewTask], planned_until: dt.datetime,
                    skipped: int, now: dt.datetime, node: str) -> bool | None:
        """Write one plan of `rule` (as read, at rule.version) under its slot's `epoch`, in
        one atomic step: planned_until, skipped += `skipped`, last_task_id = the last fire's
        id (kept when there is no fire), and the fire tasks whose ids are new, inserted as
        the task store's insert_tasks does (an existing id is left as it is). True when
        written; None when the epoch is stale, False when the rule changed (its version)
        or was paused or deleted since it was read: nothing written then. (MariaDB also
        answers False for a plan that would change nothing, no fire and the same
        planned_until: it counts changed rows. The materializer treats both alike.)"""
