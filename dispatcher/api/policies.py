"""The PolicyService: a task type's policy entry read, listed, set and deleted through the API.

An entry set here replaces the policies file's entry for its type whole (dispatcher/policy/
layers.py). A change is validated against the policies this node uses, merged as every node
will merge it, and refused naming the field (`policy_json.concurrency.per_type`) before anything
is written; it is written with its audit record (who, from where, why, the entry before and
after) in one transaction, applied on this node at once (`apply_now`) and on the others at
their next read (TASKRING_POLICIES_RELOAD_MS).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Callable
from typing import cast

from dispatcher.api.service import _guarded, peer_address, status_code
from dispatcher.api.validation import NAMESPACE_RE, TASK_TYPE_RE
from dispatcher.auth import tokens as calls
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.auth.tokens import Token
from dispatcher.base.clock import Clock, ms_to_datetime, rfc3339
from dispatcher.base.errors import InvalidArgument, TaskringError, bounded, quote
from dispatcher.policy.layers import PolicyLayers, entry_object
from dispatcher.policy.retry import InvalidRetryPolicy
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_policies import PolicyAudit, PolicyStoreProtocol, StoredPolicy
from taskring.wire import pb, pb_grpc

MAX_REASON_CHARS = 1000


class TypePolicies:
    """The policies of the task types as this node merges them, and the changes made through
    the API: what the gRPC edge (PolicyApi) and the console (admin/policy_routes.py) both call.
    Blocking (the store's writes): call from a thread."""

    def __init__(self, *, store: PolicyStoreProtocol, layers: Callable[[], PolicyLayers],
                 apply_now: Callable[[], object], clock: Clock | None = None):
        """`layers`: the policies this node merges now (its follower's); `apply_now`: read the
        sources again at once (after a change written here)."""
        self._store = store
        self._layers = layers
        self._apply_now = apply_now
        self._clock = clock or Clock()

    def get(self, namespace: str, task_type: str) -> pb.TypePolicy:
        return _view(self._layers(), namespace, task_type)

    def list(self, namespace: str = "") -> list[pb.TypePolicy]:
        """Every type with an entry in the file or through the API, by namespace then type."""
        layers = self._layers()
        keys = {key for key in layers.file if key != "default"} | {p.key for p in layers.api}
        refs = sorted(tuple(key.split("/", 1)) for key in keys)
        return [_view(layers, ns, task_type) for ns, task_type in refs if not namespace or ns == namespace]

    def check(self, namespace: str, task_type: str, policy_json: str) -> str:
        """The entry as it is stored (compact JSON), once it is known to merge; InvalidArgument
        naming `policy_json.<field>` otherwise."""
        try:
            entry = entry_object(policy_json)
            self._layers().policies({f"{namespace}/{task_type}": entry})
        except InvalidRetryPolicy as exc:
            raise InvalidArgument(_field(exc.field, namespace, task_type), exc.problem) from None
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)

    def put(self, namespace: str, task_type: str, policy_json: str, *, actor: str, address: str, reason: str,
            if_revision: int | None) -> pb.TypePolicy:
        text = self.check(namespace, task_type, policy_json)
        reason = _reason(reason)
        self._store.put(namespace, task_type, text, actor=actor, now=self._now(), if_revision=if_revision,
                        record=self._record(actor, address, "put", namespace, task_type, reason))
        self._apply_now()
        return _view(self._layers(), namespace, task_type)

    def delete(self, namespace: str, task_type: str, *, actor: str, address: str, reason: str,
               if_revision: int | None) -> pb.TypePolicy:
        """Returns the API entry as it was."""
        reason = _reason(reason)
        layers = self._layers()
        try:
            layers.policies({f"{namespace}/{task_type}": None})
        except InvalidRetryPolicy as exc:   # the file's entry, shown again, cannot be used with the rest
            raise InvalidArgument(_field(exc.field, namespace, task_type), exc.problem) from None
        removed = self._store.delete(namespace, task_type, actor=actor, now=self._now(), if_revision=if_revision,
                                     record=self._record(actor, address, "delete", namespace, task_type, reason))
        self._apply_now()
        return _stored_view(removed, layers.file.get(removed.key))

    def _now(self) -> dt.datetime:
        return ms_to_datetime(self._clock.now_ms())

    def _record(self, actor: str, address: str, action: str, namespace: str, task_type: str,
                reason: str) -> PolicyAudit:
        """Every change is a manual action: audited with who, from where, why, and the entry
        before and after (None: no API entry)."""
        at = self._now()

        def record(before: StoredPolicy | None, after: StoredPolicy | None) -> AuditRecord:
            return AuditRecord(at=at, actor=actor, address=address, action=f"policies.{action}",
                               target=f"policy:{namespace}/{task_type}", namespace=namespace, reason=reason,
                               before=_shown(before), after=_shown(after))
        return record


class PolicyApi(pb_grpc.PolicyServiceServicer):
    """The PolicyService: TypePolicies behind the access check, at the gRPC edge."""

    def __init__(self, policies: TypePolicies, auth: Authorizer | None = None):
        self._policies = policies
        self._auth = auth or Authorizer(None)

    async def _abort(self, exc: TaskringError, context) -> None:
        await context.abort(status_code(exc), bounded(str(exc)))

    @_guarded
    async def GetTypePolicy(self, request: pb.TypePolicyRef, context) -> pb.TypePolicy:
        token = self._auth.token(context, calls.READ)
        namespace, task_type = ref_of(request)
        self._auth.check_namespaces(token, calls.READ, (namespace,))
        return self._policies.get(namespace, task_type)

    @_guarded
    async def ListTypePolicies(self, request: pb.ListTypePoliciesRequest, context) -> pb.ListTypePoliciesResponse:
        token = self._auth.token(context, calls.READ)
        # "" lists every namespace: only a token for "*" may, as ListCronRules.
        self._auth.check_namespaces(token, calls.READ, (request.namespace or calls.ANY,))
        return pb.ListTypePoliciesResponse(policies=self._policies.list(request.namespace))

    @_guarded
    async def PutTypePolicy(self, request: pb.PutTypePolicyRequest, context) -> pb.TypePolicy:
        token = self._auth.token(context, calls.POLICY_WRITE)
        namespace, task_type = ref_of(request)
        _reason(request.reason)
        self._policies.check(namespace, task_type, request.policy_json)
        self._auth.check_namespaces(token, calls.POLICY_WRITE, (namespace,))
        return await asyncio.to_thread(
            self._policies.put, namespace, task_type, request.policy_json, actor=_actor(token),
            address=peer_address(context.peer()), reason=request.reason,
            if_revision=request.if_revision if request.HasField("if_revision") else None)

    @_guarded
    async def DeleteTypePolicy(self, request: pb.DeleteTypePolicyRequest, context) -> pb.TypePolicy:
        token = self._auth.token(context, calls.POLICY_WRITE)
        namespace, task_type = ref_of(request)
        _reason(request.reason)
        self._auth.check_namespaces(token, calls.POLICY_WRITE, (namespace,))
        return await asyncio.to_thread(
            self._policies.delete, namespace, task_type, actor=_actor(token), address=peer_address(context.peer()),
            reason=request.reason, if_revision=request.if_revision if request.HasField("if_revision") else None)


def policy_dict(view: pb.TypePolicy) -> dict:
    """An entry as the console and the CLIs show it (JSON values parsed)."""
    return {"namespace": view.namespace, "task_type": view.task_type, "policy": json.loads(view.policy_json or "{}"),
            "source": view.source, "revision": view.revision, "updated_by": view.updated_by,
            "updated_at": view.updated_at or None,
            "file_policy": json.loads(view.file_policy_json) if view.file_policy_json else None}


def ref_of(request) -> tuple[str, str]:
    """The (namespace, task_type) a request names, checked as Submit checks them."""
    for field, pattern in (("namespace", NAMESPACE_RE), ("task_type", TASK_TYPE_RE)):
        value = getattr(request, field)
        if not value:
            raise InvalidArgument(field, "is required")
        if not pattern.fullmatch(value):
            raise InvalidArgument(field, f"must match ^{pattern.pattern}$, got {quote(value)}")
    return request.namespace, request.task_type


def _reason(reason: str) -> str:
    if not reason.strip():
        raise InvalidArgument("reason", "is required: say why (it goes in the audit trail)")
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidArgument("reason", f"is {len(reason)} characters, more than {MAX_REASON_CHARS}")
    return reason


def _field(field: str, namespace: str, task_type: str) -> str:
    """The parser names `ns/type.concurrency.per_type`; the caller sent `policy_json`."""
    prefix = f"{namespace}/{task_type}"
    if field == prefix:
        return "policy_json"
    if field.startswith(prefix + "."):
        return "policy_json" + field[len(prefix):]
    return field


def _actor(token: Token | None) -> str:
    return token.name if token is not None else "anonymous"


def _shown(entry: StoredPolicy | None) -> object:
    if entry is None:
        return None
    return {"revision": entry.revision, "policy": json.loads(entry.policy_json)}


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _view(layers: PolicyLayers, namespace: str, task_type: str) -> pb.TypePolicy:
    key = f"{namespace}/{task_type}"
    in_file = layers.file.get(key)
    stored = layers.api_entry(namespace, task_type)
    if stored is not None:   # the follower's layers hold what the store gave
        return _stored_view(cast(StoredPolicy, stored), in_file)
    return pb.TypePolicy(namespace=namespace, task_type=task_type,
                         policy_json=_dumps(in_file) if in_file is not None else "{}",
                         source="file" if in_file is not None else "none",
                         file_policy_json=_dumps(in_file) if in_file is not None else "")


def _stored_view(stored: StoredPolicy, in_file: object) -> pb.TypePolicy:
    return pb.TypePolicy(namespace=stored.namespace, task_type=stored.task_type,
                         policy_json=_dumps(json.loads(stored.policy_json)), source="api", revision=stored.revision,
                         updated_by=stored.updated_by,
                         updated_at=rfc3339(stored.updated_at.replace(tzinfo=dt.UTC)),
                         file_policy_json=_dumps(in_file) if in_file is not None else "")
