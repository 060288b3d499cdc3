"""The task types' policies on the admin endpoint, in JSON: what the console's Policies page
calls. Reads need a viewer, changes an operator; every change needs a `reason` and is audited
(policies.put, policies.delete), as the PolicyService's are: both call api/policies.py's
TypePolicies.

    GET  /api/policies                       ?namespace: every type with an entry, and the limits'
                                             live figures on this node (its owned slots)
    POST /api/policies/<ns>/<type>           {reason, policy: {...}, if_revision?}
    POST /api/policies/<ns>/<type>/delete    {reason, if_revision?}
"""
from __future__ import annotations

import json
from collections.abc import Callable

from dispatcher.admin import routes as rt
from dispatcher.admin.routes import Request, Response
from dispatcher.api.policies import TypePolicies, policy_dict, ref_of
from dispatcher.auth.identity import Role
from dispatcher.base.errors import InvalidArgument
from taskring.wire import pb

_REF = r"(?P<namespace>[a-z0-9][a-z0-9._-]{0,63})/(?P<task_type>[A-Za-z0-9][A-Za-z0-9._:-]{0,127})"

LiveLimits = Callable[[], dict[str, dict[str, dict[str, float]]]]
"""{"ns/type": {"waiting": {limit: n}, "held": {limit: n}}} on this node."""


class PolicyRoutes:
    def __init__(self, policies: TypePolicies, live: LiveLimits):
        self._policies = policies
        self._live = live

    def routes(self) -> list[rt.Route]:
        return [
            rt.route("GET", "/api/policies", Role.VIEWER, self.list),
            rt.route("POST", f"/api/policies/{_REF}", Role.OPERATOR, self.put),
            rt.route("POST", f"/api/policies/{_REF}/delete", Role.OPERATOR, self.delete),
        ]

    def list(self, req: Request) -> Response:
        namespace = req.arg("namespace") or ""
        live = self._live()
        shown = []
        for view in self._policies.list(namespace):
            entry = policy_dict(view)
            entry["live"] = live.get(f"{view.namespace}/{view.task_type}", {})
            shown.append(entry)
        return Response.of_json({"policies": shown})

    def put(self, req: Request) -> Response:
        body = req.json()
        namespace, task_type = _ref(req)
        policy = body.get("policy")
        # The console's editor sends the text as typed; a script may send the object.
        text = policy if isinstance(policy, str) else json.dumps(policy) if policy is not None else ""
        if not text:
            raise InvalidArgument("policy", "is required: the type's entry, a JSON object as in the policies file")
        view = self._policies.put(namespace, task_type, text, actor=req.identity.name, address=req.address,
                                  reason=str(body.get("reason") or ""), if_revision=_revision(body))
        return Response.of_json(policy_dict(view))

    def delete(self, req: Request) -> Response:
        body = req.json()
        namespace, task_type = _ref(req)
        view = self._policies.delete(namespace, task_type, actor=req.identity.name, address=req.address,
                                     reason=str(body.get("reason") or ""), if_revision=_revision(body))
        return Response.of_json(policy_dict(view))


def _ref(req: Request) -> tuple[str, str]:
    return ref_of(pb.TypePolicyRef(namespace=req.params["namespace"], task_type=req.params["task_type"]))


def _revision(body: dict) -> int | None:
    value = body.get("if_revision")
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise InvalidArgument("if_revision", f"must be a whole number >= 0, got {value!r}")
    return int(value)


def live_limits(waiting_gauge, held_gauge) -> LiveLimits:
    """The limits' gauges (base/metrics.py limit_waiting, limit_held) per type, read when asked."""
    def read() -> dict[str, dict[str, dict[str, float]]]:
        out: dict[str, dict[str, dict[str, float]]] = {}
        for kind, gauge in (("waiting", waiting_gauge), ("held", held_gauge)):
            for metric in gauge.collect():
                for sample in metric.samples:
                    labels = sample.labels
                    key = f"{labels['namespace']}/{labels['task_type']}"
                    out.setdefault(key, {}).setdefault(kind, {})[labels["limit"]] = sample.value
        return out
    return read
