"""`taskring policies ...`: a task type's policies from the shell, through a node's PolicyService
(the SDK). An entry is one key of the policies file in its JSON shape (docs/limits.md).

    taskring policies put NAMESPACE TYPE --policy '{"concurrency": {"per_type": 3}}' --reason WHY
                          [--if-revision N]
    taskring policies get NAMESPACE TYPE
    taskring policies delete NAMESPACE TYPE --reason WHY [--if-revision N]
    taskring policies list [NAMESPACE]

--target (or TASKRING_TARGET) is the node's gRPC address; TASKRING_TOKEN and TLS files come
from the environment (taskring_cli/shell_client.py). Output is JSON, one object per entry (the
keys the Go, Java and Node CLIs print), one line per entry for `list`; a refusal prints the
server's message (naming the field) and exits 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from taskring_cli.json_output import to_json


def add_parser(sub: Any) -> None:
    policies = sub.add_parser("policies", help="a task type's limits, rates, fair shares, retries: put, get, list,"
                                                " delete")
    policies.add_argument("--target", default=os.environ.get("TASKRING_TARGET", "127.0.0.1:7070"),
                          help="a node's gRPC address (TASKRING_TARGET; default 127.0.0.1:7070)")
    actions = policies.add_subparsers(dest="action", required=True)
    for action in ("put", "get", "delete"):
        one = actions.add_parser(action)
        one.add_argument("namespace")
        one.add_argument("task_type")
        if action == "put":
            one.add_argument("--policy", required=True, help="the type's entry, a JSON object as in the policies file")
        if action != "get":
            one.add_argument("--reason", required=True, help="why (it goes in the audit trail)")
            one.add_argument("--if-revision", type=int, default=None,
                             help="only if the API entry is at this revision (0: none yet)")
    listing = actions.add_parser("list")
    listing.add_argument("namespace", nargs="?", default="")
    policies.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from taskring.errors import TaskringError
    from taskring_cli.shell_client import shell_client
    try:
        with shell_client(args.target) as client:
            if args.action == "put":
                try:
                    policy = json.loads(args.policy)
                except ValueError as exc:
                    print(f"--policy: not JSON: {exc}", file=sys.stderr)
                    return 2
                entries = [client.policies.put(args.namespace, args.task_type, policy, reason=args.reason,
                                               if_revision=args.if_revision)]
            elif args.action == "delete":
                entries = [client.policies.delete(args.namespace, args.task_type, reason=args.reason,
                                                  if_revision=args.if_revision)]
            elif args.action == "get":
                entries = [client.policies.get(args.namespace, args.task_type)]
            else:
                entries = client.policies.list(args.namespace)
    except TaskringError as exc:
        print(f"taskring policies {args.action}: {exc}", file=sys.stderr)
        return 1
    for entry in entries:
        print(to_json(entry))
    return 0
