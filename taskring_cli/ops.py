"""`taskring task|dlq|audit|stats`: the operations API from a terminal (tables for people,
`--json` for scripts, a progress bar for a bulk replay), with the console's tokens.

    taskring task show ID | task search --trace-id T | --namespace N (--unique-key K | --task-type T ...)
    taskring dlq groups|list [filters] | show ID | replay ID --reason R | edit ID --payload J --reason R
    taskring dlq delete ID --reason R | bulk-replay [filters] --rate N --reason R
    taskring dlq bulk-status [JOB] | bulk-pause|bulk-resume|bulk-cancel JOB --reason R
    taskring audit [--target T] [--actor A] [--action X] | taskring stats [--hours H]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from taskring_cli.admin_client import AdminClient, AdminError

FILTERS = ("namespace", "task_type", "error_class", "error_group", "since", "until")


def table(rows: Sequence[dict], columns: Sequence[tuple[str, str]], width: int = 60) -> str:
    """Rows as aligned columns; each cell cut to `width` characters."""
    def cell(value: Any) -> str:
        text = "" if value is None else str(value).replace("\n", " ")
        return text if len(text) <= width else text[:width - 1] + "…"
    header = [title for _, title in columns]
    body = [[cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


def progress_bar(done: int, total: int, width: int = 30) -> str:
    share = done / total if total else 1.0
    filled = int(round(share * width))
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({share:.0%})"


def _client(args: argparse.Namespace) -> AdminClient:
    return AdminClient(args.admin, token=args.token, ca_file=args.ca_file, cert_file=args.cert_file,
                       key_file=args.key_file)


def _filters(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in FILTERS if getattr(args, k, None)}


def _out(args: argparse.Namespace, data: Any, human: Callable[[Any], str]) -> None:
    print(json.dumps(data, indent=1, sort_keys=True) if args.json else human(data))


# ---- task ----

def _task_show(args) -> None:
    task = _client(args).get(f"/api/tasks/{args.task_id}")

    def human(t: dict) -> str:
        lines = [f"task {t['task_id']}  {t['namespace']}/{t['task_type']}  slot {t['slot']}",
                 f"state {t['state']} (row {t['status']}), attempts {t['attempts']}, created {t['created_at']},"
                 f" due {t['trigger_at']}",
                 f"payload {json.dumps(t['envelope'].get('payload'))}"]
        if t.get("last_error"):
            lines.append(f"last error: {t['last_error']}")
        lines += ["", "history:", table(t["history"], [("at", "at"), ("state", "state"), ("attempt", "attempt"),
                                                       ("node", "node"), ("detail", "detail")], width=90)]
        if t.get("audit"):
            lines += ["", "audit:", table(t["audit"], [("at", "at"), ("actor", "actor"), ("action", "action"),
                                                       ("reason", "reason")])]
        return "\n".join(lines)
    _out(args, task, human)


def _task_search(args) -> None:
    found = _client(args).get("/api/tasks", trace_id=args.trace_id, namespace=args.namespace,
                              unique_key=args.unique_key, task_type=args.task_type, status=args.status,
                              since=args.since, until=args.until, limit=args.limit, before=args.before)

    def human(page: dict) -> str:
        text = table(page["items"], [("task_id", "task id"), ("namespace", "namespace"), ("task_type", "type"),
                                     ("status", "status"), ("attempts", "attempts"), ("created_at", "created"),
                                     ("last_error", "last error")])
        return text + (f"\nmore: --before {page['next']}" if page.get("next") else "")
    _out(args, found, human)


# ---- dead letters ----

def _dlq_groups(args) -> None:
    answer = _client(args).get("/api/dead-letters/groups", **_filters(args))
    _out(args, answer, lambda a: table(a["groups"], [
        ("count", "count"), ("namespace", "namespace"), ("task_type", "type"), ("error_class", "error"),
        ("error_shape", "message shape"), ("last_at", "latest"), ("error_group", "group")]) + f"\n{a['total']} in all")


def _dlq_list(args) -> None:
    answer = _client(args).get("/api/dead-letters", limit=args.limit, before=args.before, **_filters(args))
    _out(args, answer, lambda a: table(a["items"], [
        ("task_id", "task id"), ("namespace", "namespace"), ("task_type", "type"), ("attempts", "attempts"),
        ("dead_lettered_at", "dead-lettered"), ("last_error", "last error")])
        + (f"\nmore: --before {a['next']}" if a.get("next") else ""))


def _dlq_show(args) -> None:
    answer = _client(args).get(f"/api/dead-letters/{args.task_id}")

    def human(a: dict) -> str:
        d = a["dead_letter"]
        lines = [f"dead letter {d['task_id']}  {d['namespace']}/{d['task_type']}  {d['attempts']} attempts,"
                 f" dead-lettered {d['dead_lettered_at']}", f"group {d['error_group']}: {d['error_class']}:"
                 f" {d['error_shape']}", f"payload {json.dumps(a['envelope'].get('payload'))}", "", "attempts:"]
        for at in a["attempts"]:
            lines.append(f"  #{at['attempt']} {at['outcome']} at {at['ended_at']} on {at['node']}: {at['error']}")
            if at.get("stack_trace"):
                lines += ["    " + line for line in at["stack_trace"].rstrip().splitlines()]
        return "\n".join(lines)
    _out(args, answer, human)


def _dlq_replay(args) -> None:
    answer = _client(args).post(f"/api/dead-letters/{args.task_id}/replay",
                                {"reason": args.reason, "retries": args.retries})
    _out(args, answer, lambda a: f"replayed {a['task_id']}")


def _dlq_edit(args) -> None:
    payload = args.payload
    if args.payload_file:
        with open(args.payload_file, encoding="utf-8") as f:
            payload = f.read()
    if payload is None:
        raise AdminError(0, "give --payload JSON or --payload-file FILE")
    body = {"reason": args.reason, "payload_json": payload, "retries": args.retries,
            "payload_version": args.payload_version}
    client = _client(args)
    preview = client.post(f"/api/dead-letters/{args.task_id}/edit", body)
    if not args.json:
        print(preview["diff"] or "(the payload is unchanged)")
    confirmed = args.yes
    if not confirmed and not args.json and sys.stdin.isatty():
        confirmed = input("replay with this payload? [y/N] ").strip().lower() in ("y", "yes")
    if not confirmed:
        _out(args, preview, lambda p: "not replayed (confirm with --yes)")
        return
    done = client.post(f"/api/dead-letters/{args.task_id}/edit", {**body, "confirm": preview["digest"]})
    _out(args, done, lambda d: f"edited and replayed {d['task_id']}")


def _dlq_delete(args) -> None:
    answer = _client(args).post(f"/api/dead-letters/{args.task_id}/delete", {"reason": args.reason})
    _out(args, answer, lambda a: f"deleted {a['task_id']} from the dead letters")


def _watch(client: AdminClient, job: dict, args) -> dict:
    """Follow a job to its end, drawing its progress (a bar on a terminal, lines otherwise)."""
    tty = sys.stderr.isatty()
    while True:
        done = job["replayed"] + job["skipped"]
        line = f"bulk replay {job['id']} {job['state']:<9} {progress_bar(done, job['total'])}"
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
        if job["state"] in ("done", "cancelled") or (job["state"] == "paused" and not args.follow_paused):
            if tty:
                print(file=sys.stderr)
            return job
        time.sleep(args.poll_s)
        job = client.get(f"/api/bulk-replays/{job['id']}")


def _bulk_replay(args) -> None:
    client = _client(args)
    job = client.post("/api/bulk-replays", {"reason": args.reason, "rate_per_s": args.rate, "retries": args.retries,
                                            "filter": _filters(args)})
    if not args.no_wait:
        job = _watch(client, job, args)
    _out(args, job, lambda j: f"bulk replay {j['id']}: {j['state']}, {j['replayed']} replayed,"
                              f" {j['skipped']} skipped of {j['total']}")


def _bulk_status(args) -> None:
    client = _client(args)
    if args.job is None:
        jobs = client.get("/api/bulk-replays")["jobs"]
        _out(args, jobs, lambda js: table(js, [("id", "job"), ("state", "state"), ("total", "total"),
                                               ("replayed", "replayed"), ("skipped", "skipped"),
                                               ("rate_per_s", "rate/s"), ("created_by", "by"),
                                               ("reason", "reason")]))
        return
    job = client.get(f"/api/bulk-replays/{args.job}")
    if args.watch:
        job = _watch(client, job, args)
    _out(args, job, lambda j: f"bulk replay {j['id']}: {j['state']} "
                              f"{progress_bar(j['replayed'] + j['skipped'], j['total'])}")


def _bulk_change(action: str) -> Callable[[argparse.Namespace], None]:
    def run(args) -> None:
        job = _client(args).post(f"/api/bulk-replays/{args.job}/{action}", {"reason": args.reason})
        _out(args, job, lambda j: f"bulk replay {j['id']}: {j['state']}")
    return run


# ---- audit and figures ----

def _audit(args) -> None:
    answer = _client(args).get("/api/audit", target=args.target, actor=args.actor, action=args.action,
                               namespace=args.namespace, limit=args.limit)
    _out(args, answer["records"], lambda rs: table(rs, [
        ("at", "at"), ("actor", "who"), ("address", "from"), ("action", "action"), ("target", "target"),
        ("reason", "reason")]))


def _stats(args) -> None:
    answer = _client(args).get("/api/stats", hours=args.hours, namespace=args.namespace, task_type=args.task_type)

    def human(a: dict) -> str:
        rows = [{**t, "success_rate": "" if t["success_rate"] is None else f"{t['success_rate']:.1%}"}
                for t in a["day"]["types"]]
        per_minute = sum(m["submitted"] for m in a["series"][-5:]) / max(1, min(5, len(a["series"]))) / 60
        return (f"today (since {a['day']['since']}):\n"
                + table(rows, [("namespace", "namespace"), ("task_type", "type"), ("submitted", "submitted"),
                               ("succeeded", "succeeded"), ("failed", "failed"), ("dead_lettered", "dead-lettered"),
                               ("success_rate", "success"), ("duration_p50_ms", "p50 ms"),
                               ("duration_p99_ms", "p99 ms")])
                + f"\nsubmitted over the last minutes: {per_minute:.1f}/s")
    _out(args, answer, human)


# ---- the parsers ----

def _common(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--admin", default=os.environ.get("TASKRING_ADMIN_URL", "http://127.0.0.1:7080"),
                   help="a node's admin endpoint (TASKRING_ADMIN_URL)")
    p.add_argument("--token", default=os.environ.get("TASKRING_ADMIN_TOKEN"),
                   help="a viewer or operator token (TASKRING_ADMIN_TOKEN)")
    p.add_argument("--ca-file", default=os.environ.get("TASKRING_ADMIN_CA_FILE"),
                   help="CA to trust for an https endpoint (TASKRING_ADMIN_CA_FILE)")
    add_client_certificate_args(p)
    p.add_argument("--json", action="store_true", help="JSON output, for scripts")
    return p


def add_client_certificate_args(p: argparse.ArgumentParser) -> None:
    """The client certificate an admin endpoint under mutual TLS asks every caller for."""
    p.add_argument("--cert-file", default=os.environ.get("TASKRING_ADMIN_CERT_FILE") or None,
                   help="client certificate for an endpoint under mutual TLS (TASKRING_ADMIN_CERT_FILE)")
    p.add_argument("--key-file", default=os.environ.get("TASKRING_ADMIN_KEY_FILE") or None,
                   help="its key (TASKRING_ADMIN_KEY_FILE)")


def _filter_args(p: argparse.ArgumentParser) -> None:
    for name in FILTERS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name)


def _reason(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reason", required=True, help="why (goes in the audit trail and the task's history)")


def _guarded(run: Callable[[argparse.Namespace], None], name: str) -> Callable[[argparse.Namespace], int]:
    def wrapper(args) -> int:
        try:
            run(args)
            return 0
        except AdminError as exc:
            print(f"taskring {name}: {exc}", file=sys.stderr)
            return 1
    return wrapper


def add_parsers(sub: Any) -> None:
    task = sub.add_parser("task", help="a task by id, or task search").add_subparsers(dest="task_cmd", required=True)
    p = _common(task.add_parser("show", help="state, history, attempts, audit"))
    p.add_argument("task_id")
    p.set_defaults(run=_guarded(_task_show, "task show"))
    p = _common(task.add_parser("search", help="by trace id, unique key, or namespace + type + status + time"))
    for name in ("trace_id", "namespace", "unique_key", "task_type", "status", "since", "until", "before"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name)
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(run=_guarded(_task_search, "task search"))

    dlq = sub.add_parser("dlq", help="dead letters: groups, list, show, replay, edit, delete, bulk replay")
    d = dlq.add_subparsers(dest="dlq_cmd", required=True)
    p = _common(d.add_parser("groups", help="one line per failure, largest first"))
    _filter_args(p)
    p.set_defaults(run=_guarded(_dlq_groups, "dlq groups"))
    p = _common(d.add_parser("list", help="dead letters, newest first"))
    _filter_args(p)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--before", help="the `more:` cursor of the previous page")
    p.set_defaults(run=_guarded(_dlq_list, "dlq list"))
    p = _common(d.add_parser("show", help="envelope, every attempt with its error and stack trace"))
    p.add_argument("task_id")
    p.set_defaults(run=_guarded(_dlq_show, "dlq show"))
    p = _common(d.add_parser("replay", help="run it again (same id, same history)"))
    p.add_argument("task_id")
    _reason(p)
    p.add_argument("--retries", type=int, default=0, help="retries after the replayed attempt (default 0: once)")
    p.set_defaults(run=_guarded(_dlq_replay, "dlq replay"))
    p = _common(d.add_parser("edit", help="change the payload (diff shown first), then replay"))
    p.add_argument("task_id")
    _reason(p)
    p.add_argument("--payload", help="the new payload, JSON")
    p.add_argument("--payload-file")
    p.add_argument("--payload-version", type=int)
    p.add_argument("--retries", type=int, default=0)
    p.add_argument("--yes", action="store_true", help="replay without asking")
    p.set_defaults(run=_guarded(_dlq_edit, "dlq edit"))
    p = _common(d.add_parser("delete", help="remove from the dead letters (the task stays dead-lettered)"))
    p.add_argument("task_id")
    _reason(p)
    p.set_defaults(run=_guarded(_dlq_delete, "dlq delete"))
    p = _common(d.add_parser("bulk-replay", help="replay every dead letter of a filter at a rate"))
    _filter_args(p)
    _reason(p)
    p.add_argument("--rate", type=int, default=10, help="replays per second")
    p.add_argument("--retries", type=int, default=0)
    p.add_argument("--no-wait", action="store_true", help="start it and return")
    p.add_argument("--poll-s", type=float, default=1.0, help=argparse.SUPPRESS)
    p.set_defaults(run=_guarded(_bulk_replay, "dlq bulk-replay"), follow_paused=False)
    p = _common(d.add_parser("bulk-status", help="bulk replays, or one with --watch"))
    p.add_argument("job", nargs="?", type=int)
    p.add_argument("--watch", action="store_true")
    p.add_argument("--poll-s", type=float, default=1.0, help=argparse.SUPPRESS)
    p.set_defaults(run=_guarded(_bulk_status, "dlq bulk-status"), follow_paused=True)
    for action in ("pause", "resume", "cancel"):
        p = _common(d.add_parser(f"bulk-{action}", help=f"{action} a bulk replay"))
        p.add_argument("job", type=int)
        _reason(p)
        p.set_defaults(run=_guarded(_bulk_change(action), f"dlq bulk-{action}"))

    p = _common(sub.add_parser("audit", help="the audit trail of manual actions, newest first"))
    for name in ("target", "actor", "action", "namespace"):
        p.add_argument(f"--{name}")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(run=_guarded(_audit, "audit"))
    p = _common(sub.add_parser("stats", help="today's figures per task type"))
    p.add_argument("--hours", type=int, default=1)
    p.add_argument("--namespace")
    p.add_argument("--task-type", dest="task_type")
    p.set_defaults(run=_guarded(_stats, "stats"))
