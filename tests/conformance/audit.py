"""Conformance of the audit trail (dispatcher/store/interface_audit.py): records appended, read
back newest first by target, actor, action, namespace and time. Records written with an
action are checked by that action's area (cron, dead letters, replays)."""
from __future__ import annotations

from dispatcher.store.interface_audit import AuditRecord
from tests.conformance.world import Area, Backend, T


def appended(backend: Backend) -> None:
    """Five records at T(1)..T(5): two by ann on task:a, one by bob on task:b (billing),
    one bulk_replay.start, one by ann on task:a again (in the same millisecond as the 4th)."""
    for s, actor, action, target, ns in ((1, "ann", "dlq.replay", "task:a", "ns"),
                                         (2, "ann", "dlq.edit", "task:a", "ns"),
                                         (3, "bob", "dlq.delete", "task:b", "billing"),
                                         (4, "bob", "bulk_replay.start", "bulk_replay:1", ""),
                                         (4.0004, "ann", "dlq.replay", "task:a", "ns")):
        backend.audit.append(AuditRecord(at=T(s), actor=actor, address="10.0.0.1", action=action, target=target,
                                         namespace=ns, reason=f"reason {s}", before={"n": s}, after=None))


def shown(records: list[AuditRecord]) -> list[tuple]:
    return [(rec.at, rec.actor, rec.action, rec.target) for rec in records]


class AuditConformance(Area):
    def test_records_read_back_newest_first_as_written(self, backend):
        appended(backend)
        records = backend.audit.records()
        assert shown(records) == [(T(4), "ann", "dlq.replay", "task:a"), (T(4), "bob", "bulk_replay.start",
                                                                         "bulk_replay:1"),
                                  (T(3), "bob", "dlq.delete", "task:b"), (T(2), "ann", "dlq.edit", "task:a"),
                                  (T(1), "ann", "dlq.replay", "task:a")]
        oldest = records[-1]
        assert (oldest.address, oldest.namespace, oldest.reason, oldest.before, oldest.after) == (
            "10.0.0.1", "ns", "reason 1", {"n": 1}, None)
        assert all(rec.id > 0 for rec in records)

    def test_each_condition_narrows_the_records(self, backend):
        appended(backend)
        records = backend.audit.records
        assert [rec.at for rec in records(target="task:a")] == [T(4), T(2), T(1)]
        assert shown(records(actor="bob", namespace="billing")) == [(T(3), "bob", "dlq.delete", "task:b")]
        assert [rec.target for rec in records(action="dlq.replay")] == ["task:a", "task:a"]
        assert [rec.at for rec in records(before=T(3))] == [T(2), T(1)]
        assert [rec.at for rec in records(limit=2)] == [T(4), T(4)]
        assert records(actor="nobody") == []

    def test_values_are_kept_as_json_and_long_names_cut(self, backend):
        backend.audit.append(AuditRecord(at=T(1), actor="a" * 200, address="b" * 100, action="cron.update",
                                         target="c" * 300, before=("x", 1), after={"k": [1, {"z": None}]}))
        [rec] = backend.audit.records()
        assert (len(rec.actor), len(rec.address), len(rec.target)) == (128, 64, 200)
        assert (rec.before, rec.after, rec.reason, rec.namespace) == (["x", 1], {"k": [1, {"z": None}]}, None, "")
