"""The `taskring` command: the shell's tools over the SDK and the admin HTTP API, and the node's entry.

    taskring dev [--grpc-port N] [--admin-port N] [--zookeeper-port N] [--start-at TIME]
                                         everything in one process, no servers, a movable clock
    taskring node [--single] [--node-id ID] [--host H] [--grpc-port N] [--admin-port N]
    taskring ring [--admin URL]          the ring as a table (cluster issue)
    taskring demo [--nodes 3]            a local cluster doing real work
    taskring stack up|down|status        the local stack (deploy/local/stack.sh)
    taskring cron create|update|get|list|pause|resume|delete ...   cron rules (cron.py)
    taskring policies put|get|list|delete ...   a task type's limits and retries (policies.py)
    taskring submit NAMESPACE TYPE [--unique-key K] ... | taskring get ID   one task (submit.py)
    taskring task|dlq|audit|stats ...    operations: search, dead letters, replays, audit (ops.py)
"""
from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys


def _repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parent.parent


def _cmd_node(args: argparse.Namespace) -> int:
    # The one door into the server: imported when `taskring node` runs, never by the other commands.
    from dispatcher.node import run_from_env
    overrides: dict[str, object] = {"cluster": not args.single}
    if args.host is not None:
        overrides["grpc_host"] = args.host
    for name in ("node_id", "grpc_port", "admin_port"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.no_admin_token:
        overrides["admin_token"] = None
    run_from_env(overrides)
    return 0


def _cmd_dev(args: argparse.Namespace) -> int:
    # The second door into the server: the node on in-memory parts (dispatcher/dev.py).
    import asyncio
    import datetime as dt

    from dispatcher.dev import DevConfig, DevError, run_dev
    try:
        start_at = None
        if args.start_at is not None:
            try:
                start_at = dt.datetime.fromisoformat(args.start_at.replace("Z", "+00:00"))
            except ValueError:
                raise DevError(f"start_at: not an ISO 8601 time: {args.start_at!r}") from None
        config = DevConfig(host=args.host, grpc_port=args.grpc_port, admin_port=args.admin_port,
                           zookeeper_port=args.zookeeper_port, slot_count=args.slots, start_at=start_at,
                           policies_file=args.policies_file)
        asyncio.run(run_dev(config))
    except DevError as exc:
        print(f"taskring dev: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_stack(args: argparse.Namespace) -> int:
    script = _repo_root() / "deploy" / "local" / "stack.sh"
    os.execvp("bash", ["bash", str(script), args.action])
    return 0  # not reached


def _cmd_demo(args: argparse.Namespace) -> int:
    # The demo is a client of the system (harness/demo.py), above dispatcher/: imported
    # here only, when the command runs, so that nothing in dispatcher/ depends on it.
    from harness.demo import run_demo
    return run_demo(nodes=args.nodes)


def _cmd_ring(args: argparse.Namespace) -> int:
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `taskring ring | head` ends quietly
    from taskring_cli.admin_client import AdminError, https_context
    from taskring_cli.ring import print_ring
    try:
        context = https_context(args.ca_file, args.cert_file, args.key_file)
    except AdminError as exc:
        print(f"taskring ring: {exc}", file=sys.stderr)
        return 2
    return print_ring(args.admin, token=args.token, context=context)


def main(argv: list[str] | None = None) -> int:
    from taskring_cli.ops import add_client_certificate_args
    parser = argparse.ArgumentParser(prog="taskring", description="taskring dispatcher and tools")
    parser.add_argument("--log-level", default=os.environ.get("TASKRING_LOG_LEVEL", "INFO"))
    sub = parser.add_subparsers(dest="command", required=True)

    node = sub.add_parser("node", help="run a dispatcher node (config from TASKRING_* variables)")
    node.add_argument("--single", action="store_true", help="own every slot; no cluster membership")
    node.add_argument("--node-id")
    node.add_argument("--host", help="listen address of the gRPC API and admin endpoint (default 127.0.0.1)")
    node.add_argument("--grpc-port", type=int)
    node.add_argument("--admin-port", type=int)
    node.add_argument("--no-admin-token", action="store_true",
                      help="serve the admin endpoint without a token (local use only)")
    node.set_defaults(run=_cmd_node)

    dev = sub.add_parser("dev", help="all of taskring in one process: no servers, in memory, a clock you can move")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--grpc-port", type=int, default=7070, help="the task API (0: any free port)")
    dev.add_argument("--admin-port", type=int, default=7080, help="the console and admin API (0: any free port)")
    dev.add_argument("--zookeeper-port", type=int, default=22181,
                     help="where executors register, as with ZooKeeper (0: any free port)")
    dev.add_argument("--slots", type=int, default=8)
    dev.add_argument("--start-at", help="the clock's start, ISO 8601 with a zone (default: now)")
    dev.add_argument("--policies-file", help="per-type limits and retries, as TASKRING_RETRY_POLICIES_FILE")
    dev.set_defaults(run=_cmd_dev)

    stack = sub.add_parser("stack", help="the local ZooKeeper, Kafka and MariaDB")
    stack.add_argument("action", choices=["up", "down", "status"])
    stack.set_defaults(run=_cmd_stack)

    demo = sub.add_parser("demo", help="a local cluster running real tasks")
    demo.add_argument("--nodes", type=int, default=3)
    demo.set_defaults(run=_cmd_demo)

    ring = sub.add_parser("ring", help="print the ring: who owns which slot")
    ring.add_argument("--admin", default=os.environ.get("TASKRING_ADMIN_URL", "http://127.0.0.1:7080"))
    ring.add_argument("--token", default=os.environ.get("TASKRING_ADMIN_TOKEN"))
    ring.add_argument("--ca-file", default=os.environ.get("TASKRING_ADMIN_CA_FILE") or None,
                      help="CA to trust for an https endpoint (TASKRING_ADMIN_CA_FILE)")
    add_client_certificate_args(ring)
    ring.set_defaults(run=_cmd_ring)

    from taskring_cli.cron import add_parser as add_cron
    from taskring_cli.graph import add_parser as add_graph
    from taskring_cli.ops import add_parsers as add_ops
    from taskring_cli.policies import add_parser as add_policies
    from taskring_cli.submit import add_parsers as add_submit
    add_cron(sub)
    add_graph(sub)
    add_policies(sub)
    add_submit(sub)
    add_ops(sub)

    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
