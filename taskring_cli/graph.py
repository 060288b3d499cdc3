"""`taskring graph`: a graph from a terminal, through a node's admin endpoint (the console's
tokens; changes need an operator and a reason, and are audited).

    taskring graph show NS GRAPH_ID                     each task: state, join, what it waits for, why
    taskring graph skip NS GRAPH_ID KEY --reason R      skip this step (dead-lettered or waiting), run what follows
    taskring graph replay NS GRAPH_ID KEY --reason R    run a dead-lettered step again; what it skipped waits for it
    taskring graph cancel NS GRAPH_ID --reason R [--mode graceful|immediate]
"""
from __future__ import annotations

import argparse
from typing import Any

from taskring_cli.admin_client import AdminError
from taskring_cli.ops import _client, _common, _guarded, _out, _reason, table


def _show(args: argparse.Namespace) -> None:
    graph = _client(args).get(f"/api/graphs/{args.namespace}/{args.graph_id}")

    def human(g: dict) -> str:
        counts = ", ".join(f"{n} {state}" for state, n in sorted(g["counts"].items()))
        rows = [{**n, "after": ", ".join(f"{e['parent_key']}={e['outcome'] or '…'}" for e in n["depends_on"]),
                 "waiting_for": ", ".join(n["waiting_for"])} for n in g["nodes"]]
        return (f"graph {g['namespace']}/{g['graph_id']}: {g['state']} ({counts})\n"
                + table(rows, [("key", "KEY"), ("state", "STATE"), ("attempts", "ATT"), ("join", "JOIN"),
                               ("after", "AFTER (parent=outcome)"), ("waiting_for", "WAITING FOR"),
                               ("reason", "REASON")], width=48))
    _out(args, graph, human)


def _skip(args: argparse.Namespace) -> None:
    done = _client(args).post(f"/api/graphs/{args.namespace}/{args.graph_id}/tasks/{args.key}/skip",
                              {"reason": args.reason})
    _out(args, done, lambda d: f"{d['key']} ({d['task_id']}): {d['before']} -> skipped; what follows goes on")


def _replay(args: argparse.Namespace) -> None:
    client = _client(args)
    graph = client.get(f"/api/graphs/{args.namespace}/{args.graph_id}")
    node = next((n for n in graph["nodes"] if n["key"] == args.key), None)
    if node is None:
        raise AdminError(0, f"key: {args.key!r} is no task of graph {args.namespace}/{args.graph_id}")
    done = client.post(f"/api/dead-letters/{node['task_id']}/replay", {"reason": args.reason, "retries": args.retries})
    _out(args, done, lambda d: f"{args.key} ({d['task_id']}): replayed; the tasks it skipped wait for it again")


def _cancel(args: argparse.Namespace) -> None:
    done = _client(args).post(f"/api/graphs/{args.namespace}/{args.graph_id}/cancel",
                              {"reason": args.reason, "mode": args.mode})
    _out(args, done, lambda d: f"cancelled {d['cancelled']} tasks ({d['mode']});"
                               f" running on to their end: {', '.join(d['running']) or 'none'}")


def add_parser(sub: Any) -> None:
    graph = sub.add_parser("graph", help="a graph of tasks: show, skip a step, replay a step, cancel")
    g = graph.add_subparsers(dest="graph_cmd", required=True)
    p = _common(g.add_parser("show", help="every task: state, join, what it waits for, why"))
    p.add_argument("namespace")
    p.add_argument("graph_id")
    p.set_defaults(run=_guarded(_show, "graph show"))
    p = _common(g.add_parser("skip", help="skip this step (dead-lettered or waiting) and run what follows"))
    p.add_argument("namespace")
    p.add_argument("graph_id")
    p.add_argument("key")
    _reason(p)
    p.set_defaults(run=_guarded(_skip, "graph skip"))
    p = _common(g.add_parser("replay", help="run a dead-lettered step again; what it skipped waits for it"))
    p.add_argument("namespace")
    p.add_argument("graph_id")
    p.add_argument("key")
    _reason(p)
    p.add_argument("--retries", type=int, default=0, help="retries after the replayed attempt (default 0: once)")
    p.set_defaults(run=_guarded(_replay, "graph replay"))
    p = _common(g.add_parser("cancel", help="cancel every task that has not ended"))
    p.add_argument("namespace")
    p.add_argument("graph_id")
    _reason(p)
    p.add_argument("--mode", choices=("graceful", "immediate"), default="graceful")
    p.set_defaults(run=_guarded(_cancel, "graph cancel"))
