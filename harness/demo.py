"""`taskring demo`: the README's main job, on the local stack.

Starts N dispatcher nodes as separate processes (a real cluster through
ZooKeeper), waits until the ring has settled, runs an executor in this process,
submits a mixed batch of tasks through the nodes and follows every task to its
end. Then it prints what happened to each task (path, state, attempts, lateness,
history), the ring, and a one-line summary, and stops the nodes.

    taskring demo [--nodes 3]

Exits 0 only if every task ended as expected, no attempt started before it was
due, and every node ran and stopped cleanly. Needs the local stack
(`bash deploy/local/stack.sh up`); uses its ZooKeeper chroot `/taskring` and its
database `taskring` (harness/stack.py). The tasks and their judgement are in
harness/demo_tasks.py.

Environment:

    TASKRING_DEMO_KEEP=1           leave the nodes running afterwards (prints how to stop them)
    TASKRING_DEMO_SINGLE=1         one `--single` node instead of a cluster (fallback)
    TASKRING_DEMO_GRPC_PORT=7071   first node's gRPC port (node k: +k-1); free ports if taken
    TASKRING_DEMO_ADMIN_PORT=7081  first node's admin port (node k: +k-1)
    TASKRING_DEMO_SETTLE_TIMEOUT=60  seconds to wait for the ring to settle
    TASKRING_DEMO_TIMEOUT=90       seconds to wait for every task to finish
    TASKRING_ZK / TASKRING_KAFKA / TASKRING_MYSQL_DATABASE
                                   as for `taskring node`; the stack's own variables
                                   (TASKRING_ZK_PORT, TASKRING_MYSQL_PORT, ...) are honoured too
Node logs: .stack/logs/demo-node-<k>.log (TASKRING_STACK_DIR overrides .stack).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import pathlib
import signal
import subprocess
import threading
import time
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.demo_tasks import NAMESPACE, Handlers, Planned, attempt_starts, plan_tasks, print_table, say, submit_all
from harness.processes import REPO, NodeProcess, NotReady, free_port, port_open
from harness.ringcheck import ring_problems, views_agree
from harness.stack import StackEndpoints, stack_problems
from harness.wait import wait_until
from harness.world import World, cluster_world

if TYPE_CHECKING:  # taskring is imported where it is used, not at import time
    from taskring import Client, Executor

ROUTE_THRESHOLD_MS = 10_000
_TERMINAL = ("succeeded", "dead_lettered", "cancelled")


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _stack_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TASKRING_STACK_DIR") or REPO / ".stack")


def demo_world(env: Mapping[str, str]) -> World:
    """The stack's own cluster world, with the node's TASKRING_ZK / _KAFKA / _MYSQL_DATABASE honoured."""
    world = cluster_world(StackEndpoints.from_env(env), _stack_dir() / "logs")
    return dataclasses.replace(world, zk_hosts=env.get("TASKRING_ZK") or world.zk_hosts,
                               kafka=env.get("TASKRING_KAFKA") or None,
                               database=env.get("TASKRING_MYSQL_DATABASE") or world.database)


def live_members(zk_hosts: str) -> list[str]:
    """Dispatcher nodes registered in the chroot right now."""
    from kazoo.client import KazooClient

    from membership.paths import NODES_ROOT

    zk = KazooClient(hosts=zk_hosts, timeout=5)
    with warnings.catch_warnings():  # a fresh ZooKeeper has no chroot yet: nothing is live
        warnings.simplefilter("ignore")
        zk.start(timeout=10)
    try:
        return sorted(zk.get_children(NODES_ROOT)) if zk.exists(NODES_ROOT) else []
    finally:
        zk.stop()
        zk.close()


def topic_problems(partitions: Mapping[str, int | None], slot_count: int) -> list[str]:
    """What keeps nodes of `slot_count` slots from using these topics ({topic: partitions, None:
    missing}): a node produces to partitions 0..slot_count-1, so a topic of fewer refuses the
    tasks of the missing slots (an older `stack.sh up` made 16; it grows them now)."""
    problems = []
    for topic, count in partitions.items():
        if count is None:
            problems.append(f"Kafka topic {topic} does not exist")
        elif count < slot_count:
            problems.append(f"Kafka topic {topic} has {count} partitions, fewer than the nodes' {slot_count} slots")
    return problems


def node_topic_problems(world: World, env: Mapping[str, str]) -> list[str]:
    """topic_problems for the topics and the slot count the demo's nodes will have."""
    from confluent_kafka.admin import AdminClient

    from dispatcher.base.config import NodeConfig

    config = NodeConfig.from_env(dict(env), node_id="demo")
    found = AdminClient({"bootstrap.servers": world.kafka_bootstrap}).list_topics(timeout=10).topics
    return topic_problems({t: len(found[t].partitions) if t in found else None for t in config.kafka.topics()},
                          config.slot_count)


# ---------------------------------------------------------------- the nodes


def plan_nodes(world: World, count: int, single: bool, token: str | None) -> tuple[list[NodeProcess], str | None]:
    """Node ids, ports and logs; fixed ports unless one is taken (then free ones)."""
    grpc_base = int(os.environ.get("TASKRING_DEMO_GRPC_PORT", "7071"))
    admin_base = int(os.environ.get("TASKRING_DEMO_ADMIN_PORT", "7081"))
    wanted = [(grpc_base + i, admin_base + i) for i in range(count)]
    taken = [p for pair in wanted for p in pair if port_open("127.0.0.1", p)]
    note = None
    if taken or len({p for pair in wanted for p in pair}) != 2 * count:
        note = f"ports {', '.join(map(str, taken))} are taken: using free ports instead"
        wanted = [(free_port(), free_port()) for _ in range(count)]
    # A session of its own for each node: a Ctrl-C in the terminal reaches the demo, which
    # stops the nodes in order; with TASKRING_DEMO_KEEP=1 they outlive it.
    return [NodeProcess(world, f"demo-node-{i + 1}", single=single, grpc_port=g, admin_port=a, admin_token=token,
                        new_session=True, append=False, TASKRING_ROUTE_THRESHOLD_MS=str(ROUTE_THRESHOLD_MS),
                        PYTHONUNBUFFERED="1")
            for i, (g, a) in enumerate(wanted)], note


def wait_ready(nodes: list[NodeProcess], timeout_s: float) -> str | None:
    """None when every node answers /readyz 200; else what went wrong."""
    deadline = time.monotonic() + timeout_s
    for node in nodes:
        try:
            node.wait_ready(max(0.1, deadline - time.monotonic()))
        except NotReady as exc:
            return str(exc).splitlines()[0]
    return None


class _NodeExited(AssertionError):
    pass


def wait_settled(nodes: list[NodeProcess], timeout_s: float) -> tuple[bool, dict[str, dict[str, Any] | str]]:
    """Every node sees all members, and every slot's actual owner is its desired owner,
    with the same desired map on every node. Returns (settled, last view per node)."""
    expected = {n.node_id for n in nodes}
    views: dict[str, dict[str, Any] | str] = {}
    problems: list[str] = []

    def settled() -> bool:
        problems.clear()
        for node in nodes:
            if not node.alive():
                views[node.node_id] = f"process exited with code {node.started.returncode}"
                problems.append(f"{node.node_id} exited")
                continue
            try:
                ring = node.get("/ring", timeout_s=5.0)
            except (OSError, ValueError) as exc:
                views[node.node_id] = f"{type(exc).__name__}: {exc}"
                problems.append(f"{node.node_id}: /ring failed")
                continue
            views[node.node_id] = ring
            problems.extend(f"{node.node_id}: {p}" for p in ring_problems(ring, expected))
        if any(not n.alive() for n in nodes):
            raise _NodeExited("a node exited")
        if problems:
            return False
        if not views_agree(v for v in views.values() if isinstance(v, dict)):
            problems.append("nodes disagree on the desired owners")
            return False
        return True
    try:
        wait_until(settled, timeout_s, "the ring to settle", 0.25)
    except AssertionError:
        for p in problems:
            say(f"demo:   {p}")
        return False, views
    return True, views


def stop_nodes(nodes: list[NodeProcess], timeout_s: float = 30.0) -> list[str]:
    """SIGTERM every node, wait for each with a deadline, SIGKILL as a last resort.
    Returns the problems (a node that had to be killed or exited non-zero)."""
    problems = []
    t0 = time.monotonic()
    running = [n for n in nodes if n.alive()]
    for n in nodes:
        if n.proc is not None and not n.alive():
            problems.append(f"{n.node_id} had already exited with code {n.proc.returncode}; log: {n.log_path}")
    for n in running:
        n.signal(signal.SIGTERM)
    deadline = t0 + timeout_s
    codes = []
    for n in running:
        try:
            code = n.started.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            problems.append(f"{n.node_id} (pid {n.pid}) did not exit within {timeout_s:.0f}s of SIGTERM: "
                            f"SIGKILL; log: {n.log_path}")
            n.kill()
            code = n.started.returncode
        else:
            if code != 0:
                problems.append(f"{n.node_id} exited with code {code} after SIGTERM; log: {n.log_path}")
        codes.append(code)
    if running:
        say(f"demo: stopped {len(running)} node{'s' if len(running) > 1 else ''} with SIGTERM in "
            f"{time.monotonic() - t0:.1f}s (exit codes {', '.join(map(str, codes))})")
    return problems


# ---------------------------------------------------------------- following the tasks


def wait_terminal(planned: list[Planned], client: Client, nodes: list[NodeProcess], timeout_s: float) -> bool:
    t0 = time.monotonic()
    shown_line, shown_at = "", 0.0
    order = ["succeeded", "dead_lettered", "cancelled", "queued", "retry_wait", "dispatched", "running",
             "accepted", "failed"]

    def done() -> bool:
        nonlocal shown_line, shown_at
        for p in planned:
            if p.info is None or not p.info.state.is_terminal:
                p.info = client.get(p.task_id)
        counts = Counter(p.info.state.value for p in planned)
        line = ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
        now = time.monotonic()
        finished = all(p.info.state.is_terminal for p in planned)
        if finished or line != shown_line or now - shown_at >= 5:
            say(f"demo: +{now - t0:5.1f}s  {line}")
            shown_line, shown_at = line, now
        dead = [n.node_id for n in nodes if not n.alive()]
        if dead and not finished:
            say(f"demo: node process(es) exited during the run: {', '.join(dead)}")
        return finished
    try:
        wait_until(done, timeout_s, "every task to finish", 0.5)
    except AssertionError:
        say(f"demo: not every task finished within {timeout_s:.0f}s")
        return False
    return True


def _quiet_libraries() -> None:
    """The demo's own output is the show; library INFO chatter goes unless asked for."""
    if "TASKRING_LOG_LEVEL" not in os.environ:
        for name in ("kazoo", "taskring", "membership"):
            logging.getLogger(name).setLevel(logging.WARNING)
        # The poison task's traceback is expected; it is shown in the table instead.
        logging.getLogger("taskring.executor").setLevel(logging.ERROR)


# ---------------------------------------------------------------- main


class Demo:
    def __init__(self, nodes: int, single: bool, keep: bool):
        self.single = single
        self.keep = keep
        self.token = os.environ.get("TASKRING_ADMIN_TOKEN") or None
        self.settle_timeout = float(os.environ.get("TASKRING_DEMO_SETTLE_TIMEOUT", "60"))
        self.task_timeout = float(os.environ.get("TASKRING_DEMO_TIMEOUT", "90"))
        self.world = demo_world(os.environ)
        self.run_tag = dt.datetime.now(dt.UTC).strftime("%H%M%S")
        self.node_count = nodes
        self.plan: list[NodeProcess] = []
        self.executor: Executor | None = None
        self.clients: dict[int, Client] = {}
        self.pids_file = _stack_dir() / "demo-nodes.pids"

    # -- before anything starts

    def preflight(self) -> bool:
        problems = stack_problems(self.world.stack)
        if problems:
            for p in problems:
                say(f"demo: {p}")
            say("demo: the local stack is not up: bash deploy/local/stack.sh up")
            return False
        try:
            problems = node_topic_problems(self.world, os.environ)
        except Exception as exc:
            say(f"demo: cannot read the Kafka topics at {self.world.kafka_bootstrap}: {type(exc).__name__}: {exc}")
            return False
        if problems:
            for p in problems:
                say(f"demo: {p}")
            say("demo: bash deploy/local/stack.sh up creates the topics, or grows them to TASKRING_PARTITIONS")
            return False
        try:
            others = live_members(self.world.zk_hosts)
        except Exception as exc:
            say(f"demo: cannot read the live nodes in ZooKeeper {self.world.zk_hosts}: {type(exc).__name__}: {exc}")
            return False
        if others:
            say(f"demo: dispatcher nodes are already live in {self.world.zk_hosts}: {', '.join(others)}")
            if self.pids_file.exists():
                say(f"demo: a kept demo cluster? stop it: kill -TERM $(cat {self.pids_file})")
            say("demo: the demo runs its own cluster and needs the ring to itself; stop those nodes first")
            return False
        return True

    # -- the run; returns the exit code

    def run(self) -> int:
        plan, note = plan_nodes(self.world, self.node_count, self.single, self.token)
        self.plan = plan
        mode = "one --single node" if self.single else f"a {len(plan)}-node cluster"
        say(f"demo: starting {mode}; route threshold {ROUTE_THRESHOLD_MS} ms (due later: MySQL path,"
            f" sooner: Kafka path)")
        say(f"demo: ZooKeeper {self.world.zk_hosts}, Kafka {self.world.kafka_bootstrap},"
            f" MariaDB {self.world.stack.mysql_address} database {self.world.database}")
        if note:
            say(f"demo: {note}")
        t_start = time.monotonic()
        for n in plan:
            n.start()
            say(f"demo:   {n.node_id}  pid {n.pid:<7} grpc {n.target}  admin {n.admin}/  log {n.log_path}")
        self.pids_file.write_text(" ".join(str(n.pid) for n in plan) + "\n")

        why = wait_ready(plan, timeout_s=60)
        if why:
            say(f"demo: FAILED: {why}")
            self._dump_logs(30)
            return 1
        say(f"demo: all nodes ready after {time.monotonic() - t_start:.1f}s; waiting for the ring to settle")

        t_settle = time.monotonic()
        settled, views = wait_settled(plan, self.settle_timeout)
        if not settled:
            from taskring_cli.ring import format_ring
            say(f"demo: FAILED: the ring did not settle within {self.settle_timeout:g}s")
            for node_id, view in views.items():
                say(f"--- /ring of {node_id}")
                say(format_ring(view) if isinstance(view, dict) else str(view))
            self._dump_logs(40)
            if not self.single:
                say("demo: to run on one node instead: TASKRING_DEMO_SINGLE=1 .venv/bin/taskring demo")
            return 1
        first_view = next(iter(views.values()))
        assert isinstance(first_view, dict), "a settled ring has a /ring view from every node"
        owners = Counter(s["actual_owner"] for s in first_view["slots"])
        say(f"demo: ring settled in {time.monotonic() - t_settle:.1f}s: "
            + ", ".join(f"{k} owns {v} slot{'s' if v != 1 else ''}" for k, v in sorted(owners.items())))

        from taskring import Client, Executor

        handlers = Handlers()
        self.executor = Executor(NAMESPACE, zk_hosts=self.world.zk_hosts, host="127.0.0.1", port=0,
                                 instance_id=f"demo-executor-{os.getpid()}")
        handlers.register(self.executor)
        self.executor.start()
        say(f"demo: executor for namespace {NAMESPACE!r} ({', '.join(self.executor.task_types)}) at "
            f"{self.executor.address}, registered in ZooKeeper")
        time.sleep(0.5)  # let the nodes' watches see the executor before the first task is due

        self.clients = {i: Client(n.target) for i, n in enumerate(plan, 1)}
        planned = plan_tasks(len(plan), self.run_tag)
        t_submit = time.monotonic()
        submit_all(planned, self.clients)
        via = Counter(p.via for p in planned)
        say(f"demo: submitted {len(planned)} tasks in {1000 * (time.monotonic() - t_submit):.0f} ms ("
            + ", ".join(f"{v} via {plan[k - 1].node_id}" for k, v in sorted(via.items()))
            + f"); cancelled {sum(p.cancel for p in planned)} of them before they were due")

        failures: list[str] = []
        finished = wait_terminal(planned, self.clients[1], plan, self.task_timeout)
        say()
        problems, notes = print_table(planned, handlers)
        failures += problems
        if not finished:
            failures.append("not every task reached a terminal state")

        say()
        from taskring_cli.ring import fetch_ring, format_ring
        try:
            say(format_ring(fetch_ring(plan[0].admin, self.token), busy_only=True))
        except (OSError, ValueError) as exc:
            failures.append(f"/ring of {plan[0].node_id} failed: {exc}")
        dead = [n.node_id for n in plan if not n.alive()]
        if dead:
            failures.append(f"node process(es) exited during the run: {', '.join(dead)}")

        say()
        for text in notes:
            say(f"demo: note: {text}")
        for f in failures:
            say(f"demo: PROBLEM: {f}")
        counts = Counter(p.info.state.value for p in planned)
        parts = [f"{counts[s]} {s.replace('_', '-')}" for s in _TERMINAL if counts[s]]
        parts += [f"{v} still {k}" for k, v in counts.items() if k not in _TERMINAL]
        late = [started - due for p in planned for _a, due, started in attempt_starts(p)]
        late_text = f"; start lateness max {max(late)} ms" if late else ""
        say(f"demo: {len(planned)} tasks on {len(plan)} node{'s' if len(plan) > 1 else ''}: {', '.join(parts)}"
            f"{late_text}; {'all as expected' if not failures else 'NOT as expected'}")
        return 1 if failures else 0

    def _dump_logs(self, lines: int) -> None:
        for n in self.plan:
            if n.proc is not None:
                say(f"--- last lines of {n.log_path}")
                say(n.log_tail(lines))

    # -- afterwards, whatever happened; returns an exit code for what went wrong here

    def cleanup(self, rc: int) -> int:
        for c in self.clients.values():
            c.close()
        if self.executor is not None:
            self.executor.stop(grace_s=5)
        if self.keep and rc == 0 and self.plan and all(n.alive() for n in self.plan):
            pids = " ".join(str(n.pid) for n in self.plan)
            admin = self.plan[0].admin
            say("demo: TASKRING_DEMO_KEEP=1: the nodes keep running (the executor stopped with this process)")
            say(f"demo:   ring:  .venv/bin/taskring ring --admin {admin}"
                + ("" if self.token else f"   (or open {admin}/ in a browser)"))
            say(f"demo:   logs:  {self.plan[0].log_path.parent}/demo-node-*.log")
            say(f"demo:   stop:  kill -TERM {pids}   (the PIDs are also in {self.pids_file})")
            return 0
        problems = stop_nodes(self.plan)
        for p in problems:
            say(f"demo: PROBLEM: {p}")
        self.pids_file.unlink(missing_ok=True)
        return 1 if problems else 0


def run_demo(nodes: int = 3) -> int:
    single = _env_flag("TASKRING_DEMO_SINGLE")
    if single:
        nodes = 1
    if nodes < 1:
        say("demo: --nodes must be at least 1")
        return 2
    _quiet_libraries()
    if threading.current_thread() is threading.main_thread():
        # `kill`/`timeout` send SIGTERM: unwind through the cleanup below, which
        # stops the nodes (they run in sessions of their own and would outlive us).
        def on_sigterm(signum, frame):
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, on_sigterm)
    demo = Demo(nodes, single=single, keep=_env_flag("TASKRING_DEMO_KEEP"))
    if not demo.preflight():
        return 1
    rc = 1
    try:
        rc = demo.run()
    except KeyboardInterrupt:
        say("demo: interrupted")
        rc = 130
    except Exception as exc:
        say(f"demo: FAILED: {type(exc).__name__}: {exc}")
        demo._dump_logs(20)
        rc = 1
    finally:
        cleanup_rc = demo.cleanup(rc)
    if rc == 0 and cleanup_rc != 0:
        say("demo: the nodes did not all stop cleanly: NOT as expected")
    return rc or cleanup_rc
