"""The CronService: cron rules created, changed, paused, resumed, deleted and read.

Every node serves it; a rule is written on the shard of its slot and planned by that
slot's owner (materializer.py). Bad input is refused naming the field ("rule.schedule")
before anything is written, as Submit does.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import uuid

from google.protobuf import json_format

from cluster.slots import slot_of
from dispatcher.api.service import _guarded, api_state, peer_address, status_code
from dispatcher.api.validation import Limits, validate_task
from dispatcher.auth import tokens as calls
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.auth.tokens import Token
from dispatcher.base.clock import Clock, ms_to_datetime, rfc3339
from dispatcher.base.errors import InvalidArgument, TaskringError, bounded
from dispatcher.cron import rules, schedule
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_cron import Audit, CronStoreProtocol, StoredRule
from taskring.wire import pb, pb_grpc


class CronApi(pb_grpc.CronServiceServicer):
    def __init__(self, *, node_id: str, slot_count: int, store: CronStoreProtocol, limits: Limits,
                 clock: Clock | None = None, auth: Authorizer | None = None):
        self._node_id = node_id
        self._slot_count = slot_count
        self._auth = auth or Authorizer(None)
        self._store = store
        self._limits = limits
        self._clock = clock or Clock()

    async def _abort(self, exc: TaskringError, context) -> None:
        await context.abort(status_code(exc), bounded(str(exc)))


    def set_limits(self, limits: Limits) -> None:
        """New limits (the policies file changed): what comes next reads them."""
        self._limits = limits
    def _now(self) -> dt.datetime:
        return ms_to_datetime(self._clock.now_ms())

    def _valid(self, request: pb.PutCronRuleRequest) -> rules.ValidRule:
        rule = request.rule

        def payload(namespace: str, task_type: str, payload_json: str, field: str) -> str:
            # The fires' task as Submit would check it, with the rule's per-fire settings
            # (timeout_ms, max_retries): a value no Submit takes is refused here, naming
            # rule.<field>, not found out by the planner when the first fire is written.
            fire = pb.Task(namespace=namespace, task_type=task_type, payload_json=payload_json)
            if rule.HasField("timeout_ms"):
                fire.timeout_ms = rule.timeout_ms
            if rule.HasField("max_retries"):
                fire.max_retries = rule.max_retries
            try:
                task = validate_task(fire, now=dt.datetime.now(dt.UTC), limits=self._limits, field_prefix="rule")
            except InvalidArgument as exc:
                raise InvalidArgument(field if exc.field.endswith("payload_json") else exc.field, exc.problem) \
                    from None
            return task.payload_json
        return rules.validate_rule(request.rule, payload)

    def _ref(self, request: pb.CronRuleRef, context, call: str) -> tuple[str, str]:
        """The rule's (namespace, name), once the caller may `call` on its namespace."""
        return self._allowed_ref(request, context, call)[0]

    def _allowed_ref(self, request: pb.CronRuleRef, context, call: str) -> tuple[tuple[str, str], Token | None]:
        token = self._auth.token(context, call)
        ref = _ref(request)
        self._auth.check_namespaces(token, call, (ref[0],))
        return ref, token

    def _allowed_rule(self, request: pb.PutCronRuleRequest, context) -> tuple[rules.ValidRule, Token | None]:
        token = self._auth.token(context, calls.CRON_WRITE)
        rule = self._valid(request)
        self._auth.check_namespaces(token, calls.CRON_WRITE, (rule.namespace,))
        return rule, token

    def _record(self, context, token: Token | None, action: str, namespace: str, name: str) -> Audit:
        """Every change of a rule is a manual action: audited with who (the token's name) and
        from where (the call's peer), the rule before and after."""
        at = self._now()
        peer = context.peer() if context is not None else ""

        def record(before: StoredRule | None, after: StoredRule | None) -> AuditRecord:
            return AuditRecord(at=at, actor=token.name if token is not None else "anonymous",
                                     address=peer_address(peer), action=f"cron.{action}",
                                     target=f"cron:{namespace}/{name}", namespace=namespace,
                                     before=_shown_rule(before), after=_shown_rule(after))
        return record

    @_guarded
    async def CreateCronRule(self, request: pb.PutCronRuleRequest, context) -> pb.PutCronRuleResponse:
        rule, token = self._allowed_rule(request, context)
        slot = slot_of(rule.namespace, rule.task_type, self._slot_count)
        stored = await asyncio.to_thread(self._store.create, rule.namespace, rule.name, _new_uid(), slot,
                                         rule.task_type, rule.message.SerializeToString(), self._now(),
                                         self._record(context, token, "create", rule.namespace, rule.name))
        return pb.PutCronRuleResponse(rule=await self._view(stored))

    @_guarded
    async def UpdateCronRule(self, request: pb.PutCronRuleRequest, context) -> pb.PutCronRuleResponse:
        rule, token = self._allowed_rule(request, context)
        current = await asyncio.to_thread(self._store.get, rule.namespace, rule.name)
        if rules.parsed_rule(current.message()).task_type != rule.task_type:
            raise InvalidArgument("rule.task_type", "cannot change (it decides the rule's slot): delete the rule"
                                                    " and create it again")
        stored = await asyncio.to_thread(self._store.update, rule.namespace, rule.name,
                                         rule.message.SerializeToString(), _new_uid(), self._now(),
                                         self._node_id,
                                         self._record(context, token, "update", rule.namespace, rule.name))
        return pb.PutCronRuleResponse(rule=await self._view(stored))

    @_guarded
    async def GetCronRule(self, request: pb.CronRuleRef, context) -> pb.CronRule:
        namespace, name = self._ref(request, context, calls.READ)
        return await self._view(await asyncio.to_thread(self._store.get, namespace, name))

    @_guarded
    async def ListCronRules(self, request: pb.ListCronRulesRequest, context) -> pb.ListCronRulesResponse:
        token = self._auth.token(context, calls.READ)
        # "" lists every namespace: only a token for "*" may (the rules of the others are
        # neither shown nor silently left out).
        self._auth.check_namespaces(token, calls.READ, (request.namespace or calls.ANY,))
        stored = await asyncio.to_thread(self._store.all, request.namespace)
        return pb.ListCronRulesResponse(rules=[await self._view(s) for s in stored])

    @_guarded
    async def PauseCronRule(self, request: pb.CronRuleRef, context) -> pb.CronRule:
        (namespace, name), token = self._allowed_ref(request, context, calls.CRON_WRITE)
        return await self._view(await asyncio.to_thread(self._store.pause, namespace, name, self._now(),
                                                        self._node_id,
                                                        self._record(context, token, "pause", namespace, name)))

    @_guarded
    async def ResumeCronRule(self, request: pb.CronRuleRef, context) -> pb.CronRule:
        (namespace, name), token = self._allowed_ref(request, context, calls.CRON_WRITE)
        return await self._view(await asyncio.to_thread(self._store.resume, namespace, name, _new_uid(),
                                                        self._now(), self._node_id,
                                                        self._record(context, token, "resume", namespace, name)))

    @_guarded
    async def DeleteCronRule(self, request: pb.CronRuleRef, context) -> pb.CronRule:
        (namespace, name), token = self._allowed_ref(request, context, calls.CRON_WRITE)
        stored = await asyncio.to_thread(self._store.delete, namespace, name, self._now(), self._node_id,
                                         self._record(context, token, "delete", namespace, name))
        view = await self._view(stored, last_fire=False)
        view.next_fire_time = ""
        return view

    async def _view(self, stored: StoredRule, last_fire: bool = True) -> pb.CronRule:
        """The rule as stored, with its state: paused, last and next fires."""
        view = stored.message()
        view.paused = stored.paused
        view.created_at = rfc3339(stored.created_at.replace(tzinfo=dt.UTC))
        view.updated_at = rfc3339(stored.updated_at.replace(tzinfo=dt.UTC))
        now = self._now()
        if not stored.paused:
            parsed = rules.parsed_rule(view)
            view.next_fire_time = rfc3339(schedule.next_fire(parsed.schedule, now.replace(tzinfo=dt.UTC)))
        if last_fire:
            last = await asyncio.to_thread(self._store.last_fire, stored, now)
            if last is not None:
                view.last_fire_task_id = last.task_id
                view.last_fire_time = rfc3339(_fire_time_of(last.task_id))
                view.last_fire_state = api_state(last.status, last.attempts, last.fire_at, now)
        return view


def _fire_time_of(task_id: str) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(task_id.rsplit("-", 1)[1]) / 1000, tz=dt.UTC)


def _new_uid() -> str:
    """A rule's generation: in its fires' task ids; new at create, update and resume."""
    return uuid.uuid4().hex[:12]


def _ref(request: pb.CronRuleRef) -> tuple[str, str]:
    for field in ("namespace", "name"):
        if not getattr(request, field):
            raise InvalidArgument(field, "is required")
    return request.namespace, request.name
def _shown_rule(rule: StoredRule | None) -> dict | None:
    if rule is None:
        return None
    shown = json_format.MessageToDict(rule.message(), preserving_proto_field_name=True)
    shown["paused"] = rule.paused
    return shown
