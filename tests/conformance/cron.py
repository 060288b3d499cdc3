"""Conformance of the cron rules (dispatcher/store/interface_cron.py): the registry, its
audited changes, and the owner's fenced materialization of a plan's fire tasks."""
from __future__ import annotations

import datetime as dt

from dispatcher.store import records as r
from dispatcher.store.errors import RuleExists, RuleNotFound
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_cron import LastFire, StoredRule
from dispatcher.store.records import CANCELLED, DISPATCHED, PENDING
from tests.conformance.world import NODE, T0, Area, Backend, T, given, new_task, refused

SPEC = b"\x0a\x07nightly"
"""What the rule's caller gave (the store keeps it as it is)."""


def fire(uid: str, s: float, slot: int = 1) -> r.NewTask:
    """The fire task of rule `uid` at T(s)."""
    ms = int(T(s).replace(tzinfo=dt.UTC).timestamp() * 1000)
    return new_task(f"cron-{uid}-{ms:013d}", slot=slot, due_s=s, namespace="ns", task_type="report")


def audited(action: str):
    """An Audit callable whose record names the change's versions."""
    def record(before: StoredRule | None, after: StoredRule | None) -> AuditRecord:
        rule = after or before
        assert rule is not None
        return AuditRecord(at=T0, actor="ops", address="10.0.0.1", action=action, target=f"cron:{rule.key}",
                           namespace=rule.namespace, before=before and before.version, after=after and after.version)
    return record


def create(backend: Backend, name: str = "nightly", *, uid: str = "u1", slot: int = 1, namespace: str = "ns",
           at: dt.datetime = T0) -> StoredRule:
    return backend.cron.create(namespace, name, uid, slot, "report", SPEC, at, audited("cron.create"))


def planned(backend: Backend, uid: str, *seconds: float) -> tuple[StoredRule, dict[int, int]]:
    """Slots claimed, rule `nightly` created with `uid` and its fires at T(s) materialized."""
    epochs = given(backend.store, ())
    rule = create(backend, uid=uid)
    fires = [fire(uid, s) for s in seconds]
    assert backend.cron.materialize(rule, epochs[1], fires, T(max(seconds, default=0)), 0, T0, NODE) is True
    return backend.cron.get("ns", "nightly"), epochs


class CronConformance(Area):
    # ---- the registry

    def test_a_rule_is_created_read_and_listed_by_namespace_and_name(self, backend):
        rule = create(backend, at=T(0.123))
        assert rule == StoredRule("ns", "nightly", "u1", 1, SPEC, False, T(0.123), None, 0, 1, T(0.123), T(0.123))
        create(backend, "hourly", uid="u2", slot=2)
        create(backend, "daily", uid="u3", namespace="billing", slot=3)
        assert backend.cron.get("ns", "nightly") == rule
        assert [x.key for x in backend.cron.all()] == ["billing/daily", "ns/hourly", "ns/nightly"]
        assert [x.key for x in backend.cron.all("ns")] == ["ns/hourly", "ns/nightly"]
        assert [(a.action, a.target, a.after) for a in backend.audit.records(action="cron.create")][-1:] == [
            ("cron.create", "cron:ns/nightly", 1)]

    def test_a_taken_name_is_refused_on_any_slot_and_nothing_is_written(self, backend):
        create(backend)
        assert "already exists" in refused(backend, RuleExists, lambda: create(backend, uid="u9", slot=2))

    def test_changes_and_reads_of_an_unknown_rule_are_refused(self, backend):
        cron = backend.cron
        for action in (lambda: cron.get("ns", "nope"), lambda: cron.pause("ns", "nope", T0, NODE),
                       lambda: cron.update("ns", "nope", SPEC, "u2", T0, NODE),
                       lambda: cron.resume("ns", "nope", "u2", T0, NODE), lambda: cron.delete("ns", "nope", T0, NODE)):
            assert "'ns/nope' not found" in refused(backend, RuleNotFound, action)

    def test_update_pause_resume_and_delete_are_versioned_audited_and_cancel_unstarted_fires(self, backend):
        rule, epochs = planned(backend, "u1", 60, 120, 180)
        first, second, third = (fire("u1", s).task_id for s in (60, 120, 180))
        assert backend.store.claim_due(1, epochs[1], T(60), 1, T0)[1][0].task_id == first
        assert backend.store.begin_dispatch([r.DispatchClaim(first, 1, 1, "mysql", T(60))], epochs, NODE, T0)[0]
        updated = backend.cron.update("ns", "nightly", b"new spec", "u2", T(5), "n2", audited("cron.update"))
        assert (updated.spec, updated.rule_uid, updated.planned_until, updated.version, updated.updated_at) == (
            b"new spec", "u2", T(5), 2, T(5))
        assert backend.store.get_task(first)[0].status == DISPATCHED   # handed to an executor: left to run
        for task_id in (second, third):
            row, history = backend.store.get_task(task_id)
            assert (row.status, row.updated_at) == (CANCELLED, T(5))
            assert (history[-1].state, history[-1].node, history[-1].detail) == ("cancelled", "n2", "rule updated")
        paused = backend.cron.pause("ns", "nightly", T(6), NODE, audited("cron.pause"))
        assert (paused.paused, paused.version, paused.rule_uid) == (True, 3, "u2")
        resumed = backend.cron.resume("ns", "nightly", "u3", T(7), NODE, audited("cron.resume"))
        assert (resumed.paused, resumed.version, resumed.rule_uid, resumed.planned_until) == (False, 4, "u3", T(7))
        assert backend.cron.delete("ns", "nightly", T(8), NODE, audited("cron.delete")) == resumed
        refused(backend, RuleNotFound, lambda: backend.cron.get("ns", "nightly"))
        trail = [(a.action, a.before, a.after) for a in backend.audit.records(target="cron:ns/nightly")]
        assert sorted(trail, key=str) == sorted([("cron.create", None, 1), ("cron.update", 1, 2),
                                                 ("cron.pause", 2, 3), ("cron.resume", 3, 4),
                                                 ("cron.delete", 4, None)], key=str)
        assert rule.version == 1

    # ---- the owner's side

    def test_to_plan_names_the_unpaused_rules_of_the_slots_planned_short_of_the_time(self, backend):
        create(backend, "a", uid="ua", slot=1, at=T(0))
        create(backend, "b", uid="ub", slot=2, at=T(0))
        create(backend, "late", uid="uc", slot=1, at=T(30))
        create(backend, "paused", uid="ud", slot=1, at=T(0))
        backend.cron.pause("ns", "paused", T(0), NODE)
        assert sorted(x.name for x in backend.cron.to_plan([1, 2], T(30))) == ["a", "b"]
        assert sorted(x.name for x in backend.cron.to_plan([1], T(31))) == ["a", "late"]
        assert backend.cron.to_plan([3], T(60)) == []

    def test_materialize_writes_the_plan_and_its_new_fires_once(self, backend):
        rule, epochs = planned(backend, "u1", 60, 120)
        ids = [fire("u1", s).task_id for s in (60, 120)]
        assert (rule.planned_until, rule.last_task_id, rule.skipped, rule.version) == (T(120), ids[1], 0, 1)
        row, history = backend.store.get_task(ids[0])
        assert (row.status, row.slot, row.trigger_at, [e.state for e in history]) == (
            PENDING, 1, T(60), ["accepted", "queued"])
        assert backend.cron.statuses(1, [*ids, "cron-u1-0000000000000"]) == {ids[0]: PENDING, ids[1]: PENDING}
        # Again, with one fire already there and one new, and fires skipped
        again = [fire("u1", s) for s in (120, 180)]
        before = backend.store.get_task(ids[1])
        assert backend.cron.materialize(rule, epochs[1], again, T(180), 2, T(1), NODE) is True
        assert backend.store.get_task(ids[1]) == before
        after = backend.cron.get("ns", "nightly")
        assert (after.planned_until, after.last_task_id, after.skipped) == (T(180), again[1].task_id, 2)
        assert backend.cron.last_fire(after, T(150)) == LastFire(ids[1], T(120), PENDING, 0)
        assert backend.cron.last_fire(after, T(59)) is None

    def test_a_stale_owner_or_a_plan_of_a_changed_rule_writes_nothing(self, backend):
        rule, epochs = planned(backend, "u1", 30)
        late = [fire("u1", 60)]
        backend.store.claim_slot(1, "n2", T0)
        assert backend.cron.materialize(rule, epochs[1], late, T(60), 0, T0, NODE) is None
        epoch = backend.store.slot_owners()[1][0]
        backend.cron.pause("ns", "nightly", T0, NODE)
        paused = backend.cron.get("ns", "nightly")
        assert backend.cron.materialize(rule, epoch, late, T(60), 0, T0, NODE) is False   # an older version
        assert backend.cron.materialize(paused, epoch, late, T(60), 0, T0, NODE) is False  # paused
        assert backend.cron.get("ns", "nightly") == paused
        assert backend.cron.statuses(1, [late[0].task_id]) == {}

    def test_only_the_fires_of_the_rule_are_cancelled(self, backend):
        planned(backend, "u1", 60)
        backend.store.insert_tasks([new_task("cron-u10-x", slot=1)], NODE)
        backend.cron.delete("ns", "nightly", T(1), NODE)
        assert backend.store.get_task("cron-u10-x")[0].status == PENDING
        assert backend.store.get_task(fire("u1", 60).task_id)[0].status == CANCELLED
