"""One node, end to end: the run (`NodeBench`) and the figures of this scenario.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import datetime as dt
import functools
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from harness.cgroup import CpuCap
from harness.demo import stop_nodes, wait_settled
from harness.processes import NodeProcess
from harness.stats import execution_rate_windows, latency_figures, rate, ratio, summarize_ms
from harness.world import World
from loadtest.bench.console import ConsoleRefresher
from loadtest.bench.env import (
    NAMESPACE,
    SLOTS,
    BenchEnv,
    spread_task_types,
    stack_from_args,
)
from loadtest.bench.executors import Executors, starts_by_task
from loadtest.bench.load import (
    Accepted,
    make_specs,
    run_locust,
    submit_batches,
    submit_spread,
    warm_up,
)
from loadtest.bench.observe import (
    CpuMeter,
    machine_facts,
    mysql_counters,
    mysql_per_task,
    stack_pids,
    thread_cpu,
)
from loadtest.bench.profile import profile_figures, pyspy_for
from loadtest.bench.store import dispatched_at, recorded_paths, store_facts, wait_done
from loadtest.raw_parts import make_envelopes, measure_raw_parts

REPO = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the phases

class NodeBench:
    """One run: the world, the node(s) and executors, then warm-up, A, B, the gathering,
    the profile, and (the node stopped) the raw parts."""

    def __init__(self, args: argparse.Namespace, node_env: dict[str, str]):
        self.args = args
        self.node_env = node_env
        self.run_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench_node_"))
        self.stack = stack_from_args(args, "bench_node")
        self.task_types = spread_task_types()
        self.env = BenchEnv(self.stack, "bench-node", self.run_dir, shards=args.shards)
        self.nodes: list[NodeProcess] = []       # the first is "the node"; with --nodes N the others follow
        self.caps: list[CpuCap] = []             # with --node-cpu-cap: one per node, in the nodes' order
        self.cprofile = self.run_dir / "node.cprofile" if args.profile == "cprofile" else None
        # --executor-tls: the node dials its executors over mutual TLS (certs.sh's CA, server and
        # client certificates), to measure what that leg's encryption costs per task.
        self.certs = self.run_dir / "certs" if args.executor_tls else None
        if self.certs is not None:
            subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(self.certs)], check=True,
                           capture_output=True)
            self.node_env = {**node_env, "TASKRING_EXECUTOR_CA_FILE": str(self.certs / "ca.pem"),
                             "TASKRING_EXECUTOR_CLIENT_CERT_FILE": str(self.certs / "client.pem"),
                             "TASKRING_EXECUTOR_CLIENT_KEY_FILE": str(self.certs / "client.key")}
        self.result: dict[str, Any] = {
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "run_dir": str(self.run_dir),
            "params": self.params(), "machine": machine_facts(self.stack)}
        self.result["machine"]["loadavg_start"] = [round(x, 2) for x in os.getloadavg()]

    def params(self) -> dict[str, Any]:
        a = self.args
        return {"n": a.n, "nodes": a.nodes, "shards": a.shards, "unique_keys": a.unique_keys,
                "node_env": dict(self.node_env), "node_cpu_cap": a.node_cpu_cap,
                "batch": a.batch, "submitters": a.submitters, "executors": a.executors,
                "executor_max_in_flight": a.max_in_flight, "route_threshold_ms": a.route_threshold_ms,
                "timing_kafka": a.timing_kafka, "timing_mysql": a.timing_mysql,
                "timing_immediate": a.timing_immediate, "timing_batch": a.timing_batch,
                "kafka_delay_s": a.kafka_delay, "mysql_delay_s": a.mysql_delay, "timing_spread_s": a.timing_spread_s,
                "profile": a.profile, "profile_rate_hz": a.profile_rate, "raw_n": a.raw_n or a.n,
                "task_types": len(self.task_types), "slots": SLOTS, "node_log_level": a.node_log_level,
                "console_refresh_s": a.console_refresh_s, "executor_tls": a.executor_tls}

    @property
    def node(self) -> NodeProcess:
        return self.nodes[0]

    def run(self) -> dict[str, Any]:
        args, result = self.args, self.result
        self.env.start()
        print(f"world: {self.env.describe()}; logs in {self.run_dir}", file=sys.stderr)
        try:
            self.start_nodes()
            executors = Executors(self.env.world, self.task_types, args.executors, args.max_in_flight,
                                  tls_dir=self.certs)
            self.env.on_stop("executors", functools.partial(executors.stop, timeout_s=10))
            executors.start()
            print(f"node {self.node.target} (pid {self.node.pid}) ready; executors {executors.pids}", file=sys.stderr)
            if args.serve:
                self.serve()
                return result
            if args.console_refresh_s:
                # An SRE with the console open for the whole run (loadtest/bench/console.py).
                console = ConsoleRefresher(self.node.admin, args.console_refresh_s).start()
                self.env.on_stop("console refresher", console.stop)   # if a phase fails
            expected = self.warm_up(executors)
            a, threads = self.phase_a(executors, expected)
            expected += len(a["accepted"])
            b = self.phase_b(executors, expected)
            expected += len(b["accepted"])
            single = self.phase_single(executors, expected)
            if args.console_refresh_s:
                result["console"] = console.stop()
            # The store's view of phases A and B (before Locust adds its own tasks).
            facts = store_facts(self.env.world)
            envelope = facts.pop("sample_envelope")
            result["store"] = facts
            result["message_bytes"] = {"task_envelope": facts["task_envelope_bytes"],
                                       "queued_task": queued_task_size(envelope)}
            result["node_metrics_excerpt"] = [ln for ln in node_metrics(self.node).splitlines()
                                              if ln.startswith("taskring_") and "_bucket" not in ln][:60]
            if args.locust_s:
                print(f"locust: {args.locust_s} s, {args.locust_users} users ...", file=sys.stderr)
                result["locust"] = run_locust(self.node.target, self.task_types, args.locust_s, args.locust_users,
                                              self.run_dir)
            starts = starts_by_task(executors.stop())
            self.gather(a, b, starts)
            self.result["phase_s"]["pickup"] = latency_figures(single, starts)
            # Node stop (a clean handoff; writes the cProfile file if any).
            stop_nodes(self.nodes[1:])
            self.node.stop(60.0)
            result["node"].update({"stop_s": round(self.node.stop_s or 0, 2), "returncode": self.node.returncode})
            if args.profile != "none":
                result["profile"] = profile_figures(args.profile, self.run_dir, *threads, self.cprofile)
        finally:
            problems = self.env.stop()
            if self.nodes:
                result.setdefault("node", {}).setdefault("log_tail", self.node.log_tail(15).splitlines())
            if problems:
                result["cleanup_problems"] = problems
                print("cleanup problems: " + "; ".join(problems), file=sys.stderr)
        if not args.no_raw:
            self.raw_parts()
        result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return result

    def start_nodes(self) -> None:
        """One `--single` node, or --nodes cluster nodes (the ring settled), each capped if asked."""
        args = self.args
        env = {"TASKRING_ROUTE_THRESHOLD_MS": str(args.route_threshold_ms), "TASKRING_LOG_LEVEL": args.node_log_level,
               **self.node_env}
        single = args.nodes == 1
        for i in range(args.nodes):
            suffix = "" if single else f"-{i}"
            cprofile = ["-m", "cProfile", "-o", str(self.cprofile)] if self.cprofile and i == 0 else []
            self.nodes.append(self.env.start_node(f"bench-node-{self.env.run_id}{suffix}", single=single,
                                                  log_path=self.run_dir / f"node{suffix}.log", python_args=cprofile,
                                                  **env))
        if args.node_cpu_cap:
            # Each node process in a cgroup of its own, all of the same size: machines of
            # equal size, simulated (harness/cgroup.py).
            for i, n in enumerate(self.nodes):
                cap = CpuCap(f"taskring-bench-{self.env.world.database}-{i}", args.node_cpu_cap)
                self.env.on_stop(f"cgroup {cap.path}", cap.stop)
                self.caps.append(cap.start())
                cap.add(n.pid)
        t_ready = time.perf_counter()
        for n in self.nodes:
            n.wait_ready(60.0)
        if len(self.nodes) > 1:
            settled, views = wait_settled(self.nodes, 60.0)
            if not settled:
                raise RuntimeError(f"the ring of {args.nodes} nodes did not settle: {views}")
        self.result["node"] = {"command": " ".join(self.node.args[1:]),
                               "ready_s": round(time.perf_counter() - t_ready, 2), "pid": self.node.pid,
                               "target": self.node.target, "nodes": args.nodes,
                               "other_pids": [n.pid for n in self.nodes[1:]]}

    def serve(self) -> None:
        print(f"\nserving for {self.args.serve} s (Ctrl-C to stop). For Locust:\n"
              f"  TASKRING_TARGET={self.node.target} TASKRING_NAMESPACE={NAMESPACE} "
              f"TASKRING_TASK_TYPES={','.join(self.task_types)} \\\n"
              f"  .venv/bin/locust -f loadtest/locustfile.py --headless -u 4 -r 4 -t 30s", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(self.args.serve)

    def warm_up(self, executors: Executors) -> int:
        """The shared warm-up (bench/load.py). Returns the executions expected so far."""
        print("warm-up ...", file=sys.stderr)
        self.result["warmup"] = warm_up(self.env.world, self.node.target, executors, self.task_types)
        return self.result["warmup"]["tasks"]

    def phase_a(self, executors: Executors, expected: int) -> tuple[dict[str, Any], tuple[dict, dict]]:
        """Throughput: N immediate tasks, as fast as the submitters go, the node profiled.
        Returns the load's record and the node's threads' CPU before and after."""
        args, world, node = self.args, self.env.world, self.node
        print(f"phase A: {args.n:,} immediate tasks, SubmitBatch x {args.batch}, {args.submitters} submitters ...",
              file=sys.stderr)
        keys = f"bench-{self.env.run_id}" if args.unique_keys else None
        batches = [make_specs(min(args.batch, args.n - i), self.task_types, seq0=10_000 + i, unique_keys=keys)
                   for i in range(0, args.n, args.batch)]
        pids: dict[str, int | None] = {"node": node.pid}
        pids.update({f"node {i}": n.pid for i, n in enumerate(self.nodes[1:], 1)})
        pids["load generator (this process)"] = os.getpid()
        pids.update({f"executor {i}": pid for i, pid in enumerate(executors.pids)})
        pids.update(stack_pids())
        spy = pyspy_for(args.profile, node.pid, self.run_dir, args.profile_rate)
        if spy is not None:
            self.env.on_stop("py-spy", spy.stop)
            spy.start()
            pids["py-spy"] = spy.process_pid
        meter = CpuMeter(pids)
        threads_before = thread_cpu(node.pid)
        rows_before = mysql_counters(world)
        meter.start()
        a = asyncio.run(submit_batches([n.target for n in self.nodes], batches, args.submitters))
        n_acc = len(a["accepted"])
        done = wait_done(world, executors, expected + n_acc, a["t_first_send"], n_acc, 30 + args.n / 500, "phase A")
        cpu = meter.stop()
        if self.caps:
            cpu["node_cpu_cap"] = {"cores_per_node": args.node_cpu_cap,
                                   "throttled_periods": [cap.stat()["nr_throttled"] for cap in self.caps]}
        rows_after = mysql_counters(world)
        threads_after = thread_cpu(node.pid)
        if spy is not None:
            spy.stop()
        submit_s = a["t_last_ack"] - a["t_first_send"]
        last = done["last_completion_ts"] or time.time()
        e2e_s = last - a["t_first_send"]
        self.result["phase_a"] = {
            "submitted": args.n, "accepted": n_acc, "batch_errors": a["errors"][:10],
            "batch_error_count": len(a["errors"]),
            "submit_s": submit_s, "accepted_per_s": rate(n_acc, submit_s), "submit_batch_rpc_ms": a["rpc_ms"],
            "complete": done["complete"], "succeeded": done["succeeded"],
            "end_to_end_s": e2e_s, "completed_per_s": rate(done["succeeded"], e2e_s),
            "drain_after_last_ack_s": last - a["t_last_ack"], "cpu": cpu,
            "mysql_row_writes": mysql_per_task(rows_before, rows_after, n_acc),
        }
        if not done["complete"]:
            self.result["phase_a"]["by_status_at_deadline"] = done.get("by_status")
        return a, (threads_before, threads_after)

    def phase_b(self, executors: Executors, expected: int) -> dict[str, Any]:
        """Timing: delayed tasks on both paths and a few immediate ones, at a moderate rate."""
        args = self.args
        kafka_ms = [int(x * 1000) for x in args.kafka_delay]
        mysql_ms = [int(x * 1000) for x in args.mysql_delay]
        plan = ([("kafka", random.randint(*kafka_ms)) for _ in range(args.timing_kafka)]
                + [("mysql", random.randint(*mysql_ms)) for _ in range(args.timing_mysql)]
                + [("immediate", 0) for _ in range(args.timing_immediate)])
        random.shuffle(plan)
        print(f"phase B: {len(plan):,} tasks ({args.timing_kafka:,} delayed {args.kafka_delay[0]:g}-"
              f"{args.kafka_delay[1]:g} s, {args.timing_mysql:,} delayed {args.mysql_delay[0]:g}-"
              f"{args.mysql_delay[1]:g} s, {args.timing_immediate:,} immediate) over {args.timing_spread_s:g} s ...",
              file=sys.stderr)
        b = asyncio.run(submit_spread(self.node.target, plan, self.task_types, args.timing_batch,
                                      args.timing_spread_s, seq0=10_000_000))
        n_acc = len(b["accepted"])
        last_due = max((x.due_ts for x in b["accepted"]), default=time.time())
        done = wait_done(self.env.world, executors, expected + n_acc, b["t_first_send"], n_acc,
                         max(0.0, last_due - time.time()) + 30, "phase B")
        submit_s = b["t_last_ack"] - b["t_first_send"]
        self.result["phase_b"] = {"planned": len(plan), "accepted": n_acc, "batch_errors": b["errors"][:10],
                                  "submit_s": submit_s, "submit_rate_per_s": n_acc / max(1e-6, submit_s),
                                  "complete": done["complete"], "succeeded": done["succeeded"]}
        if not done["complete"]:
            self.result["phase_b"]["by_status_at_deadline"] = done.get("by_status")
        return b

    def phase_single(self, executors: Executors, expected: int) -> list[Accepted]:
        """One caller, one Submit of one immediate task in flight at a time: what a service
        that submits inside its request handler waits, and how fast one such caller goes."""
        from taskring import Client
        n = self.args.single
        print(f"phase S: {n:,} single Submits, one in flight ...", file=sys.stderr)
        accepted: list[Accepted] = []
        call_ms: list[float] = []
        with Client(self.node.target) as client:
            t_first = time.time()
            for i in range(n):
                t0 = time.perf_counter()
                sent = time.time()
                r = client.submit(NAMESPACE, self.task_types[i % len(self.task_types)], {"seq": 20_000_000 + i})
                call_ms.append((time.perf_counter() - t0) * 1000)
                # Pickup is measured from the send here (due_ts), as "handler start - client send".
                accepted.append(Accepted(r.task_id, sent, time.time(), "immediate", 0))
            seconds = time.time() - t_first
        done = wait_done(self.env.world, executors, expected + n, t_first, n, 30, "phase S")
        self.result["phase_s"] = {"n": n, "call_ms": summarize_ms(call_ms), "calls_per_s": n / max(1e-6, seconds),
                                  "complete": done["complete"]}
        return accepted

    def gather(self, a: dict[str, Any], b: dict[str, Any], starts: dict[str, list[float]]) -> None:
        """Phase A's pickup and execution rate, phase B's lateness per recorded path."""
        args, pa, pb = self.args, self.result["phase_a"], self.result["phase_b"]
        pa["pickup"] = latency_figures(a["accepted"], starts)
        pa["execution_rate"] = execution_rate_windows(a["accepted"], starts, a["t_first_send"], a["t_last_ack"])
        paths = recorded_paths(self.env.world, [x.task_id for x in b["accepted"]])
        by_path: dict[str, list[Accepted]] = collections.defaultdict(list)
        mismatched: collections.Counter[str] = collections.Counter()
        for x in b["accepted"]:
            p = "immediate" if x.band == "immediate" else paths.get(x.task_id, "?")
            if x.band != "immediate" and p != x.band:
                mismatched[f"{x.band}->{p}"] += 1
            by_path[p].append(x)
        pb["lateness"] = {
            f"kafka path (delay {args.kafka_delay[0]:g}-{args.kafka_delay[1]:g} s)":
                latency_figures(by_path.get("kafka", []), starts),
            f"mysql path (delay {args.mysql_delay[0]:g}-{args.mysql_delay[1]:g} s)":
                latency_figures(by_path.get("mysql", []), starts),
            "immediate (pickup at a moderate rate)": latency_figures(by_path.get("immediate", []), starts),
        }
        pb["path_mismatches"] = dict(mismatched)
        pb["pickup_breakdown"] = pickup_breakdown(self.env.world, by_path.get("immediate", []), starts)

    def raw_parts(self) -> None:
        """The same message size through raw Kafka and MariaDB, the node stopped."""
        args, result = self.args, self.result
        size = result["message_bytes"]["queued_task"]
        raw_bytes = max(size, raw_min_bytes())
        print(f"raw parts: N={result['params']['raw_n']:,}, {raw_bytes} bytes ...", file=sys.stderr)
        raw = measure_raw_parts(result["params"]["raw_n"], raw_bytes, kafka_bootstrap=args.kafka,
                                mysql_host=args.mysql_host, mysql_port=args.mysql_port, mysql_user=args.mysql_user)
        raw["requested_bytes"] = size
        result["raw_parts"] = raw
        result["ratios"] = ratios(result)


# ---------------------------------------------------------------- figures of this scenario

def node_metrics(node: NodeProcess) -> str:
    try:
        return node.get_bytes("/metrics", 5.0).decode()
    except Exception as exc:
        return f"# could not read /metrics: {exc}"


def pickup_breakdown(world: World, accepted: list[Accepted], starts: dict[str, list[float]]) -> dict[str, Any]:
    """Where an immediate task's pickup goes, from the times the run recorded: acceptance
    (due_at) -> the client's ack (the MySQL insert and the Kafka produce) -> the node's
    dispatch (tasks.dispatched_at: read from Kafka, into the heap, popped) -> the
    executor's start (begin_dispatch's transaction, the Execute call, the handler's
    scheduling). The node's and this process's clocks are the same machine's."""
    dispatched = dispatched_at(world, [a.task_id for a in accepted])
    to_ack, ack_to_dispatch, dispatch_to_start = [], [], []
    for a in accepted:
        s, d = starts.get(a.task_id), dispatched.get(a.task_id)
        if not s or d is None:
            continue
        to_ack.append((a.ack_ts - a.due_ts) * 1000)
        ack_to_dispatch.append(d - a.ack_ts * 1000)
        dispatch_to_start.append(min(s) * 1000 - d)
    return {"accept_to_ack_ms": summarize_ms(to_ack), "ack_to_dispatch_ms": summarize_ms(ack_to_dispatch),
            "dispatch_to_start_ms": summarize_ms(dispatch_to_start)}


def queued_task_size(envelope: bytes) -> int:
    """The Kafka message the node produces for this task (pb.QueuedTask), in bytes."""
    from taskring.wire import pb
    task = pb.Task.FromString(envelope)
    return len(pb.QueuedTask(task=task, attempt=1, due_at_ms=int(time.time() * 1000)).SerializeToString())


def raw_min_bytes() -> int:
    """The smallest envelope raw_parts can make."""
    try:
        make_envelopes(1, 1)
    except ValueError as exc:
        m = re.search(r">= (\d+)", str(exc))
        if m:
            return int(m.group(1))
    return 1


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    a, raw, store = result["phase_a"], result["raw_parts"], result["store"]
    k, m = raw.get("kafka", {}), raw.get("mysql", {})
    e2e, acc = a.get("completed_per_s"), a.get("accepted_per_s")
    rows_per_task = a.get("mysql_row_writes", {}).get("per_task") or 1 + (store["events_per_task"] or 0)
    steady = None
    if k.get("consume_first_message_s") is not None and k.get("combined_s"):
        steady = raw["n"] / (k["combined_s"] - k["consume_first_message_s"])
    return {
        "kafka produce+consume msgs/s without the consumer's start (N / (total - time to first message))": steady,
        "node_e2e / kafka produce+consume": ratio(e2e, k.get("combined_per_s")),
        "node_e2e / kafka produce+consume without the consumer's start": ratio(e2e, steady),
        "node_e2e / mariadb insert+claim": ratio(e2e, m.get("combined_per_s")),
        "node_accepted / kafka produce": ratio(acc, k.get("produce_per_s")),
        "node_accepted / mariadb insert": ratio(acc, m.get("insert_per_s")),
        "rows inserted per task (1 task row + events)": rows_per_task,
        "mariadb insert rows/s / rows per task": ratio(m.get("insert_per_s"), rows_per_task),
        "node_e2e / (mariadb insert rows/s / rows per task)": ratio(e2e, ratio(m.get("insert_per_s"), rows_per_task)),
    }
