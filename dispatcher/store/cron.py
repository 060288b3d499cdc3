"""Cron rules in the task store: the registry, and the fenced write of a plan's fires.

The contract is interface_cron.py's. A rule lives on the shard of its slot
(migrations/007_cron_rules.sql), beside the rows of its fire tasks. Reads by name ask every
shard (a name is unique in its namespace, which spans shards); the owner's work is by slot,
one shard at a time.

materialize is the owner's write: in one transaction on the slot's shard it checks the
slot's epoch (as every fenced write does, mysql.py), advances the rule's plan only if the
rule is still at the version the plan was made from, and inserts the fire tasks whose ids
are new. A stale owner, a plan made before an update, or a second materialization of the
same fire therefore writes nothing.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from dispatcher.store import audit, fenced
from dispatcher.store import records as r
from dispatcher.store.errors import RuleExists, RuleNotFound
from dispatcher.store.interface_cron import Audit, LastFire, StoredRule
from dispatcher.store.mysql import TaskStore
from dispatcher.store.sharded import ShardedTaskStore
from dispatcher.store.sql_literals import marks
from taskring.task import TaskState

_COLUMNS = ("namespace, name, rule_uid, slot, spec, paused, planned_until, last_task_id, skipped, version,"
            " created_at, updated_at")

__all__ = ["Audit", "CronStore", "LastFire", "RuleExists", "RuleNotFound", "StoredRule"]


class CronStore:
    """CronStoreProtocol over the task store's shards (one for an unsharded store)."""

    def __init__(self, tasks: TaskStore | ShardedTaskStore):
        if isinstance(tasks, ShardedTaskStore):
            self._shards = list(tasks.shards)
            self._shard_of = tasks.shard_of
        else:
            self._shards = [tasks]
            self._shard_of = lambda slot: tasks

    # ---- the API's writes (unfenced; conditional on the rule's row) ----

    def create(self, namespace: str, name: str, rule_uid: str, slot: int, task_type: str, spec: bytes,
               now: dt.datetime, record: Audit | None = None) -> StoredRule:
        """A new rule, planned from `now`. RuleExists when the name is taken on any shard."""
        key = f"{namespace}/{name}"
        for shard in self._shards:
            if shard.run(lambda cur: self._select(cur, namespace, name)) is not None:
                raise RuleExists(key)

        def body(cur):
            inserted = cur.execute(
                "INSERT IGNORE INTO cron_rules (namespace, name, rule_uid, slot, task_type, spec, paused,"
                " planned_until, last_task_id, skipped, version, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, 0, %s, NULL, 0, 1, %s, %s)",
                (namespace, name, rule_uid, slot, task_type, spec, now, now, now))
            if not inserted:
                raise RuleExists(key)
            created = self._select(cur, namespace, name)
            if record is not None:
                audit.append(cur, record(None, created))
            return created
        return self._shard_of(slot).run(body)

    def update(self, namespace: str, name: str, spec: bytes, rule_uid: str, now: dt.datetime,
               node: str, record: Audit | None = None) -> StoredRule:
        """A new spec: the rule's fires not yet handed to an executor are cancelled and it is
        planned again from `now` under the new spec and a new `rule_uid` (its fires are new
        tasks, not the cancelled ones of the same fire times)."""
        return self._change(namespace, name, now, node, "spec = %s, rule_uid = %s, planned_until = %s",
                            (spec, rule_uid, now), "rule updated", record)

    def pause(self, namespace: str, name: str, now: dt.datetime, node: str,
              record: Audit | None = None) -> StoredRule:
        return self._change(namespace, name, now, node, "paused = 1", (), "rule paused", record)

    def resume(self, namespace: str, name: str, rule_uid: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        """Planned again from `now`, under a new `rule_uid` (the pause cancelled the fires it
        had planned ahead): what fell due while paused is not caught up."""
        return self._change(namespace, name, now, node, "paused = 0, rule_uid = %s, planned_until = %s",
                            (rule_uid, now), None, record)

    def delete(self, namespace: str, name: str, now: dt.datetime, node: str,
               record: Audit | None = None) -> StoredRule:
        shard, rule = self._find(namespace, name)

        def body(cur):
            found = self._select(cur, namespace, name, lock=True)
            if found is None:
                raise RuleNotFound(rule.key)
            self._cancel_unstarted(cur, found, now, node, "rule deleted")
            cur.execute("DELETE FROM cron_rules WHERE namespace = %s AND name = %s", (namespace, name))
            if record is not None:
                audit.append(cur, record(found, None))
            return found
        return shard.run(body)

    def _change(self, namespace: str, name: str, now: dt.datetime, node: str, assignments: str, args: tuple,
                cancel_reason: str | None, record: Audit | None) -> StoredRule:
        shard, rule = self._find(namespace, name)

        def body(cur):
            found = self._select(cur, namespace, name, lock=True)
            if found is None:
                raise RuleNotFound(rule.key)
            if cancel_reason is not None:
                self._cancel_unstarted(cur, found, now, node, cancel_reason)
            cur.execute(f"UPDATE cron_rules SET {assignments}, version = version + 1, updated_at = %s"
                        " WHERE namespace = %s AND name = %s", (*args, now, namespace, name))
            changed = self._select(cur, namespace, name)
            if record is not None:
                audit.append(cur, record(found, changed))
            return changed
        return shard.run(body)

    @staticmethod
    def _cancel_unstarted(cur, rule: StoredRule, now: dt.datetime, node: str, reason: str) -> None:
        """The rule's fire tasks that no executor has been handed become cancelled, with a
        cancelled event each (the history says why)."""
        live = (r.PENDING, r.ENQUEUED, r.CLAIMED)
        where = (f"task_id LIKE %s AND status IN ({marks(len(live))})")
        args = (rule.fire_prefix + "%", *live)
        cur.execute("INSERT INTO task_events (task_id, state, at, node, attempt, detail)"
                    f" SELECT task_id, %s, %s, %s, attempts, %s FROM tasks WHERE {where} ORDER BY task_id",
                    (TaskState.CANCELLED, now, node, reason, *args))
        cur.execute(f"UPDATE tasks SET status = %s, updated_at = %s WHERE {where}", (r.CANCELLED, now, *args))

    # ---- reads ----

    def get(self, namespace: str, name: str) -> StoredRule:
        return self._find(namespace, name)[1]

    def all(self, namespace: str = "") -> list[StoredRule]:
        rules: list[StoredRule] = []
        for shard in self._shards:
            def body(cur):
                where, args = ("WHERE namespace = %s", (namespace,)) if namespace else ("", ())
                cur.execute(f"SELECT {_COLUMNS} FROM cron_rules {where}", args)
                return [_rule(row) for row in cur.fetchall()]
            rules += shard.run(body)
        return sorted(rules, key=lambda rule: (rule.namespace, rule.name))

    def last_fire(self, rule: StoredRule, now: dt.datetime) -> LastFire | None:
        """The rule's latest fire task due at or before `now` (fire ids sort by time)."""
        until = f"{rule.fire_prefix}{int(now.replace(tzinfo=dt.UTC).timestamp() * 1000):013d}"

        def body(cur):
            cur.execute("SELECT task_id, trigger_at, status, attempts FROM tasks WHERE task_id LIKE %s"
                        " AND task_id <= %s ORDER BY task_id DESC LIMIT 1", (rule.fire_prefix + "%", until))
            row = cur.fetchone()
            return None if row is None else LastFire(row[0], row[1], r.Status(row[2]), row[3])
        return self._shard_of(rule.slot).run(body)

    def _find(self, namespace: str, name: str) -> tuple[TaskStore, StoredRule]:
        for shard in self._shards:
            rule = shard.run(lambda cur: self._select(cur, namespace, name))
            if rule is not None:
                return shard, rule
        raise RuleNotFound(f"{namespace}/{name}")

    @staticmethod
    def _select(cur, namespace: str, name: str, lock: bool = False) -> StoredRule | None:
        cur.execute(f"SELECT {_COLUMNS} FROM cron_rules WHERE namespace = %s AND name = %s"
                    + (" FOR UPDATE" if lock else ""), (namespace, name))
        row = cur.fetchone()
        return None if row is None else _rule(row)

    # ---- the owner's side ----

    def to_plan(self, slots: Iterable[int], before: dt.datetime) -> list[StoredRule]:
        """Unpaused rules of these slots planned only up to before `before`."""
        found: list[StoredRule] = []
        by_shard: dict[int, tuple[TaskStore, list[int]]] = {}
        for slot in slots:
            shard = self._shard_of(slot)
            by_shard.setdefault(id(shard), (shard, []))[1].append(slot)
        for shard, group in by_shard.values():
            def body(cur, group=group):
                cur.execute(f"SELECT {_COLUMNS} FROM cron_rules WHERE slot IN ({marks(len(group))})"
                            " AND paused = 0 AND planned_until < %s", (*group, before))
                return [_rule(row) for row in cur.fetchall()]
            found += shard.run(body)
        return found

    def statuses(self, slot: int, task_ids: Sequence[str]) -> dict[str, r.Status]:
        return self._shard_of(slot).run(lambda cur: TaskStore.statuses(cur, task_ids))

    def materialize(self, rule: StoredRule, epoch: int, fires: Sequence[r.NewTask], planned_until: dt.datetime,
                    skipped: int, now: dt.datetime, node: str) -> bool | None:
        """Write one plan of `rule` (read at rule.version) under the slot's `epoch`: the fire
        tasks not yet there, and the rule's planned_until (and last fire). None when the
        epoch is stale, False when the rule changed since it was read; nothing written then."""
        last = fires[-1].task_id if fires else None

        def body(cur):
            if fenced.stale_slots(cur, {rule.slot: epoch}):
                return None
            moved = cur.execute(
                "UPDATE cron_rules SET planned_until = %s, last_task_id = COALESCE(%s, last_task_id),"
                " skipped = skipped + %s WHERE namespace = %s AND name = %s AND version = %s AND paused = 0",
                (planned_until, last, skipped, rule.namespace, rule.name, rule.version))
            if not moved:
                return False
            if fires:
                fresh, _existing = TaskStore.split_existing(cur, fires)
                TaskStore.insert_in(cur, fresh, node)
            return True
        return self._shard_of(rule.slot).run(body)


def _rule(row: tuple) -> StoredRule:
    ns, name, uid, slot, spec, paused, planned_until, last_task_id, skipped, version, created, updated = row
    return StoredRule(ns, name, uid, slot, bytes(spec), bool(paused), planned_until, last_task_id, skipped,
                      version, created, updated)
