"""MemoryCronStore: the cron rules' contract (interface_cron.py) kept in memory, on the
twin task store's tables and under its lock, for unit tests; it passes the same conformance
suite as CronStore (tests/conformance/cron.py)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence

from dispatcher.store import records as r
from dispatcher.store.errors import RuleExists, RuleNotFound
from dispatcher.store.interface_cron import Audit, LastFire, StoredRule
from dispatcher.store.memory import MemoryTaskStore, _ms
from dispatcher.store.memory_ops import append_audit
from taskring.task import TaskState


class MemoryCronStore:
    def __init__(self, tasks: MemoryTaskStore):
        self._db = tasks

    # ---- the API's writes ----

    def create(self, namespace: str, name: str, rule_uid: str, slot: int, task_type: str, spec: bytes,
               now: dt.datetime, record: Audit | None = None) -> StoredRule:
        db = self._db
        with db._lock:
            if (namespace, name) in db._rules:
                raise RuleExists(f"{namespace}/{name}")
            now = _ms(now)
            rule = StoredRule(namespace, name, rule_uid, slot, bytes(spec), False, now, None, 0, 1, now, now)
            db._rules[(namespace, name)] = rule
            if record is not None:
                append_audit(db, record(None, rule))
            return rule

    def update(self, namespace: str, name: str, spec: bytes, rule_uid: str, now: dt.datetime,
               node: str, record: Audit | None = None) -> StoredRule:
        return self._change(namespace, name, now, node, "rule updated", record, spec=bytes(spec), rule_uid=rule_uid,
                            planned_until=_ms(now))

    def pause(self, namespace: str, name: str, now: dt.datetime, node: str,
              record: Audit | None = None) -> StoredRule:
        return self._change(namespace, name, now, node, "rule paused", record, paused=True)

    def resume(self, namespace: str, name: str, rule_uid: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        return self._change(namespace, name, now, node, None, record, paused=False, rule_uid=rule_uid,
                            planned_until=_ms(now))

    def delete(self, namespace: str, name: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        db = self._db
        with db._lock:
            found = self._find(namespace, name)
            self._cancel_unstarted(found, _ms(now), node, "rule deleted")
            del db._rules[(namespace, name)]
            if record is not None:
                append_audit(db, record(found, None))
            return found

    def _change(self, namespace: str, name: str, now: dt.datetime, node: str, cancel_reason: str | None,
                record: Audit | None, **changes) -> StoredRule:
        db = self._db
        with db._lock:
            found = self._find(namespace, name)
            now = _ms(now)
            if cancel_reason is not None:
                self._cancel_unstarted(found, now, node, cancel_reason)
            changed = dataclasses.replace(found, **changes, version=found.version + 1, updated_at=now)
            db._rules[(namespace, name)] = changed
            if record is not None:
                append_audit(db, record(found, changed))
            return changed

    def _cancel_unstarted(self, rule: StoredRule, now: dt.datetime, node: str, reason: str) -> None:
        db = self._db
        for row in sorted(db._rows.values(), key=lambda row: row.task_id):
            if row.task_id.startswith(rule.fire_prefix) and row.status in (r.PENDING, r.ENQUEUED, r.CLAIMED):
                db._append([r.Event(row.task_id, TaskState.CANCELLED, now, node, row.attempts, reason)])
                db._update(row.task_id, status=r.CANCELLED, updated_at=now)

    def _find(self, namespace: str, name: str) -> StoredRule:
        rule = self._db._rules.get((namespace, name))
        if rule is None:
            raise RuleNotFound(f"{namespace}/{name}")
        return rule

    # ---- reads ----

    def get(self, namespace: str, name: str) -> StoredRule:
        with self._db._lock:
            return self._find(namespace, name)

    def all(self, namespace: str = "") -> list[StoredRule]:
        with self._db._lock:
            return sorted((rule for rule in self._db._rules.values() if not namespace or rule.namespace == namespace),
                          key=lambda rule: (rule.namespace, rule.name))

    def last_fire(self, rule: StoredRule, now: dt.datetime) -> LastFire | None:
        until = f"{rule.fire_prefix}{int(now.replace(tzinfo=dt.UTC).timestamp() * 1000):013d}"
        with self._db._lock:
            fires = [row for row in self._db._rows.values()
                     if row.task_id.startswith(rule.fire_prefix) and row.task_id <= until]
            if not fires:
                return None
            last = max(fires, key=lambda row: row.task_id)
            return LastFire(last.task_id, last.trigger_at, last.status, last.attempts)

    # ---- the owner's side ----

    def to_plan(self, slots: Iterable[int], before: dt.datetime) -> list[StoredRule]:
        wanted, before = set(slots), _ms(before)
        with self._db._lock:
            return [rule for rule in self._db._rules.values()
                    if rule.slot in wanted and not rule.paused and rule.planned_until < before]

    def statuses(self, slot: int, task_ids: Sequence[str]) -> dict[str, r.Status]:
        with self._db._lock:
            return {tid: self._db._rows[tid].status for tid in task_ids if tid in self._db._rows}

    def materialize(self, rule: StoredRule, epoch: int, fires: Sequence[r.NewTask], planned_until: dt.datetime,
                    skipped: int, now: dt.datetime, node: str) -> bool | None:
        db = self._db
        with db._lock:
            if db._stale({rule.slot: epoch}):
                return None
            current = db._rules.get((rule.namespace, rule.name))
            if current is None or current.version != rule.version or current.paused:
                return False
            db._check_ids(fires)
            db._rules[(rule.namespace, rule.name)] = dataclasses.replace(
                current, planned_until=_ms(planned_until), skipped=current.skipped + skipped,
                last_task_id=fires[-1].task_id if fires else current.last_task_id)
            db._insert_rows({t.task_id: t for t in reversed(fires) if t.task_id not in db._rows}.values(), node)
            return True
