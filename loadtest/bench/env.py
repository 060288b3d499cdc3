"""A run's private world on the local stack, and the processes started in it.

`BenchEnv` is the one lifecycle of a benchmark run: `start()` makes the world (a
scratch MariaDB database with every migration, a ZooKeeper chroot, topics
`<prefix>.{high,normal,low}`: harness/world.py), `start_node()` starts `taskring
node` processes in it (harness/processes.py), `on_stop()` registers whatever else the
run starts (executor and load processes, py-spy, cgroups, observers), and `stop()`
stops all of that by PID, newest first, then every node still running, then drops the
world. `stop()` never raises (a cleanup must not hide the run's own result), returns
the problems it met, and is safe before `start()` and twice.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

from cluster.slots import slot_of
from harness.demo import stop_nodes
from harness.processes import NodeProcess
from harness.stack import StackEndpoints
from harness.world import World, create_world, drop_world, new_run_id

SLOTS = 16
NAMESPACE = "bench"


def spread_task_types(per_slot: int = 2, prefix: str = "noop-", slots: int = SLOTS,
                      namespace: str = NAMESPACE) -> list[str]:
    """Task type names, exactly `per_slot` of them in every slot, slot 0's first. All tasks of
    one type share one slot (one partition, one poller), so a single type would measure
    one slot, not the node."""
    chosen: dict[int, list[str]] = collections.defaultdict(list)
    i = 0
    while any(len(chosen[s]) < per_slot for s in range(slots)):
        name = f"{prefix}{i}"
        s = slot_of(namespace, name, slots)
        if len(chosen[s]) < per_slot:
            chosen[s].append(name)
        i += 1
    return [t for s in range(slots) for t in chosen[s]]


# ---------------------------------------------------------------- where the stack is

def add_stack_options(parser: argparse.ArgumentParser) -> None:
    """--kafka, --zk, --mysql-host, --mysql-port, --mysql-user (defaults: harness/stack.py's)."""
    stack = StackEndpoints.from_env()
    parser.add_argument("--kafka", default=stack.kafka_bootstrap)
    parser.add_argument("--zk", default=stack.zk_hosts)
    parser.add_argument("--mysql-host", default=stack.host)
    parser.add_argument("--mysql-port", type=int, default=stack.mysql_port)
    parser.add_argument("--mysql-user", default=stack.mysql_user)


def stack_from_args(args: argparse.Namespace, script: str) -> StackEndpoints:
    """The stack of add_stack_options' options."""
    zk_host, _, zk_port = args.zk.rpartition(":")
    kafka_host, _, kafka_port = args.kafka.rpartition(":")
    if not zk_host == kafka_host == args.mysql_host:
        raise SystemExit(f"{script}: ZooKeeper, Kafka and MariaDB must be on one host (the local stack)")
    return dataclasses.replace(StackEndpoints.from_env(), host=args.mysql_host, zk_port=int(zk_port),
                               kafka_port=int(kafka_port), mysql_port=args.mysql_port, mysql_user=args.mysql_user)


# ---------------------------------------------------------------- the run's world and processes

class BenchEnv:
    """A private world named `taskring-<kind>-<run id>` and every process started in it."""

    def __init__(self, stack: StackEndpoints, kind: str, run_dir: pathlib.Path, *, logs: pathlib.Path | None = None,
                 run_id: str | None = None, slots: int = SLOTS, node_stop_timeout_s: float = 60.0,
                 shards: int = 1):
        self.stack = stack
        self.kind = kind
        self.run_dir = run_dir
        self.logs = logs or run_dir
        self.run_id = run_id or new_run_id(8)
        self.slots = slots
        self.node_stop_timeout_s = node_stop_timeout_s
        self.shards = shards
        """Task-store shards: 2 splits the store by slot over the stack's two MariaDB servers."""
        self.nodes: dict[str, NodeProcess] = {}     # node_id -> its current incarnation
        self._started: list[NodeProcess] = []        # every incarnation, in order
        self._stoppers: list[tuple[str, Callable[[], object]]] = []
        self._world: World | None = None

    @property
    def world(self) -> World:
        if self._world is None:
            raise RuntimeError("BenchEnv.world before start()")
        return self._world

    def start(self) -> BenchEnv:
        self._world = create_world(self.stack, self.kind, self.logs, self.slots, run_id=self.run_id,
                                   shards=self.shards)
        return self

    def describe(self) -> str:
        w = self.world
        return f"database {w.database}, ZooKeeper {w.zk_hosts}, topics {w.topic_prefix}.*"

    def start_node(self, node_id: str, *, single: bool = False, log_path: pathlib.Path | None = None,
                   python_args: Sequence[str] = (), **env: str) -> NodeProcess:
        """`taskring node` (`--single` if asked) in the world, with `env` added to its environment."""
        extra: dict[str, Any] = dict(env)    # Any: mypy cannot tell them from NodeProcess's own keywords
        node = NodeProcess(self.world, node_id, single=single, log_path=log_path, python_args=python_args,
                           **extra).start()
        self.nodes[node_id] = node
        self._started.append(node)
        return node

    def live(self) -> list[str]:
        """The ids of the nodes whose current incarnation is running."""
        return sorted(n for n, p in self.nodes.items() if p.alive())

    def on_stop(self, what: str, stop: Callable[[], object]) -> None:
        """Run `stop` in stop(), before the nodes are stopped (the newest registration first)."""
        self._stoppers.append((what, stop))

    def stop(self, keep_world: bool = False) -> list[str]:
        """Stop what on_stop() registered, then every node still running (SIGTERM, SIGKILL
        after node_stop_timeout_s), then drop the world unless `keep_world`."""
        problems: list[str] = []
        while self._stoppers:
            what, stop = self._stoppers.pop()
            try:
                stop()
            except Exception as exc:
                problems.append(f"stopping {what}: {type(exc).__name__}: {exc}")
        running = [n for n in self._started if n.alive()]
        if running:
            try:
                problems += stop_nodes(running, self.node_stop_timeout_s)
            except Exception as exc:
                problems.append(f"stopping nodes: {type(exc).__name__}: {exc}")
        if self._world is not None and not keep_world:
            problems += drop_world(self._world)
            self._world = None
        return problems
