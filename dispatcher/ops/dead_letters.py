"""Dead letters as an operator sees them: grouped, shown whole, replayed, edited, deleted.

Every action needs a reason and is audited (dispatcher/store/audit.py) in the transaction
that makes it. A replay keeps the task's id and history; the retry budget it gets is
explicit: `retries` more retries after the replayed attempt (0: it runs once; a failure
dead-letters it again). The envelope's max_retries counts attempts from the task's first,
so the replay sets it to attempts made + `retries`.

An edit is shown before it is made: without `confirm`, edit validates the new payload
exactly as a submit would and answers the diff and the digest of the envelope it was
computed from; with `confirm` set to that digest it replays the edited task, unless the
dead letter changed in between (ABORTED).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
from collections.abc import Callable

from google.protobuf import json_format

from dispatcher.api.validation import Limits, validate_task
from dispatcher.auth.identity import Identity
from dispatcher.base.clock import Clock, ms_to_aware
from dispatcher.base.errors import InvalidArgument
from dispatcher.store import records as r
from dispatcher.store.errors import UniqueKeyHeld
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import (
    DeadLetterFilter,
    DeadLetterStoreProtocol,
    Replayed,
    envelope_digest,
)
from taskring.wire import pb

MAX_REASON_CHARS = 1000


@dataclasses.dataclass(frozen=True)
class Actor:
    """Who acts, from where, and why: what every audit record and replay event says."""

    identity: Identity
    address: str
    reason: str

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise InvalidArgument("reason", "is required: say why (it goes in the audit trail and the task's history)")
        if len(self.reason) > MAX_REASON_CHARS:
            raise InvalidArgument("reason", f"is {len(self.reason)} characters, more than {MAX_REASON_CHARS}")


def envelope_dict(envelope: bytes) -> dict:
    task = pb.Task.FromString(envelope)
    shown = json_format.MessageToDict(task, preserving_proto_field_name=True)
    try:
        shown["payload"] = json.loads(task.payload_json or "{}")
    except ValueError:
        shown["payload"] = None
    return shown


def payload_diff(before: str, after: str) -> str:
    """A unified diff of the two payloads, pretty-printed so a change reads line by line."""
    def pretty(text: str) -> list[str]:
        return json.dumps(json.loads(text or "{}"), indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(pretty(before), pretty(after), "payload (dead letter)",
                                          "payload (to replay)", lineterm=""))


def attempts_of(history: list[r.Event]) -> list[dict]:
    """Every attempt with when it ran, how it ended, its error and stack trace."""
    attempts: dict[int, dict] = {}
    for e in history:
        if e.attempt == 0:
            continue
        a = attempts.setdefault(e.attempt, {"attempt": e.attempt, "dispatched_at": None, "started_at": None,
                                            "ended_at": None, "outcome": None, "error": None, "stack_trace": None,
                                            "node": None})
        if e.state == "dispatched":
            a["dispatched_at"], a["node"] = e.at, e.node
        elif e.state == "running":
            a["started_at"] = e.at
        elif e.state in ("succeeded", "retry_wait", "failed") and a["outcome"] is None:
            a["ended_at"], a["outcome"] = e.at, str(e.state)
            a["error"], a["stack_trace"] = e.detail, e.stack_trace
    return [attempts[n] for n in sorted(attempts)]


class DeadLetterOps:
    def __init__(self, *, dead_letters: DeadLetterStoreProtocol, tasks: TaskStoreProtocol, limits: Limits, node: str,
                 clock: Clock, on_replayed: Callable[[Replayed], None] | None = None):
        self._dead_letters = dead_letters
        # Told of each replay once it is written (a task of a graph: what it skipped waits again).
        self._on_replayed = on_replayed or (lambda replayed: None)
        self._tasks = tasks
        self._limits = limits
        self._node = node
        self._clock = clock


    def set_limits(self, limits: Limits) -> None:
        """New limits (the policies file changed): what comes next reads them."""
        self._limits = limits
    def _now(self) -> dt.datetime:
        return self._clock.now()

    # ---- reads ----

    def show(self, task_id: str) -> dict:
        entry, stack_trace = self._dead_letters.get(task_id)
        row, history = self._tasks.get_task(task_id)
        return {"dead_letter": dataclasses.asdict(entry), "last_stack_trace": stack_trace,
                "envelope": envelope_dict(row.envelope), "digest": envelope_digest(row.envelope),
                "attempts": attempts_of(history),
                "history": [{"state": str(e.state), "at": e.at, "node": e.node, "attempt": e.attempt,
                             "detail": e.detail} for e in history]}

    # ---- actions ----

    def replay(self, task_id: str, actor: Actor, *, retries: int = 0, bulk_id: int | None = None) -> Replayed:
        self._check_retries(retries)
        self._retake_key(task_id)

        def rewrite(envelope: bytes, attempts: int) -> bytes:
            return _with_budget(envelope, attempts, retries)
        detail = _detail(actor, retries, bulk_id=bulk_id)
        replayed = self._dead_letters.replay(
            task_id, rewrite=rewrite, detail=detail, node=self._node, now=self._now(),
            record=_record("dlq.replay" if bulk_id is None else "bulk_replay.task", actor, self._now(),
                           retries, bulk_id))
        self._on_replayed(replayed)
        return replayed

    def edit(self, task_id: str, actor: Actor, *, payload_json: str, payload_version: int | None = None,
             retries: int = 0, confirm: str | None = None) -> dict:
        """Without `confirm`: the diff and digest, nothing written. With it: the replay."""
        self._check_retries(retries)
        row, _ = self._tasks.get_task(task_id)
        edited = self._validated_edit(row.envelope, payload_json, payload_version)
        before = pb.Task.FromString(row.envelope)
        preview = {"task_id": task_id, "digest": envelope_digest(row.envelope),
                   "diff": payload_diff(before.payload_json, edited.payload_json),
                   "payload_version": {"before": before.payload_version, "after": edited.payload_version}}
        if confirm is None:
            return {**preview, "confirmed": False}
        self._retake_key(task_id)

        def rewrite(envelope: bytes, attempts: int) -> bytes:
            task = pb.Task.FromString(envelope)
            task.payload_json, task.payload_version = edited.payload_json, edited.payload_version
            return _with_budget(task.SerializeToString(), attempts, retries)
        self._on_replayed(self._dead_letters.replay(
            task_id, rewrite=rewrite, detail=_detail(actor, retries, edited=True), node=self._node,
            now=self._now(), expect_digest=confirm,
            record=_record("dlq.edit", actor, self._now(), retries, None, payload=True)))
        return {**preview, "confirmed": True}

    def delete(self, task_id: str, actor: Actor) -> dict:
        now = self._now()

        def record(entry, envelope: bytes) -> AuditRecord:
            return AuditRecord(at=now, actor=actor.identity.name, address=actor.address, action="dlq.delete",
                                     target=f"task:{task_id}", namespace=entry.namespace, reason=actor.reason,
                                     before=envelope_dict(envelope))
        entry = self._dead_letters.delete(task_id, record)
        return {"task_id": entry.task_id, "deleted": True}

    # ---- checks ----

    def _retake_key(self, task_id: str) -> None:
        """A dead letter with a unique key takes its key again before it is replayed, as
        a new submit of it would: refused (UniqueKeyHeld, nothing written) when another
        live task took the key since; a key still this task's, or free, is taken. The key
        is taken first because a key held by a terminal task holds nothing, so a replay
        that then fails (no longer a dead letter) leaves nothing held."""
        row, _ = self._tasks.get_task(task_id)
        task = pb.Task.FromString(row.envelope)
        if not task.unique_key:
            return
        now = self._now()
        until = (now + dt.timedelta(milliseconds=task.unique_ttl_ms)) if task.HasField("unique_ttl_ms") else None
        held = self._tasks.take_key(r.NewTask(
            task_id=task_id, slot=row.slot, namespace=row.namespace, task_type=row.task_type, priority=task.priority,
            status=r.PENDING, trigger_at=now, envelope=row.envelope, created_at=now, unique_key=task.unique_key,
            unique_until=until))
        if held is not None:
            raise UniqueKeyHeld(task_id, task.unique_key, held.holder, held.status)

    def _check_retries(self, retries: int) -> None:
        if not 0 <= retries <= self._limits.max_retries_limit:
            raise InvalidArgument("retries", f"must be in [0, {self._limits.max_retries_limit}], got {retries}")

    def _validated_edit(self, envelope: bytes, payload_json: str, payload_version: int | None) -> pb.Task:
        """The envelope with the new payload, checked by the submit's own validation (errors
        name `payload_json` / `payload_version` as a submit's would name task.payload_json)."""
        task = pb.Task.FromString(envelope)
        task.payload_json = payload_json
        if payload_version is not None:
            if payload_version < 0 or payload_version > 2**32 - 1:
                raise InvalidArgument("payload_version", f"must be in [0, 4294967295], got {payload_version}")
            task.payload_version = payload_version
        check = pb.Task()
        check.CopyFrom(task)
        check.ClearField("max_retries")  # a replayed envelope's count may exceed a submit's limit
        valid = validate_task(check, now=ms_to_aware(self._clock.now_ms()), limits=self._limits, field_prefix="edit")
        task.payload_json = valid.payload_json  # canonical, as stored at submit
        return task


def _with_budget(envelope: bytes, attempts: int, retries: int) -> bytes:
    task = pb.Task.FromString(envelope)
    task.max_retries = attempts + retries
    return task.SerializeToString()


def _detail(actor: Actor, retries: int, *, edited: bool = False, bulk_id: int | None = None) -> str:
    how = f" (bulk replay {bulk_id})" if bulk_id is not None else ""
    what = "payload edited and replayed" if edited else "replayed"
    budget = "runs once" if retries == 0 else f"{retries} more retries"
    return f"{what} by {actor.identity.name} from {actor.address}{how}; {budget}: {actor.reason}"


def _record(action: str, actor: Actor, now: dt.datetime, retries: int, bulk_id: int | None,
            payload: bool = False) -> Callable[[Replayed], AuditRecord]:
    def record(replayed: Replayed) -> AuditRecord:
        before, after = pb.Task.FromString(replayed.before), pb.Task.FromString(replayed.after)
        shown_before: dict = {"max_retries": before.max_retries, "attempts": replayed.attempts}
        shown_after: dict = {"max_retries": after.max_retries, "retries": retries}
        if payload:
            shown_before |= {"payload_json": before.payload_json, "payload_version": before.payload_version}
            shown_after |= {"payload_json": after.payload_json, "payload_version": after.payload_version}
        if bulk_id is not None:
            shown_after["bulk_replay"] = bulk_id
        return AuditRecord(at=now, actor=actor.identity.name, address=actor.address, action=action,
                                 target=f"task:{replayed.task_id}", namespace=replayed.namespace,
                                 reason=actor.reason, before=shown_before, after=shown_after)
    return record


__all__ = ["Actor", "DeadLetterFilter", "DeadLetterOps", "attempts_of", "payload_diff"]
