"""Conformance of the policies set through the API (dispatcher/store/interface_policies.py):
entries put, replaced, deleted, listed; revisions that only go up; changes conditional on the
revision read; each change with its audit record, or neither."""
from __future__ import annotations

import pytest

from dispatcher.store.errors import PolicyNotFound, PolicyRevisionMismatch
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_policies import StoredPolicy
from tests.conformance.world import Area, Backend, T

LIMIT = '{"concurrency": {"per_type": 3}}'
RATE = '{"rate": {"per_type": {"starts": 10, "period_ms": 1000}}}'


def audited(action: str):
    def record(before: StoredPolicy | None, after: StoredPolicy | None) -> AuditRecord:
        entry = after or before
        assert entry is not None
        return AuditRecord(at=T(0), actor="ops", address="10.0.0.1", action=action, target=f"policy:{entry.key}",
                           namespace=entry.namespace, before=before and before.revision,
                           after=after and after.revision)
    return record


def put(backend: Backend, task_type: str, policy: str, s: float = 1, **kwargs) -> StoredPolicy:
    return backend.policies.put("ns", task_type, policy, actor="ann", now=T(s), record=audited("policies.put"),
                                **kwargs)


class PolicyConformance(Area):
    def test_entries_are_put_replaced_and_listed_in_order(self, backend):
        assert backend.policies.all() == []
        first = put(backend, "export", LIMIT)
        assert (first.key, first.policy_json, first.revision, first.updated_by, first.updated_at) == (
            "ns/export", LIMIT, 1, "ann", T(1))
        put(backend, "charge", RATE, 2)
        second = put(backend, "export", RATE, 3)
        assert second.revision == 2 and second.policy_json == RATE
        assert [(p.task_type, p.revision, p.policy_json) for p in backend.policies.all()] == [
            ("charge", 1, RATE), ("export", 2, RATE)]

    def test_a_deleted_entry_is_gone_and_its_revision_never_comes_back(self, backend):
        put(backend, "export", LIMIT)
        put(backend, "export", RATE, 2)
        gone = backend.policies.delete("ns", "export", actor="bob", now=T(3), record=audited("policies.delete"))
        assert (gone.revision, gone.policy_json) == (2, RATE)
        assert backend.policies.all() == []
        with pytest.raises(PolicyNotFound):
            backend.policies.delete("ns", "export", actor="bob", now=T(4))
        # Put again: revision 3, not 1, so a change made on revision 1 or 2 cannot match.
        assert put(backend, "export", LIMIT, 5).revision == 3

    def test_a_change_on_a_revision_that_is_no_longer_the_entrys_writes_nothing(self, backend):
        put(backend, "export", LIMIT, if_revision=0)
        with pytest.raises(PolicyRevisionMismatch):
            put(backend, "export", RATE, 2, if_revision=0)
        with pytest.raises(PolicyRevisionMismatch):
            backend.policies.delete("ns", "export", actor="bob", now=T(3), if_revision=2,
                                    record=audited("policies.delete"))
        assert [(p.revision, p.policy_json) for p in backend.policies.all()] == [(1, LIMIT)]
        assert put(backend, "export", RATE, 4, if_revision=1).revision == 2
        # Only the changes made are in the trail.
        assert [(rec.action, rec.before, rec.after) for rec in reversed(backend.audit.records())] == [
            ("policies.put", None, 1), ("policies.put", 1, 2)]

    def test_each_change_takes_its_audit_record(self, backend):
        put(backend, "export", LIMIT)
        backend.policies.delete("ns", "export", actor="bob", now=T(2), record=audited("policies.delete"))
        records = backend.audit.records(target="policy:ns/export")
        assert [(rec.action, rec.before, rec.after) for rec in records] == [("policies.delete", 1, None),
                                                                             ("policies.put", None, 1)]
