"""Policies per task type, set through the API: its retry policy, unique key, concurrency
limits, retry cap, rate limits, fair shares and heartbeat timeout (docs/limits.md).

    from taskring import Client

    with Client("127.0.0.1:7070") as client:
        client.policies.put("shop", "export_orders", {"concurrency": {"per_type": 3}, "retry_cap": 1},
                            reason="the warehouse API allows 3 exports at once")
        entry = client.policies.get("shop", "export_orders")
        print(entry.source, entry.revision, entry.policy)

An entry is one key of the policies file (TASKRING_RETRY_POLICIES) in the same JSON shape, and
replaces the file's entry for its type whole; `delete` gives the type back to the file. Every
change needs a reason (it goes in the audit trail) and applies on every node within
TASKRING_POLICIES_RELOAD_MS. `if_revision` makes a change conditional on the revision read
(0: no API entry yet); a change made on an older one raises `FailedPrecondition`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import grpc

from taskring._envelope import parse_instant
from taskring.errors import InvalidArgument, from_rpc_error
from taskring.wire import pb, pb_grpc


@dataclass(frozen=True, slots=True)
class TypePolicy:
    namespace: str
    task_type: str
    policy: dict[str, Any]
    """The entry in effect ({} when nothing is declared)."""
    source: str
    """``"api"``, ``"file"`` or ``"none"``."""
    revision: int
    """The API entry's revision (0 when none): give it as ``if_revision`` to change what you read."""
    updated_by: str
    updated_at: datetime | None
    file_policy: dict[str, Any] | None
    """The policies file's entry for the type (None when it has none), shown when the API's replaces it."""


def _info(msg: pb.TypePolicy) -> TypePolicy:
    return TypePolicy(namespace=msg.namespace, task_type=msg.task_type, policy=json.loads(msg.policy_json or "{}"),
                      source=msg.source, revision=msg.revision, updated_by=msg.updated_by,
                      updated_at=parse_instant(msg.updated_at),
                      file_policy=json.loads(msg.file_policy_json) if msg.file_policy_json else None)


class Policies:
    """The PolicyService over a client's channel: `Client.policies`."""

    def __init__(self, channel: grpc.Channel, timeout_s: float | None):
        self._stub = pb_grpc.PolicyServiceStub(channel)
        self._timeout = timeout_s

    def _call(self, method, request) -> Any:
        try:
            return method(request, timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e

    def get(self, namespace: str, task_type: str) -> TypePolicy:
        """The type's entry in effect and where it comes from (source "none": nothing declared)."""
        return _info(self._call(self._stub.GetTypePolicy, pb.TypePolicyRef(namespace=namespace, task_type=task_type)))

    def list(self, namespace: str = "") -> list[TypePolicy]:
        """Every type with an entry, in the file or set through the API ("" = every namespace)."""
        resp = self._call(self._stub.ListTypePolicies, pb.ListTypePoliciesRequest(namespace=namespace))
        return [_info(p) for p in resp.policies]

    def put(self, namespace: str, task_type: str, policy: Mapping[str, Any], *, reason: str,
            if_revision: int | None = None) -> TypePolicy:
        """Set the type's entry; `InvalidArgument` naming the field (``"policy_json.concurrency.per_type"``)
        when it cannot be used, and then nothing was written."""
        if not isinstance(policy, Mapping):
            # Refused here, as the server would, and nothing sent.
            raise InvalidArgument(f"policy_json: must be a JSON object (a mapping), got {type(policy).__name__}")
        request = pb.PutTypePolicyRequest(namespace=namespace, task_type=task_type, policy_json=json.dumps(policy),
                                          reason=reason)
        if if_revision is not None:
            request.if_revision = if_revision
        return _info(self._call(self._stub.PutTypePolicy, request))

    def delete(self, namespace: str, task_type: str, *, reason: str, if_revision: int | None = None) -> TypePolicy:
        """Remove the type's API entry (the file's, if any, applies again); returns it as it was.
        `NotFound` when there is none."""
        request = pb.DeleteTypePolicyRequest(namespace=namespace, task_type=task_type, reason=reason)
        if if_revision is not None:
            request.if_revision = if_revision
        return _info(self._call(self._stub.DeleteTypePolicy, request))
