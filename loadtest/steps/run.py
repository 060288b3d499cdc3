"""The step-load scenario: the world, the nodes, the executors and the warm-up, the Locust steps, the drain,
then the records, the store and the samples gathered into the result.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import functools
import math
import os
import pathlib
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

from harness.demo import stop_nodes, wait_ready, wait_settled
from harness.processes import NodeProcess
from harness.stack import StackEndpoints
from harness.stats import summarize_ms
from harness.world import World, create_world, drop_world
from loadtest.bench.env import NAMESPACE, SLOTS, spread_task_types
from loadtest.bench.executors import Executors, starts_by_task
from loadtest.bench.load import warm_up
from loadtest.bench.observe import stack_pids
from loadtest.bench.store import wait_done
from loadtest.raw_parts import machine_facts
from loadtest.steps.analysis import pickups, step_windows, timeline, window_figures
from loadtest.steps.locust_processes import LocustProcesses, locust_command, locust_summary, start_locust, stop_locust
from loadtest.steps.plan import Plan
from loadtest.steps.records import Records, StoredTask, read_records, store_completions, store_tasks
from loadtest.steps.sampling import Sample, Sampler, follow_locust, say

# ---------------------------------------------------------------- nodes, executors, warm-up

def start_nodes(world: World, count: int, run_dir: pathlib.Path, route_threshold_ms: int,
                log_level: str) -> list[NodeProcess]:
    """One `--single` node, or `count` cluster nodes, each in a session of its own: a
    Ctrl-C in the terminal reaches only this process, which stops them in order."""
    single = count == 1
    nodes = [NodeProcess(world, f"steps-{'single' if single else f'n{i + 1}'}", single=single,
                         log_path=run_dir / f"node-{i + 1}.log", new_session=True,
                         TASKRING_ROUTE_THRESHOLD_MS=str(route_threshold_ms), TASKRING_LOG_LEVEL=log_level)
             for i in range(count)]
    for node in nodes:
        node.start()
    problem = wait_ready(nodes, 60.0)
    if problem:
        raise RuntimeError(f"a node did not get ready: {problem}")
    if not single:
        settled, views = wait_settled(nodes, 60.0)
        if not settled:
            raise RuntimeError(f"the ring did not settle: {views}")
    return nodes


# ---------------------------------------------------------------- the run

@dataclasses.dataclass
class Running:
    """What is up, so that the cleanup stops exactly that."""
    world: World | None = None
    nodes: list[NodeProcess] = dataclasses.field(default_factory=list)
    executors: Executors | None = None
    locust: LocustProcesses | None = None
    sampler: Sampler | None = None

    def cleanup(self) -> list[str]:
        """Stop everything (Locust, sampler, executors, nodes) by PID, then drop the world.
        Never raises: each part is stopped even when another one fails."""
        problems: list[str] = []

        def attempt(what: str, stop: Callable[[], object]) -> None:
            try:
                stop()
            except Exception as exc:
                problems.append(f"stopping {what}: {type(exc).__name__}: {exc}")
        if self.locust is not None:
            attempt("locust", functools.partial(stop_locust, self.locust))
        if self.sampler is not None:
            attempt("sampler", self.sampler.stop)
        if self.executors is not None:
            attempt("executors", functools.partial(self.executors.stop, timeout_s=5))
        if self.nodes:
            attempt("nodes", lambda: problems.extend(stop_nodes(self.nodes, 30.0)))
        self.locust, self.sampler, self.executors, self.nodes = None, None, None, []
        if self.world is not None:
            problems += drop_world(self.world)
            self.world = None
        return problems


def process_groups(running: Running) -> dict[str, list[int]]:
    groups = {"taskring nodes": [n.pid for n in running.nodes],
              "executors": [p for p in (running.executors.pids if running.executors else []) if p is not None],
              "locust": [p.pid for p in running.locust.all] if running.locust else [],
              "this process": [os.getpid()]}
    groups.update({name: [pid] for name, pid in stack_pids().items()})
    return groups


def run(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="locust_steps_"))
    task_types = spread_task_types()
    stack = StackEndpoints.from_env()
    result: dict[str, Any] = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                              "run_dir": str(run_dir), "params": params_of(args, plan, len(task_types)),
                              "machine": machine_facts(stack.host, stack.mysql_port, stack.mysql_user)}
    running = Running()
    try:
        running.world = world = create_world(stack, "locust-steps", run_dir, SLOTS, run_id=uuid.uuid4().hex[:8])
        say(f"world: database {world.database}, ZooKeeper {world.zk_hosts}, topics {world.topic_prefix}.*;"
            f" logs in {run_dir}")
        running.nodes = start_nodes(world, args.nodes, run_dir, args.route_threshold_ms, args.node_log_level)
        result["nodes"] = [{"node_id": n.node_id, "pid": n.pid, "target": n.target} for n in running.nodes]
        running.executors = Executors(world, task_types, args.executors, args.max_in_flight)
        running.executors.start()
        say(f"nodes {[n.target for n in running.nodes]} ready; executors {running.executors.pids}; warm-up ...")
        warm_up(world, running.nodes[0].target, running.executors, task_types)
        warm_executed = running.executors.executed()

        say(f"locust: {args.locust_workers} workers, steps {[s.users for s in plan.steps]} users x "
            f"{plan.user_rate:.3g} calls/s x {plan.batch} tasks = {[round(s.target_per_s) for s in plan.steps]}"
            f" tasks/s, {plan.step_s:g} s each ...")
        running.locust = lp = start_locust(plan, [n.target for n in running.nodes], task_types, args.locust_workers,
                                           args.delay_ms, run_dir)
        running.sampler = sampler = Sampler(running.nodes, process_groups(running))
        sampler.start()
        follow_locust(lp, sampler, plan.load_s + 90)
        stop_locust(lp)
        result["locust"] = locust_summary(lp)
        rec = read_records(lp.record_dir)
        if rec.shape_start is None:
            raise RuntimeError(f"Locust never started its shape; log:\n{lp.master.log_tail()}")
        t0 = rec.shape_start
        acked = sum(c.accepted for c in rec.calls)
        say(f"load done: {acked:,} tasks acked in {len(rec.calls):,} calls; draining (at most {args.drain_s:g} s) ...")
        drain = wait_done(world, running.executors, warm_executed + acked, t0, acked, args.drain_s, "drain")
        sampler.stop()
        starts = starts_by_task(running.executors.stop())
        running.executors = None
        completions, tasks = store_completions(world, t0), store_tasks(world, t0)
    finally:
        problems = running.cleanup()
        result["cleanup_problems"] = problems
        if problems:
            say("cleanup problems: " + "; ".join(problems))
    result.update(analyse(plan, t0, rec, completions, tasks, starts, sampler.samples, drain))
    result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return result


def analyse(plan: Plan, t0: float, rec: Records, completions: dict[int, int], tasks: dict[str, StoredTask],
            starts: dict[str, list[float]], samples: list[Sample], drain: dict[str, Any]) -> dict[str, Any]:
    picks, checks = pickups(tasks, starts)
    last = max([t0 + plan.load_s] + [p.start_ts for p in picks] + [t0 + s + 1 for s in completions])
    length_s = math.ceil(last - t0)
    windows = step_windows(plan, rec, t0, length_s)
    by_status = collections.Counter(t.status for t in tasks.values())
    return {
        "t0": t0,
        "steps": [window_figures(w, t0, rec, completions, picks, samples) for w in windows],
        "totals": {"acked": sum(c.accepted for c in rec.calls), "calls": len(rec.calls),
                   "failures": sum(1 for c in rec.calls if c.error), "user_errors": len(rec.user_errors),
                   "stored": len(tasks), "by_status": dict(by_status), "drain_complete": drain["complete"],
                   "drain_waited_s": round(drain["waited_s"], 2),
                   "pickup_ms": summarize_ms([p.ms for p in picks]), **checks},
        "timeline": timeline(t0, length_s, windows, rec, completions, picks, samples),
    }


def params_of(args: argparse.Namespace, plan: Plan, task_types: int) -> dict[str, Any]:
    return {"peak_per_s": plan.peak_per_s, "step_s": plan.step_s, "steps": [dataclasses.asdict(s) for s in plan.steps],
            "batch": plan.batch, "user_rate_calls_per_s": plan.user_rate, "max_user_rate": args.max_user_rate,
            "nodes": args.nodes, "mode": "single" if args.nodes == 1 else "cluster", "executors": args.executors,
            "executor_max_in_flight": args.max_in_flight, "locust_workers": args.locust_workers,
            "delay_ms": args.delay_ms, "route_threshold_ms": args.route_threshold_ms, "drain_s": args.drain_s,
            "task_types": task_types, "slots": SLOTS, "namespace": NAMESPACE,
            "locust_command": locust_command(plan, args.locust_workers)}
