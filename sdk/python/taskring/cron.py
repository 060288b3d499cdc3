"""Cron rules: a task created once per fire time, cluster-wide, in the rule's time zone.

    from taskring import Client
    from taskring.cron import CronRuleSpec

    with Client("127.0.0.1:7070") as client:
        client.cron.create(CronRuleSpec(
            namespace="billing", name="daily-reconcile", task_type="reconcile",
            schedule="0 0 * * *", time_zone="Asia/Singapore",
            payload={"scope": "all"}, owner_team="payments", description="reconcile at midnight SGT"))
        rule = client.cron.get("billing", "daily-reconcile")
        print(rule.next_fire_time, rule.last_fire_task_id)

`schedule` has 5 fields (minute hour day-of-month month day-of-week) or 6 with SECONDS
FIRST; it may start with `CRON_TZ=<zone>` instead of giving `time_zone`. A rule without a
zone is refused. The daylight-saving, catch-up and overlap policies are in docs/cron.md.
Every fire's task is an ordinary task: `Client.get(rule.last_fire_task_id)` shows it,
with its `cron_rule` and `cron_fire_time`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import grpc

from taskring._envelope import encode_payload, parse_instant, state_from_pb
from taskring.errors import from_rpc_error
from taskring.task import TaskState, to_millis
from taskring.wire import pb, pb_grpc


@dataclass(frozen=True, slots=True)
class CronRuleSpec:
    """What a rule is: the arguments of `CronRules.create` and `.update`."""

    namespace: str
    name: str
    """``[a-z0-9][a-z0-9._-]{0,63}``, unique in the namespace."""
    task_type: str
    """The task each fire creates (fixed for the rule's life: it decides the rule's slot)."""
    schedule: str
    time_zone: str = ""
    """An IANA zone (``"Europe/London"``); required unless `schedule` starts with ``CRON_TZ=``."""
    payload: Mapping[str, Any] | None = None
    on_repeated_hour: str = ""
    """``"once"`` or ``"twice"``; "" lets the schedule decide (docs/cron.md)."""
    on_skipped_hour: str = ""
    """``"at_shift"`` or ``"skip"``; "" lets the schedule decide."""
    catch_up: str = ""
    """After an outage: ``"skip"``, ``"latest"`` (the default) or ``"all"`` up to `catch_up_limit`."""
    catch_up_limit: int = 0
    """Most missed fires ``"all"`` creates (0: the server's default, 100)."""
    overlap: str = ""
    """While the previous fire is live: ``"allow"`` (default), ``"skip"`` or ``"queue_one"``."""
    owner_team: str = ""
    description: str = ""
    timeout: timedelta | None = None
    """Each fire task's per-attempt timeout (the server's default when None)."""
    max_retries: int | None = None

    def to_pb(self) -> pb.CronRule:
        rule = pb.CronRule(namespace=self.namespace, name=self.name, task_type=self.task_type,
                           payload_json=encode_payload(dict(self.payload or {})),
                           schedule=self.schedule, time_zone=self.time_zone, on_repeated_hour=self.on_repeated_hour,
                           on_skipped_hour=self.on_skipped_hour, catch_up=self.catch_up,
                           catch_up_limit=self.catch_up_limit, overlap=self.overlap, owner_team=self.owner_team,
                           description=self.description)
        if self.timeout is not None:
            rule.timeout_ms = to_millis(self.timeout)   # rounded up, as every other SDK does
        if self.max_retries is not None:
            rule.max_retries = self.max_retries
        return rule


@dataclass(frozen=True, slots=True)
class CronRuleInfo:
    """A rule as stored (normalised: the zone and every policy filled in) and its state."""

    spec: CronRuleSpec
    paused: bool
    next_fire_time: datetime | None
    """The next fire time after now (None when paused)."""
    last_fire_time: datetime | None
    """The latest fire time, not after now, that has its task."""
    last_fire_task_id: str
    last_fire_state: TaskState | None
    created_at: datetime | None
    updated_at: datetime | None


def _info(rule: pb.CronRule) -> CronRuleInfo:
    spec = CronRuleSpec(namespace=rule.namespace, name=rule.name, task_type=rule.task_type, schedule=rule.schedule,
                        time_zone=rule.time_zone, payload=json.loads(rule.payload_json or "{}"),
                        on_repeated_hour=rule.on_repeated_hour, on_skipped_hour=rule.on_skipped_hour,
                        catch_up=rule.catch_up, catch_up_limit=rule.catch_up_limit, overlap=rule.overlap,
                        owner_team=rule.owner_team, description=rule.description,
                        timeout=timedelta(milliseconds=rule.timeout_ms) if rule.HasField("timeout_ms") else None,
                        max_retries=rule.max_retries if rule.HasField("max_retries") else None)
    return CronRuleInfo(spec=spec, paused=rule.paused, next_fire_time=parse_instant(rule.next_fire_time),
                        last_fire_time=parse_instant(rule.last_fire_time), last_fire_task_id=rule.last_fire_task_id,
                        last_fire_state=state_from_pb(rule.last_fire_state) if rule.last_fire_task_id else None,
                        created_at=parse_instant(rule.created_at), updated_at=parse_instant(rule.updated_at))


class CronRules:
    """The CronService over a client's channel: `Client.cron`."""

    def __init__(self, channel: grpc.Channel, timeout_s: float | None):
        self._stub = pb_grpc.CronServiceStub(channel)
        self._timeout = timeout_s

    def _call(self, method, request) -> Any:
        try:
            return method(request, timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e

    def create(self, spec: CronRuleSpec) -> CronRuleInfo:
        """A new rule; `AlreadyExists` if the name is taken, `InvalidArgument` naming the
        field (``"rule.time_zone"``) for a bad one, and then nothing was written."""
        return _info(self._call(self._stub.CreateCronRule, pb.PutCronRuleRequest(rule=spec.to_pb())).rule)

    def update(self, spec: CronRuleSpec) -> CronRuleInfo:
        """Replace the rule's spec; its fires not yet started are cancelled and it is
        planned again from now. The task type cannot change."""
        return _info(self._call(self._stub.UpdateCronRule, pb.PutCronRuleRequest(rule=spec.to_pb())).rule)

    def get(self, namespace: str, name: str) -> CronRuleInfo:
        return _info(self._call(self._stub.GetCronRule, pb.CronRuleRef(namespace=namespace, name=name)))

    def list(self, namespace: str = "") -> list[CronRuleInfo]:
        """Every rule of `namespace` ("" = all), by namespace and name."""
        resp = self._call(self._stub.ListCronRules, pb.ListCronRulesRequest(namespace=namespace))
        return [_info(rule) for rule in resp.rules]

    def pause(self, namespace: str, name: str) -> CronRuleInfo:
        """Stop firing; fires not yet started are cancelled."""
        return _info(self._call(self._stub.PauseCronRule, pb.CronRuleRef(namespace=namespace, name=name)))

    def resume(self, namespace: str, name: str) -> CronRuleInfo:
        """Fire again from now on (what fell due while paused is not caught up)."""
        return _info(self._call(self._stub.ResumeCronRule, pb.CronRuleRef(namespace=namespace, name=name)))

    def delete(self, namespace: str, name: str) -> CronRuleInfo:
        """Remove the rule; fires not yet started are cancelled. Returns it as it was."""
        return _info(self._call(self._stub.DeleteCronRule, pb.CronRuleRef(namespace=namespace, name=name)))
