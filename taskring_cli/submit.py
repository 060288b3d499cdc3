"""`taskring submit` and `taskring get`: one task from the shell, through a node (the SDK).

    taskring submit NAMESPACE TASK_TYPE [--payload JSON] [--delay S] [--task-id ID]
                    [--unique-key K [--unique-ttl S]] [--max-retries N] [--priority low|normal|high]
    taskring get TASK_ID

--target (or TASKRING_TARGET) is the node's gRPC address; TASKRING_TOKEN and TLS files come
from the environment (taskring_cli/shell_client.py). Output is JSON; an error prints
the server's message (naming the field) and exits 1. A submit whose unique key another
live task holds prints that task's id with "duplicate": true.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from taskring_cli.json_output import to_json


def add_parsers(sub: Any) -> None:
    target = dict(default=os.environ.get("TASKRING_TARGET", "127.0.0.1:7070"),
                  help="a node's gRPC address (TASKRING_TARGET; default 127.0.0.1:7070)")
    submit = sub.add_parser("submit", help="submit one task")
    submit.add_argument("--target", **target)
    submit.add_argument("namespace")
    submit.add_argument("task_type")
    submit.add_argument("--payload", default="{}", help="a JSON object")
    submit.add_argument("--delay", type=float, default=None, help="seconds from acceptance")
    submit.add_argument("--task-id", default=None)
    submit.add_argument("--unique-key", default=None)
    submit.add_argument("--unique-ttl", type=float, default=None, help="seconds the key is held from acceptance")
    submit.add_argument("--max-retries", type=int, default=None)
    submit.add_argument("--priority", default="normal", choices=("low", "normal", "high"))
    submit.set_defaults(run=_submit)
    get = sub.add_parser("get", help="a task's state and history")
    get.add_argument("--target", **target)
    get.add_argument("task_id")
    get.set_defaults(run=_get)


def _submit(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(args.payload)
    except ValueError as exc:
        print(f"--payload: not JSON: {exc}", file=sys.stderr)
        return 2
    return _call(args.target, "submit", lambda client: client.submit(
        args.namespace, args.task_type, payload, delay=args.delay, task_id=args.task_id,
        unique_key=args.unique_key, unique_ttl=args.unique_ttl, max_retries=args.max_retries,
        priority=args.priority))


def _get(args: argparse.Namespace) -> int:
    return _call(args.target, "get", lambda client: client.get(args.task_id))


def _call(target: str, what: str, call) -> int:
    from taskring.errors import TaskringError
    from taskring_cli.shell_client import shell_client
    try:
        with shell_client(target) as client:
            result = call(client)
    except TaskringError as exc:
        print(f"taskring {what}: {exc}", file=sys.stderr)
        return 1
    print(to_json(result))
    return 0

