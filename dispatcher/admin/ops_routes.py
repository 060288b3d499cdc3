"""The operations API on the admin endpoint, in JSON: what the console and `taskring
dlq|task|audit` call (the same tokens for both). Reads need a viewer, actions an operator;
every action needs a `reason` and is audited.

    GET  /api/dead-letters                 ?namespace&task_type&error_class&error_group&since&until&before&limit
    GET  /api/dead-letters/groups          the same filter, one line per failure group, largest first
    GET  /api/dead-letters/<id>            envelope, every attempt with its error and stack trace, history
    POST /api/dead-letters/<id>/replay     {reason, retries}
    POST /api/dead-letters/<id>/edit       {reason, payload_json, payload_version?, retries, confirm?}
    POST /api/dead-letters/<id>/delete     {reason}
    GET  /api/bulk-replays, /api/bulk-replays/<n>
    POST /api/bulk-replays                 {reason, rate_per_s, retries, filter: {...}}
    POST /api/bulk-replays/<n>/pause|resume|cancel   {reason}
    GET  /api/tasks/<id>                   a task: state, history, attempts
    GET  /api/tasks                        ?trace_id | ?namespace&unique_key | ?namespace&task_type&status&since&until
    GET  /api/audit                        ?target&actor&action&namespace&before&limit
    GET  /api/stats                        ?hours&namespace&task_type: today per type, the last hours per minute

Times in queries are RFC 3339 (`2026-12-01T03:00:00Z`) or unix milliseconds. A page's
`next` is the cursor to pass as `before` for the next page.
"""
from __future__ import annotations

import dataclasses
import datetime as dt

from dispatcher.admin import routes as rt
from dispatcher.admin.routes import Request, Response
from dispatcher.api.validation import parse_rfc3339
from dispatcher.auth.identity import Role
from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_datetime, rfc3339
from dispatcher.base.errors import InvalidArgument
from dispatcher.engine.task_stats import TaskStats
from dispatcher.ops.bulk_replay import BulkReplays
from dispatcher.ops.dead_letters import Actor, DeadLetterOps, attempts_of, envelope_dict
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_audit import AuditProtocol
from dispatcher.store.interface_dead_letters import DeadLetterFilter, DeadLetterStoreProtocol
from dispatcher.store.interface_search import MAX_PAGE, Query, SearchProtocol

_ID = r"(?P<task_id>[A-Za-z0-9._:-]{1,64})"


def parse_time(value: str | None, name: str) -> dt.datetime | None:
    """RFC 3339 or unix milliseconds -> naive UTC; InvalidArgument naming `name`."""
    if not value:
        return None
    if value.isdigit():
        return ms_to_datetime(int(value))
    try:
        return parse_rfc3339(value).astimezone(dt.UTC).replace(tzinfo=None)
    except ValueError:
        raise InvalidArgument(name, f"must be RFC 3339 (2026-12-01T03:00:00Z) or unix ms, got {value!r}") from None


def format_cursor(cursor: tuple[dt.datetime, str]) -> str:
    return f"{datetime_to_ms(cursor[0])}:{cursor[1]}"


def parse_cursor(value: str | None) -> tuple[dt.datetime, str] | None:
    if not value:
        return None
    ms, sep, task_id = value.partition(":")
    if not sep or not ms.isdigit() or not task_id:
        raise InvalidArgument("before", f"must be a cursor from a page's `next`, got {value!r}")
    return ms_to_datetime(int(ms)), task_id


def _int(value: object, name: str, default: int, lo: int, hi: int) -> int:
    if value is None or value == "":
        return default
    try:
        n = int(str(value))
    except ValueError:
        raise InvalidArgument(name, f"must be a whole number, got {value!r}") from None
    if not lo <= n <= hi:
        raise InvalidArgument(name, f"must be in [{lo}, {hi}], got {n}")
    return n


def _shown(value: object) -> object:
    if isinstance(value, dt.datetime):
        return rfc3339(value)
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _filter(get) -> DeadLetterFilter:
    return DeadLetterFilter(namespace=get("namespace") or "", task_type=get("task_type") or "",
                            error_class=get("error_class") or "", error_group=get("error_group") or "",
                            since=parse_time(get("since"), "since"), until=parse_time(get("until"), "until"))


@dataclasses.dataclass
class OpsRoutes:
    tasks: TaskStoreProtocol
    dead_letters: DeadLetterStoreProtocol
    ops: DeadLetterOps
    bulk: BulkReplays
    search: SearchProtocol
    audit: AuditProtocol
    clock: Clock
    stats: TaskStats

    def routes(self) -> list[rt.Route]:
        viewer, operator = Role.VIEWER, Role.OPERATOR
        return [
            rt.route("GET", "/api/dead-letters", viewer, self.list_dead_letters),
            rt.route("GET", "/api/dead-letters/groups", viewer, self.groups),
            rt.route("GET", f"/api/dead-letters/{_ID}", viewer, self.show),
            rt.route("POST", f"/api/dead-letters/{_ID}/replay", operator, self.replay),
            rt.route("POST", f"/api/dead-letters/{_ID}/edit", operator, self.edit),
            rt.route("POST", f"/api/dead-letters/{_ID}/delete", operator, self.delete),
            rt.route("GET", "/api/bulk-replays", viewer, self.jobs),
            rt.route("POST", "/api/bulk-replays", operator, self.start_job),
            rt.route("GET", r"/api/bulk-replays/(?P<job>\d{1,18})", viewer, self.job),
            rt.route("POST", r"/api/bulk-replays/(?P<job>\d{1,18})/(?P<action>pause|resume|cancel)", operator,
                     self.change_job),
            rt.route("GET", f"/api/tasks/{_ID}", viewer, self.task),
            rt.route("GET", "/api/tasks", viewer, self.search_tasks),
            rt.route("GET", "/api/audit", viewer, self.audit_records),
            rt.route("GET", "/api/stats", viewer, self.overview),
        ]

    @staticmethod
    def _actor(req: Request, body: dict) -> Actor:
        return Actor(req.identity, req.address, str(body.get("reason") or ""))

    # ---- dead letters ----

    def list_dead_letters(self, req: Request) -> Response:
        limit = _int(req.arg("limit"), "limit", 50, 1, MAX_PAGE)
        where = _filter(req.arg)
        items = self.dead_letters.page(where, cursor=parse_cursor(req.arg("before")), limit=limit)
        return Response.of_json({"items": [_shown(dataclasses.asdict(d)) for d in items],
                                 "next": format_cursor(items[-1].cursor) if len(items) == limit else None,
                                 "filter": where.as_dict()})

    def groups(self, req: Request) -> Response:
        where = _filter(req.arg)
        groups = self.dead_letters.groups(where, limit=_int(req.arg("limit"), "limit", 100, 1, 1000))
        return Response.of_json({"groups": [_shown(dataclasses.asdict(g)) for g in groups],
                                 "total": sum(g.count for g in groups), "filter": where.as_dict()})

    def show(self, req: Request) -> Response:
        return Response.of_json(_shown(self.ops.show(req.params["task_id"])))

    def replay(self, req: Request) -> Response:
        body = req.json()
        done = self.ops.replay(req.params["task_id"], self._actor(req, body),
                               retries=_int(body.get("retries"), "retries", 0, 0, 1000))
        return Response.of_json({"task_id": done.task_id, "replayed": True})

    def edit(self, req: Request) -> Response:
        body = req.json()
        payload = body.get("payload_json")
        if not isinstance(payload, str):
            raise InvalidArgument("payload_json", "is required: the new payload, as JSON text")
        version = body.get("payload_version")
        answer = self.ops.edit(req.params["task_id"], self._actor(req, body), payload_json=payload,
                               payload_version=None if version in (None, "") else _int(version, "payload_version",
                                                                                         0, 0, 2**32 - 1),
                               retries=_int(body.get("retries"), "retries", 0, 0, 1000),
                               confirm=str(body["confirm"]) if body.get("confirm") else None)
        return Response.of_json(answer)

    def delete(self, req: Request) -> Response:
        body = req.json()
        return Response.of_json(self.ops.delete(req.params["task_id"], self._actor(req, body)))

    # ---- bulk replays ----

    def jobs(self, req: Request) -> Response:
        return Response.of_json({"jobs": [_shown(j.as_dict()) for j in self.bulk.jobs()]})

    def job(self, req: Request) -> Response:
        return Response.of_json(_shown(self.bulk.get(int(req.params["job"])).as_dict()))

    def start_job(self, req: Request) -> Response:
        body = req.json()
        given = body.get("filter") or {}
        if not isinstance(given, dict):
            raise InvalidArgument("filter", "must be an object of namespace, task_type, error_class, error_group,"
                                  " since, until")
        unknown = set(given) - {"namespace", "task_type", "error_class", "error_group", "since", "until"}
        if unknown:
            raise InvalidArgument(f"filter.{sorted(unknown)[0]}", "is not a filter field")
        job = self.bulk.start(_filter(lambda k: given.get(k)), self._actor(req, body),
                              rate_per_s=_int(body.get("rate_per_s"), "rate_per_s", 10, 1, 1000),
                              retries=_int(body.get("retries"), "retries", 0, 0, 1000))
        return Response.of_json(_shown(job.as_dict()), 201)

    def change_job(self, req: Request) -> Response:
        body = req.json()
        job = self.bulk.change(int(req.params["job"]), req.params["action"], self._actor(req, body))
        return Response.of_json(_shown(job.as_dict()))

    # ---- tasks and the audit trail ----

    def task(self, req: Request) -> Response:
        row, history = self.tasks.get_task(req.params["task_id"])
        note = self.tasks.wait_note(row.task_id) if row.status in r.NOT_HANDED_OUT else None
        return Response.of_json(_shown({
            "waiting": note[1] if note is not None and note[0] == row.attempts + 1 else "",
            "task_id": row.task_id, "namespace": row.namespace, "task_type": row.task_type, "slot": row.slot,
            "status": str(row.status),
            "state": str(r.api_state(row.status, row.attempts, row.trigger_at, self.clock.now())),
            "attempts": row.attempts, "trigger_at": row.trigger_at, "created_at": row.created_at,
            "updated_at": row.updated_at, "last_error": row.last_error, "envelope": envelope_dict(row.envelope),
            "attempt_list": attempts_of(history),
            "history": [{"state": str(e.state), "at": e.at, "node": e.node, "attempt": e.attempt, "detail": e.detail}
                        for e in history],
            "audit": [rec.as_dict() for rec in self.audit.records(target=f"task:{row.task_id}", limit=50)]}))

    def search_tasks(self, req: Request) -> Response:
        q = Query(trace_id=req.arg("trace_id") or "", unique_key=req.arg("unique_key") or "",
                  namespace=req.arg("namespace") or "", task_type=req.arg("task_type") or "",
                  status=req.arg("status") or "", since=parse_time(req.arg("since"), "since"),
                  until=parse_time(req.arg("until"), "until"))
        if q.status and q.status not in {s.value for s in r.Status}:
            raise InvalidArgument("status", f"must be one of {', '.join(s.value for s in r.Status)}, got {q.status!r}")
        if not q.trace_id and not (q.unique_key and q.namespace) and not (q.namespace and q.task_type):
            raise InvalidArgument("query", "give trace_id, or namespace and unique_key, or namespace and task_type"
                                  " (with status, since and until to narrow it)")
        limit = _int(req.arg("limit"), "limit", 50, 1, MAX_PAGE)
        items = self.search.search(q, before=parse_cursor(req.arg("before")), limit=limit)
        return Response.of_json({"items": [_shown(dataclasses.asdict(t)) for t in items],
                                 "next": format_cursor(items[-1].cursor) if len(items) == limit else None})

    def audit_records(self, req: Request) -> Response:
        records = self.audit.records(target=req.arg("target") or "", actor=req.arg("actor") or "",
                                     action=req.arg("action") or "", namespace=req.arg("namespace") or "",
                                     before=parse_time(req.arg("before"), "before"),
                                     limit=_int(req.arg("limit"), "limit", 100, 1, 1000))
        return Response.of_json({"records": [rec.as_dict() for rec in records]})

    # ---- figures (from the per-minute aggregates, dispatcher/engine/task_stats.py) ----

    def overview(self, req: Request) -> Response:
        hours = _int(req.arg("hours"), "hours", 1, 1, 48)
        now = self.clock.now()
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return Response.of_json(_shown(self.stats.overview(
            since=today, series_since=now - dt.timedelta(hours=hours), namespace=req.arg("namespace") or "",
            task_type=req.arg("task_type") or "")))
