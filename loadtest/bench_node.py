"""One taskring node, end to end, against the parts it stands on.

A benchmark, not a test. With one `taskring node --single` process and SDK
executor processes running against the real local stack, it measures:

  Phase A  throughput: N immediate no-op tasks submitted with SubmitBatch (1,000
           per call) from a few concurrent submitters: accepted tasks/s (acks),
           completed tasks/s end to end (first submit to the last `succeeded`
           recorded in MySQL), and the pickup latency of those immediate tasks
           (executor start - acceptance) under that full load. The node runs
           under py-spy (sampling, another process) during this phase.
  Phase B  timing, at a moderate rate: tasks delayed 1-5 s (Kafka path), tasks
           delayed 6-10 s (MySQL path) and a few immediate ones; lateness =
           executor start - due_at (SubmitResult.due_at), p50/p99/max and the
           number of early starts (must be 0). Each task's path is the one the
           node recorded (its `queued` event), not the one we meant.
  Phase S  one caller, one Submit of one immediate task in flight at a time, on the
           node idle again: each call's latency (p50/p99), the calls per second, and
           each task's pickup (executor start - send).
  Raw      loadtest/raw_parts.py's measure_raw_parts for the same message size
           (the serialized QueuedTask of a no-op task, as the node produces it)
           and a similar N, in the same run, after the node has stopped:
           node / Kafka-raw and node / MariaDB-raw.
  Profile  top functions of the node by self and cumulative samples, CPU of every
           process and of the node's threads, and where the time goes.

Everything runs in a private world made for the run and removed after it, and the
node and the executors are processes of their own (loadtest/bench/: env.py,
executors.py); this process is the load generator (bench/load.py). Percentiles are
nearest-rank (harness/stats.py).

    .venv/bin/python -m loadtest.bench_node                  # N=50,000, about 35 s on a quiet machine
    .venv/bin/python -m loadtest.bench_node --n 20000 --report-name bench_node_n20000
    .venv/bin/python -m loadtest.bench_node --profile none --no-raw --no-report
    .venv/bin/python -m loadtest.bench_node --locust-s 20    # also run locustfile.py against the node
    .venv/bin/python -m loadtest.bench_node --serve 600      # just a node + executors, for Locust by hand

Run from the repository root with the project venv, one benchmark at a time
(2 shared cores). The default profile needs py-spy (`.venv/bin/pip install py-spy`,
not in pyproject's dev extra yet); `--profile none` runs without it. See
loadtest/README.md for how to read the figures.
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
import signal
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
from loadtest.bench import report
from loadtest.bench.console import ConsoleRefresher
from loadtest.bench.env import (
    NAMESPACE,
    SLOTS,
    BenchEnv,
    add_stack_options,
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
from loadtest.bench.profile import PROFILES, profile_figures, pyspy_for
from loadtest.bench.report import fmt, table
from loadtest.bench.store import dispatched_at, recorded_paths, store_facts, wait_done
from loadtest.raw_parts import format_table as raw_format_table
from loadtest.raw_parts import make_envelopes, measure_raw_parts

REPO = pathlib.Path(__file__).resolve().parents[1]

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


# ---------------------------------------------------------------- what it prints

def fmt_ratio(v: float | None) -> str:
    return fmt(v, 3) if v is not None and v < 10 else fmt(v)


def lat_row(name: str, f: dict[str, Any]) -> str:
    d, k = f["from_due_ms"], f["from_ack_ms"]
    if not d.get("count"):
        return f"| {name} | 0 | - | - | - | - | - | {f['early_starts']} | {f['not_executed']} | - |"
    ack = fmt(k["p50"], 1) if name.startswith("immediate") else "-"  # a delayed task's includes its delay
    return (f"| {name} | {d['count']:,} | {fmt(d['p50'], 1)} | {fmt(d['p90'], 1)} | {fmt(d['p99'], 1)} |"
            f" {fmt(d['max'], 1)} | {fmt(d['min'], 1)} | {f['early_starts']} | {f['not_executed']} | {ack} |")


def format_report(result: dict[str, Any], command: str) -> str:
    p, a, b = result["params"], result.get("phase_a", {}), result.get("phase_b", {})
    node = result.get("node", {})
    L = report.heading("One node, end to end: bench_node.py", result, command) + [""]
    if p.get("nodes", 1) > 1:
        L += [f"**{p['nodes']} node processes** (a cluster on this box; phase A's submitters spread over them). "
              "The node below is the first; the others differ only by id and ports.", ""]
    if p.get("shards", 1) > 1:
        L += [f"**The task store on {p['shards']} shards**: split by slot over the stack's MariaDB servers "
              "(dispatcher/store/sharded.py); the MySQL counters and CPU below cover every shard.", ""]
    if p.get("unique_keys"):
        L += ["**Every phase A task carries a unique key of its own** (each one taken in the insert's "
              "transaction; none is ever held against another task).", ""]
    L += [f"Node: `{node.get('command', '?')}` (route threshold {p['route_threshold_ms']} ms, "
          f"{p['slots']} slots, {p['task_types']} task types spread 2 per slot), {p['executors']} executor process(es) "
          f"(SDK Executor, async no-op handler, max_in_flight {p['executor_max_in_flight']}), "
          f"load generator in this process (AsyncClient). Node ready in {node.get('ready_s')} s, "
          f"stopped on SIGTERM in {node.get('stop_s')} s (exit code {node.get('returncode')}).", ""]
    if a:
        L += phase_a_section(p, a)
    if b:
        L += phase_b_section(p, b)
    if result.get("phase_s"):
        L += phase_s_section(result["phase_s"])
    st = result.get("store")
    if st:
        L += [f"Store after the run: {st['tasks']:,} tasks {st['by_status']}; {st['task_events']:,} task_events"
              f" ({st['events_per_task']:.2f} per task: {st['events_by_state']}); "
              f"tasks with more than one attempt: {st['tasks_with_more_than_one_attempt']}. "
              f"Message sizes: task envelope {result['message_bytes']['task_envelope']} bytes, Kafka QueuedTask "
              f"{result['message_bytes']['queued_task']} bytes.", ""]
    raw = result.get("raw_parts")
    if raw:
        L += [f"## The parts underneath, same run (loadtest/raw_parts.py, node stopped; "
              f"{raw['envelope_bytes']}-byte envelope"
              + (f", the smallest raw_parts makes; the node's message is {raw['requested_bytes']} bytes"
                 if raw['envelope_bytes'] != raw['requested_bytes'] else "") + ")", "",
              raw_format_table(raw), "", "Ratios:", ""]
        L += table([(k, fmt_ratio(v)) for k, v in result["ratios"].items()], ("ratio", "value")) + [""]
    prof = result.get("profile")
    if prof and "error" not in prof:
        L += profile_section(p, a, prof)
    elif prof:
        L += [f"Profile: {prof['error']}", ""]
    if result.get("locust"):
        lo = result["locust"]
        L += ["## Locust (loadtest/locustfile.py) against the same node, after phases A and B", "",
              f"`TASKRING_TARGET=<node> TASKRING_NAMESPACE={NAMESPACE} TASKRING_TASK_TYPES=<the 32 types> "
              f"{lo.get('command')}`: exit {lo.get('returncode')}, {lo.get('wall_s')} s. Its summary:", "", "```"]
        L += [ln for ln in lo.get("output_tail", []) if not re.match(r"\[\d{4}-", ln)]
        L += ["```", ""]
    L += ["What this is and how to read it: loadtest/README.md. Every figure: the .json beside this file.", ""]
    return "\n".join(L)


def phase_s_section(s: dict[str, Any]) -> list[str]:
    c, pk = s["call_ms"], s.get("pickup", {}).get("from_due_ms", {})
    return [f"## Phase S: one caller, one Submit of one immediate task at a time ({s['n']:,} calls, node idle)", "",
            "| figure | value |", "| --- | ---: |",
            f"| Submit call ms p50 / p99 / max | {fmt(c.get('p50'), 2)} / {fmt(c.get('p99'), 2)} / "
            f"{fmt(c.get('max'), 2)} |",
            f"| tasks/s for one caller with one call in flight | {fmt(s['calls_per_s'])} |",
            f"| pickup (handler start - client send) ms p50 / p99 | {fmt(pk.get('p50'), 1)} /"
            f" {fmt(pk.get('p99'), 1)} |",
            f"| complete | {s['complete']} |", ""]


def phase_a_section(p: dict[str, Any], a: dict[str, Any]) -> list[str]:
    pk, er, rpc = a.get("pickup", {}), a.get("execution_rate", {}), a["submit_batch_rpc_ms"]
    L = [f"## Phase A: throughput ({a['accepted']:,} immediate no-op tasks, SubmitBatch x {p['batch']:,},"
         f" {p['submitters']} concurrent submitters)", ""]
    rows = [("accepted tasks/s (first send to last ack)", f"{fmt(a['accepted_per_s'])} ({a['submit_s']:.2f} s)"),
            ("completed tasks/s end to end (first send to last `succeeded`)",
             f"{fmt(a['completed_per_s'])} ({a['end_to_end_s']:.2f} s)"),
            ("drain after the last ack", f"{a['drain_after_last_ack_s']:.2f} s"),
            ("executed/s while submitting / after the last ack",
             f"{fmt(er.get('executed_per_s_while_submitting'))} / {fmt(er.get('executed_per_s_after_last_ack'))}"),
            ("SubmitBatch RPC ms p50 / p99 / max",
             f"{fmt(rpc.get('p50'))} / {fmt(rpc.get('p99'))} / {fmt(rpc.get('max'))}"),
            ("complete", f"{a['complete']} ({a['succeeded']:,} succeeded; {a['batch_error_count']} batch errors)")]
    mw = a.get("mysql_row_writes")
    if mw:
        rows.append(("MySQL row writes per task (Handler_* counters over the phase: inserted / updated / deleted)",
                     f"{fmt(mw['per_task'], 2)} ({mw['inserted']:,} / {mw['updated']:,} / {mw['deleted']:,})"))
        if mw.get("statements_per_task") is not None:
            rows.append(("MySQL statements / commits per task (Questions, Com_commit)",
                         f"{fmt(mw['statements_per_task'], 3)} / {fmt(mw['commits_per_task'], 3)}"))
    if pk:
        d, k = pk["from_due_ms"], pk["from_ack_ms"]
        rows += [("pickup latency, start - acceptance (due_at), p50 / p99 / max",
                  f"{fmt(d.get('p50'))} / {fmt(d.get('p99'))} / {fmt(d.get('max'))} ms"),
                 ("pickup latency, start - ack at the client, p50 / p99",
                  f"{fmt(k.get('p50'))} / {fmt(k.get('p99'))} ms"),
                 ("early starts / not executed / executed twice",
                  f"{pk['early_starts']} / {pk['not_executed']} / {pk['executed_more_than_once']}")]
    L += table(rows) + [""]
    if er.get("executions_per_second_timeline"):
        L += ["Executions started per second of the phase: "
              + ", ".join(f"{x:,}" for x in er["executions_per_second_timeline"]) + ".", ""]
    L += ["Pickup latency in this phase is measured under saturation: tasks are accepted faster than they"
          " are dispatched, so it is mostly time spent queued behind earlier tasks (it grows through the"
          " phase). Phase B's immediate tasks show the pickup latency of a node that is not saturated.", ""]
    cpu = a["cpu"]
    rss = cpu.get("process_rss_mb", {})
    L += [f"CPU during phase A ({cpu['wall_s']} s wall, {cpu['cores']} cores = "
          f"{cpu['wall_s'] * cpu['cores']:.1f} CPU-s available; machine busy "
          f"{cpu['machine_busy_pct_of_all_cores']}%), and each process's resident memory at the end:", "",
          "| process | CPU s | of which kernel | % of one core | RSS MB |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, v in sorted(cpu["process_cpu_s"].items(), key=lambda kv: -(kv[1] or 0)):
        L.append(f"| {name} | {fmt(v, 1)} | {fmt(cpu.get('process_system_cpu_s', {}).get(name), 1)} |"
                 f" {fmt(100 * v / cpu['wall_s'] if v is not None else None)} | {fmt(rss.get(name))} |")
    other = max(0.0, cpu["other_processes_cpu_s"])  # slightly negative = clock-tick jitter
    L += [f"| everything else on the machine | {other:.1f} | | {100 * other / cpu['wall_s']:.0f} | |", ""]
    return L


def phase_b_section(p: dict[str, Any], b: dict[str, Any]) -> list[str]:
    L = [f"## Phase B: timing ({b['accepted']:,} tasks submitted over {b['submit_s']:.1f} s, "
         f"{b['submit_rate_per_s']:,.0f}/s, batches of {p.get('timing_batch', 100)})", "",
         "Lateness = executor start - due_at (SubmitResult.due_at), ms; the path is the one the node"
         " recorded in the task's `queued` event.", "",
         "| tasks | count | p50 | p90 | p99 | max | min | early starts | not executed | start - client ack, p50 |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    L += [lat_row(name, f) for name, f in b.get("lateness", {}).items()]
    L += ["", f"Complete: {b['complete']} ({b['succeeded']:,} succeeded). Planned path != recorded path: "
          f"{b.get('path_mismatches') or 'none'}.", ""]
    bd = b.get("pickup_breakdown")
    if bd:
        L += ["Where the immediate tasks' pickup goes (ms, p50 / p99): "
              + "; ".join(f"{name} {fmt(bd[key].get('p50'), 1)} / {fmt(bd[key].get('p99'), 1)}" for name, key in (
                  ("acceptance -> client ack (insert + produce)", "accept_to_ack_ms"),
                  ("ack -> node's dispatch (consume, heap, pop)", "ack_to_dispatch_ms"),
                  ("dispatch -> executor start (begin_dispatch, Execute call)", "dispatch_to_start_ms")))
              + ".", ""]
    return L


def profile_section(p: dict[str, Any], a: dict[str, Any], prof: dict[str, Any]) -> list[str]:
    unit = "samples" if "note" not in prof else "s"
    hz = p["profile_rate_hz"]
    L = [f"## Profile of the node during phase A ({p['profile']}"
         + (f", {hz} Hz, {prof['samples']:,} samples of threads on CPU" if "note" not in prof
            else f"; {prof['note']}") + ")", ""]
    cpu = a.get("cpu", {})
    nt = prof.get("node_threads_cpu") or []
    py_cpu = sum(t["cpu_s"] for t in nt if t["thread"].startswith("python:"))
    node_cpu = (cpu.get("process_cpu_s") or {}).get("node")
    if node_cpu and p["profile"] == "py-spy-native":
        L += [f"{prof['samples']:,} samples at {hz} Hz, after dropping waits, are"
              f" {prof['samples'] / hz:.1f} thread-seconds, against {node_cpu:.1f} CPU-s the"
              " node used: close enough to read the shares as CPU. py-spy pauses the node for every sample in"
              " this mode, so the node's throughput in this run is not a figure to quote.", ""]
    elif node_cpu and "note" not in prof:
        L += [f"{prof['samples']:,} samples at {hz} Hz are {prof['samples'] / hz:.1f} thread-seconds, against"
              f" {node_cpu:.1f} CPU-s the node used: a sample counts a thread that is running *or ready to run*"
              " (waiting for a core, or just woken from a socket), so shares of waiting-heavy work (MySQL round"
              " trips) read high here. The `py-spy-native` run (reports/bench_node_native.md) drops waits and"
              " approximates CPU.", ""]
    if cpu.get("wall_s") and nt:
        L += [f"The node's Python threads used {py_cpu:.1f} CPU-s in {cpu['wall_s']} s: one GIL was held about"
              f" {min(100, 100 * py_cpu / cpu['wall_s']):.0f}% of the time at most (C code that releases the GIL"
              f" counts here too). Samples are charged to the thread's stack at the moment; at {hz} Hz one sample"
              f" is about {1000 / hz:.0f} ms of a thread on CPU.", ""]
    if nt:
        L += ["Node CPU by thread (from /proc; Python threads named by py-spy):", "",
              "| thread | threads | CPU s |", "| --- | ---: | ---: |"]
        L += [f"| {t['thread']} | {t['threads']} | {t['cpu_s']:.2f} |" for t in nt] + [""]
    if prof.get("dropped_wait_samples") or prof.get("dropped_cond_wait_samples"):
        L += [f"(Dropped: {prof['dropped_wait_samples']:,} samples of threads blocked in a known wait (queue,"
              f" select, socket send/recv) and {prof['dropped_cond_wait_samples']:,} samples in pthread_cond_wait"
              " & co. (in a Python thread: mostly waiting for the GIL). The paused mode that native stacks need"
              " counts such threads as running; what is left approximates CPU.)", ""]
    for key, title in (("by_activity_group", "Where the time goes (activities grouped)"),
                       ("by_activity", "By activity (first matching function on the stack)"),
                       ("by_library", "By library (file of the innermost Python frame)"),
                       ("by_thread", "By thread")):
        if prof.get(key):
            L += [f"{title}:", "", f"| what | {unit} | % |", "| --- | ---: | ---: |"]
            L += [f"| {x['name']} | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
    for key, title in (("top_cumulative", "Top 20 by cumulative"), ("top_self", "Top 20 by self")):
        L += [f"{title}:", "", f"| function | {unit} | % |", "| --- | ---: | ---: |"]
        L += [f"| `{x['name']}` | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
    return L


def print_summary(result: dict[str, Any]) -> None:
    a, b = result.get("phase_a", {}), result.get("phase_b", {})
    rows = []
    if a:
        pk = a.get("pickup", {}).get("from_due_ms", {})
        rows += [("A accepted tasks/s", fmt(a.get("accepted_per_s"))),
                 ("A completed tasks/s end to end", fmt(a.get("completed_per_s"))),
                 ("A pickup p50 / p99 ms (saturated)", f"{fmt(pk.get('p50'))} / {fmt(pk.get('p99'))}")]
    for name, f in b.get("lateness", {}).items():
        d = f["from_due_ms"]
        rows.append((f"B {name}: p50 / p99 / max ms, early",
                     f"{fmt(d.get('p50'), 1)} / {fmt(d.get('p99'), 1)} / {fmt(d.get('max'), 1)}, {f['early_starts']}"))
    ps = result.get("phase_s")
    if ps:
        pk = ps.get("pickup", {}).get("from_due_ms", {})
        rows += [("S one Submit ms p50 / p99; calls/s", f"{fmt(ps['call_ms'].get('p50'), 2)} / "
                  f"{fmt(ps['call_ms'].get('p99'), 2)}; {fmt(ps['calls_per_s'])}"),
                 ("S pickup p50 / p99 ms", f"{fmt(pk.get('p50'), 1)} / {fmt(pk.get('p99'), 1)}")]
    raw = result.get("raw_parts")
    if raw:
        rows += [("raw Kafka produce+consume msgs/s", fmt(raw["kafka"]["combined_per_s"])),
                 ("raw MariaDB insert+claim rows/s", fmt(raw["mysql"]["combined_per_s"]))]
        rows += [(k, fmt_ratio(v)) for k, v in result["ratios"].items()]
    width = max((len(k) for k, _ in rows), default=10)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


# ---------------------------------------------------------------- the command line

def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=50_000, help="phase A tasks (default 50,000)")
    p.add_argument("--batch", type=int, default=1_000, help="tasks per SubmitBatch in phase A (default 1,000)")
    p.add_argument("--submitters", type=int, default=4, help="concurrent SubmitBatch calls in phase A (default 4)")
    p.add_argument("--executors", type=int, default=1, help="executor processes (default 1)")
    p.add_argument("--node-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the node processes, e.g. TASKRING_KAFKA_LINGER_MS=1 (repeatable)")
    p.add_argument("--node-cpu-cap", type=float, default=0.0, metavar="CORES",
                   help="cap each node process to this many cores (cgroup v1 cpu; 0: no cap)")
    p.add_argument("--shards", type=int, choices=(1, 2), default=1,
                   help="task-store shards: 2 splits the store by slot over the stack's two MariaDB servers")
    p.add_argument("--unique-keys", action="store_true",
                   help="every phase A task carries a unique key of its own (the cost of the key check)")
    p.add_argument("--nodes", type=int, default=1,
                   help="node processes (default 1, `--single`); more: a cluster, submitters spread over them")
    p.add_argument("--max-in-flight", type=int, default=2_000, help="each executor's max_in_flight (default 2,000)")
    p.add_argument("--route-threshold-ms", type=int, default=5_000,
                   help="TASKRING_ROUTE_THRESHOLD_MS (default 5,000: 1-5 s delays go through Kafka)")
    p.add_argument("--timing-kafka", type=int, default=3_000, help="phase B tasks delayed --kafka-delay (3,000)")
    p.add_argument("--timing-mysql", type=int, default=3_000, help="phase B tasks delayed --mysql-delay (3,000)")
    p.add_argument("--timing-immediate", type=int, default=1_000, help="phase B immediate tasks (1,000)")
    p.add_argument("--kafka-delay", type=float, nargs=2, default=[1.0, 5.0], metavar=("MIN_S", "MAX_S"))
    p.add_argument("--mysql-delay", type=float, nargs=2, default=[6.0, 10.0], metavar=("MIN_S", "MAX_S"))
    p.add_argument("--timing-spread-s", type=float, default=5.0, help="phase B submission window (5 s)")
    p.add_argument("--timing-batch", type=int, default=100, help="tasks per SubmitBatch in phase B (100)")
    p.add_argument("--single", type=int, default=1_000, help="phase S single Submits, one at a time (1,000)")
    p.add_argument("--profile", choices=PROFILES, default="py-spy",
                   help="py-spy: Python stacks, node not paused (default); py-spy-native: with C frames"
                        " (protobuf, grpc, librdkafka), node paused per sample; cprofile: main thread only")
    p.add_argument("--profile-rate", type=int, default=50, help="py-spy samples per second (50)")
    p.add_argument("--raw-n", type=int, default=None, help="raw parts N (default: --n)")
    p.add_argument("--no-raw", action="store_true", help="skip the raw parts")
    p.add_argument("--executor-tls", action="store_true",
                   help="the node dials its executors over mutual TLS (certificates from deploy/local/certs.sh)")
    p.add_argument("--console-refresh-s", type=float, default=0.0, metavar="SECONDS",
                   help="poll the console's endpoints every SECONDS during the run, as an open console (0: no)")
    p.add_argument("--locust-s", type=int, default=0, help="also run locustfile.py for this many seconds (0: no)")
    p.add_argument("--locust-users", type=int, default=4)
    p.add_argument("--serve", type=int, default=0, metavar="SECONDS",
                   help="only start the world, node and executors and keep them up this long (for Locust by hand)")
    p.add_argument("--node-log-level", default="INFO")
    add_stack_options(p)
    report.add_report_options(p, "bench_node", rerender=True)
    args = p.parse_args(argv)
    node_env: dict[str, str] = {}
    for item in args.node_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            p.error(f"--node-env wants NAME=VALUE, got {item!r}")
        node_env[name] = value
    if report.rerender_if_asked(args, format_report):
        return
    if args.kafka_delay[1] * 1000 > args.route_threshold_ms:
        p.error("--kafka-delay max must be <= --route-threshold-ms, or those tasks take the MySQL path")
    if args.mysql_delay[0] * 1000 <= args.route_threshold_ms:
        p.error("--mysql-delay min must be > --route-threshold-ms, or those tasks take the Kafka path")

    def on_term(signum, frame):  # SIGTERM: clean up like Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    command = report.command_line("loadtest.bench_node", argv)
    result = NodeBench(args, node_env).run()
    if args.serve:
        return
    print(format_report(result, command))
    print_summary(result)
    report.publish(args, result, command, format_report)


if __name__ == "__main__":
    main()
