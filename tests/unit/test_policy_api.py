"""The PolicyService (dispatcher/api/policies.py) over the twin store: an entry set through the
API replaces the file's entry for its type, applies at once on the node that took the call, is
refused naming the field when it cannot be used, and every change is audited with who and why."""
from __future__ import annotations

import asyncio
import json

import grpc
import pytest

from dispatcher.api.policies import PolicyApi, TypePolicies
from dispatcher.policy.follow import PolicyChange, PolicyFollower
from dispatcher.policy.layers import PolicyLayers
from dispatcher.store.memory import MemoryTaskStore
from dispatcher.store.memory_ops import MemoryAuditStore
from dispatcher.store.memory_policies import MemoryPolicyStore
from taskring.wire import pb

FILE = {"default": {"max_backoff_ms": 60000}, "shop/export": {"concurrency": {"per_type": 2}, "retry_cap": 1}}


class Aborted(Exception):
    pass


class Context:
    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def invocation_metadata(self):
        return ()

    def peer(self) -> str:
        return "ipv4:10.1.2.3:5555"

    async def abort(self, code: grpc.StatusCode, details: str):
        self.code, self.details = code, details
        raise Aborted


@pytest.fixture
def world():
    tasks = MemoryTaskStore()
    tasks.start()
    store = MemoryPolicyStore(tasks)
    layers = PolicyLayers(file=FILE)
    applied: list[PolicyChange] = []
    follower = PolicyFollower(None, store, layers, layers.policies(), on_change=applied.append)
    api = PolicyApi(TypePolicies(store=store, layers=lambda: follower.layers, apply_now=follower.check))
    yield api, follower, applied, MemoryAuditStore(tasks)
    tasks.stop()


def call(method, request):
    context = Context()
    try:
        return asyncio.run(method(request, context)), context
    except Aborted:
        return None, context


def put(api, task_type: str, policy: object, reason: str = "downstream is slow", **kw):
    return call(api.PutTypePolicy, pb.PutTypePolicyRequest(namespace="shop", task_type=task_type,
                                                           policy_json=json.dumps(policy), reason=reason, **kw))


def test_an_entry_put_replaces_the_files_entry_whole_and_applies_at_once(world):
    api, follower, applied, audit = world
    shown, _ = put(api, "export", {"concurrency": {"per_type": 5}})
    assert (shown.source, shown.revision, shown.updated_by) == ("api", 1, "anonymous")
    assert json.loads(shown.policy_json) == {"concurrency": {"per_type": 5}}
    assert json.loads(shown.file_policy_json) == FILE["shop/export"]
    limits = follower.current.limits_by_type[("shop", "export")]
    assert (limits.max_running, limits.max_retrying) == (5, None)
    assert applied[-1].source == "api" and applied[-1].changed == ["shop/export"]
    [record] = audit.records(target="policy:shop/export")
    assert (record.action, record.actor, record.address, record.reason) == (
        "policies.put", "anonymous", "10.1.2.3", "downstream is slow")
    assert (record.before, record.after) == (None, {"revision": 1, "policy": {"concurrency": {"per_type": 5}}})


def test_get_and_list_show_each_type_with_its_source(world):
    api, *_ = world
    put(api, "charge", {"rate": {"per_type": {"starts": 10, "period_ms": 1000}}})
    got, _ = call(api.GetTypePolicy, pb.TypePolicyRef(namespace="shop", task_type="export"))
    assert (got.source, got.revision, json.loads(got.policy_json)) == ("file", 0, FILE["shop/export"])
    none, _ = call(api.GetTypePolicy, pb.TypePolicyRef(namespace="shop", task_type="nothing"))
    assert (none.source, none.policy_json, none.file_policy_json) == ("none", "{}", "")
    listed, _ = call(api.ListTypePolicies, pb.ListTypePoliciesRequest(namespace="shop"))
    assert [(p.task_type, p.source) for p in listed.policies] == [("charge", "api"), ("export", "file")]
    other, _ = call(api.ListTypePolicies, pb.ListTypePoliciesRequest(namespace="billing"))
    assert list(other.policies) == []


@pytest.mark.parametrize("policy, field", [
    ({"concurrency": {"per_type": 0}}, "policy_json.concurrency.per_type"),
    ({"rate": {"per_type": {"starts": 5}}}, "policy_json.rate.per_type.period_ms"),
    ({"fairness": {"key": "t:{t}", "weights": {"t:a": 0}}}, "policy_json.fairness.weights"),
    ({"no_such_rule": 1}, "policy_json.no_such_rule"),
    ({"initial_backoff_ms": 90000}, "policy_json.initial_backoff_ms"),   # above the file's default max
    ([1, 2], "policy_json"),
])
def test_a_policy_that_cannot_be_used_is_refused_naming_the_field_and_nothing_is_written(world, policy, field):
    api, follower, applied, audit = world
    before = follower.current
    _, context = put(api, "export", policy)
    assert context.code == grpc.StatusCode.INVALID_ARGUMENT
    assert context.details.startswith(field), context.details
    assert follower.current is before and applied == [] and audit.records() == []


def test_a_change_needs_a_reason_a_valid_name_and_the_revision_it_was_made_on(world):
    api, follower, _, audit = world
    _, no_reason = put(api, "export", {"retry_cap": 3}, reason="  ")
    assert (no_reason.code, no_reason.details.split(":")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "reason")
    _, bad_type = call(api.PutTypePolicy, pb.PutTypePolicyRequest(namespace="shop", task_type="a b",
                                                                  policy_json="{}", reason="x"))
    assert bad_type.details.startswith("task_type")
    put(api, "export", {"retry_cap": 3}, if_revision=0)
    _, stale = put(api, "export", {"retry_cap": 4}, if_revision=0)
    assert stale.code == grpc.StatusCode.FAILED_PRECONDITION and "revision 1, not 0" in stale.details
    assert follower.current.limits_by_type[("shop", "export")].max_retrying == 3
    assert [r.action for r in audit.records()] == ["policies.put"]


def test_delete_gives_the_type_back_to_the_file_and_is_audited(world):
    api, follower, _, audit = world
    put(api, "export", {"retry_cap": 3})
    gone, _ = call(api.DeleteTypePolicy, pb.DeleteTypePolicyRequest(namespace="shop", task_type="export",
                                                                   reason="incident over"))
    assert (gone.source, gone.revision) == ("api", 1)
    limits = follower.current.limits_by_type[("shop", "export")]
    assert (limits.max_running, limits.max_retrying) == (2, 1)
    _, missing = call(api.DeleteTypePolicy, pb.DeleteTypePolicyRequest(namespace="shop", task_type="export",
                                                                      reason="again"))
    assert missing.code == grpc.StatusCode.NOT_FOUND
    assert [(r.action, r.reason) for r in audit.records()] == [("policies.delete", "incident over"),
                                                               ("policies.put", "downstream is slow")]
