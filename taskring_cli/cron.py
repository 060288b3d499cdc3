"""`taskring cron ...`: cron rules from the shell, through a node's CronService (the SDK).

    taskring cron create NAMESPACE NAME --type T --schedule "0 0 * * *" --zone Asia/Singapore
                         [--payload JSON] [--catch-up latest] [--overlap allow] [--owner-team X] ...
    taskring cron update NAMESPACE NAME ...same options (the whole rule)
    taskring cron get|pause|resume|delete NAMESPACE NAME
    taskring cron list [NAMESPACE]

--target (or TASKRING_TARGET) is the node's gRPC address; TASKRING_TOKEN and TLS files come
from the environment (taskring_cli/shell_client.py). Output is JSON, one flat object per rule
(the same keys as the Go, Java and Node CLIs print), one line per rule for `list`; an error
prints the server's message (naming the field) and exits 1.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from typing import Any

from taskring_cli.json_output import to_json


def add_parser(sub: Any) -> None:
    cron = sub.add_parser("cron", help="cron rules: create, update, get, list, pause, resume, delete")
    cron.add_argument("--target", default=os.environ.get("TASKRING_TARGET", "127.0.0.1:7070"),
                      help="a node's gRPC address (TASKRING_TARGET; default 127.0.0.1:7070)")
    actions = cron.add_subparsers(dest="action", required=True)
    for action in ("create", "update"):
        put = actions.add_parser(action)
        put.add_argument("namespace")
        put.add_argument("name")
        put.add_argument("--type", dest="task_type", required=True)
        put.add_argument("--schedule", required=True, help='5 fields, or 6 with seconds first; may start "CRON_TZ=Z "')
        put.add_argument("--zone", dest="time_zone", default="", help="IANA time zone, e.g. Europe/London")
        put.add_argument("--payload", default="{}", help="the fire task's payload, a JSON object")
        for option in ("on-repeated-hour", "on-skipped-hour", "catch-up", "overlap", "owner-team", "description"):
            put.add_argument(f"--{option}", default="")
        put.add_argument("--catch-up-limit", type=int, default=0)
        put.add_argument("--timeout-ms", type=int, default=None)
        put.add_argument("--max-retries", type=int, default=None)
    for action in ("get", "pause", "resume", "delete"):
        one = actions.add_parser(action)
        one.add_argument("namespace")
        one.add_argument("name")
    listing = actions.add_parser("list")
    listing.add_argument("namespace", nargs="?", default="")
    cron.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from taskring.cron import CronRuleSpec
    from taskring.errors import TaskringError
    from taskring_cli.shell_client import shell_client
    try:
        with shell_client(args.target) as client:
            if args.action in ("create", "update"):
                try:
                    payload = json.loads(args.payload)
                except ValueError as exc:
                    print(f"--payload: not JSON: {exc}", file=sys.stderr)
                    return 2
                spec = CronRuleSpec(
                    namespace=args.namespace, name=args.name, task_type=args.task_type, schedule=args.schedule,
                    time_zone=args.time_zone, payload=payload, on_repeated_hour=args.on_repeated_hour,
                    on_skipped_hour=args.on_skipped_hour, catch_up=args.catch_up, catch_up_limit=args.catch_up_limit,
                    overlap=args.overlap, owner_team=args.owner_team, description=args.description,
                    timeout=None if args.timeout_ms is None else dt.timedelta(milliseconds=args.timeout_ms),
                    max_retries=args.max_retries)
                rules = [getattr(client.cron, args.action)(spec)]
            elif args.action == "list":
                rules = client.cron.list(args.namespace)
            else:
                rules = [getattr(client.cron, args.action)(args.namespace, args.name)]
    except TaskringError as exc:
        print(f"taskring cron {args.action}: {exc}", file=sys.stderr)
        return 1
    for rule in rules:
        print(json.dumps(rule_json(rule), sort_keys=True))
    return 0


def rule_json(info: Any) -> dict[str, Any]:
    """A CronRuleInfo as one flat JSON object, the keys every SDK's CLI prints for a rule
    (tests/integration/test_sdk_cron.py): the spec's fields, `timeout_ms`, the state."""
    spec = json.loads(to_json(info.spec))
    spec["timeout_ms"] = spec.pop("timeout")
    spec["payload"] = spec["payload"] or {}
    state = json.loads(to_json(info))
    del state["spec"]
    return {**spec, **state}

