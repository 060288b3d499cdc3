"""Priority isolation (issue 21, item 3): high-priority pickup with a backlog of low tasks
due, against an idle node, and the share of dispatches low still gets.

A benchmark, not a test. One `taskring node --single` and SDK executor processes whose
handler holds its slot for --handler-ms, so that executor capacity (executors x
max_in_flight / handler time) bounds the dispatch rate, not the node: by default 1 x 64 /
100 ms = 640 runs/s. (With 20 ms, 3,200/s, the node itself dispatched only ~900-1,600/s
behind the backlog on the 2-core box, and the executors were not saturated; the report's
"executor slots busy in handlers" says how near the bound it ran: a slot is held from
dispatch to outcome, so this stays below 100% even when no slot is free.) In order:

  idle        a trickle of HIGH tasks (--high-rate a second for --high-seconds, one
              Submit each, sent on an absolute schedule) on the idle node;
  loaded      --n-low immediate LOW tasks by SubmitBatch (--batch per call, a few
              submitters), then at once the same high trickle while the low backlog is
              due and waits for the saturated executors;
  idle after  once the backlog has drained (if the deadline allows), the trickle again:
              two idle samples, before and after, on a noisy 2-core box.

Pickup = the executor's start of the task (its own run record, matched by task id) - the
time this process got the Submit's answer (ack), split where it went with tasks.dispatched_at
(endtoend/scenario.py's pickup_breakdown). The idle
baseline pools both idle trickles. Low share = of the runs started during the loaded
trickle, those of low tasks (the floor in dispatcher/engine/ready.py promises >= 10% while
low waits). Low waiting at the trickle's end = low accepted - low tasks started by then.
Refused submits (RESOURCE_EXHAUSTED: admission control) are counted per priority with
their messages and never retried. Percentiles are nearest-rank (harness/stats.py).

    .venv/bin/python -m loadtest.isolation                      # 100,000 low, 20 high/s for 12 s; ~4 min
    .venv/bin/python -m loadtest.isolation --n-low 20000 --high-seconds 8 --no-report
    .venv/bin/python -m loadtest.isolation --node-env TASKRING_ADMISSION_MAX_WAIT_MS=600000

Run from the repository root, one benchmark at a time; the whole run is bounded by
--deadline-s and every process it starts is stopped by PID (bench/env.py's BenchEnv).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import datetime as dt
import functools
import os
import pathlib
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from harness.stats import latency_figures, per_second, ratio
from loadtest.bench import report
from loadtest.bench.env import NAMESPACE, BenchEnv, add_stack_options, spread_task_types, stack_from_args
from loadtest.bench.executors import Executors, Run, starts_by_task
from loadtest.bench.load import Accepted, make_specs, submit_batches, warm_up
from loadtest.bench.observe import CpuMeter, machine_facts, scan_logs
from loadtest.endtoend.scenario import pickup_breakdown

CLEANUP_S = 60.0
"""Kept for stopping the executors and the node and dropping the world, out of --deadline-s."""


@dataclasses.dataclass
class Trickle:
    """One high trickle: what was accepted (send and ack times), refused or failed."""
    phase: str
    accepted: list[Accepted] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)     # RESOURCE_EXHAUSTED messages
    errors: list[str] = dataclasses.field(default_factory=list)
    t_first: float = 0.0
    t_last: float = 0.0


async def high_trickle(target: str, task_types: list[str], rate: float, seconds: float, phase: str) -> Trickle:
    """rate x seconds HIGH tasks, one Submit each on an absolute schedule: a slow answer
    does not delay the next send (each call is a task of its own)."""
    from taskring import AsyncClient
    from taskring.errors import ResourceExhausted
    out = Trickle(phase, t_first=time.time())
    client = AsyncClient(target, rpc_timeout_s=10.0, overload_retry_s=0)   # a refusal is counted, not retried

    async def one(k: int) -> None:
        sent = time.time()
        try:
            r = await client.submit(NAMESPACE, task_types[k % len(task_types)], {"phase": phase}, priority="high")
        except ResourceExhausted as exc:
            out.refused.append(exc.details)
        except Exception as exc:
            out.errors.append(f"{type(exc).__name__}: {exc}")
        else:
            # due_ts = the send (as bench_node's phase S): pickup from the send is what a caller waits.
            out.accepted.append(Accepted(r.task_id, sent, time.time(), "high", 0))

    loop = asyncio.get_running_loop()
    start, calls = loop.time(), []
    try:
        for k in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + k / rate - loop.time()))
            calls.append(asyncio.ensure_future(one(k)))
        await asyncio.gather(*calls)
    finally:
        await client.close()
    out.t_last = time.time()
    return out


def message_shapes(messages: Iterable[str]) -> dict[str, int]:
    """Refusal messages by shape (numbers as #), most frequent first."""
    return dict(collections.Counter(re.sub(r"\d+", "#", m) for m in messages).most_common(5))


def pickup(accepted: list[Accepted], starts: dict[str, list[float]]) -> dict[str, Any]:
    """latency_figures, its 'due' (here the send) named for what it is."""
    f = latency_figures(accepted, starts)
    return {"from_ack_ms": f["from_ack_ms"], "from_send_ms": f["from_due_ms"], "not_executed": f["not_executed"],
            "executed_more_than_once": f["executed_more_than_once"]}


def dispatch_mix(runs: list[Run], low_ids: set[str], high_ids: set[str], t0: float, t1: float) -> dict[str, Any]:
    """The runs started within [t0, t1] by class, and the low tasks accepted but not started by t1."""
    inside = [r for r in runs if t0 <= r.start_s <= t1]
    low = sum(r.task_id in low_ids for r in inside)
    started_low = {r.task_id for r in runs if r.start_s <= t1 and r.task_id in low_ids}
    return {"window_s": round(t1 - t0, 2), "runs": len(inside), "runs_per_s": len(inside) / max(1e-6, t1 - t0),
            "low": low, "high": sum(r.task_id in high_ids for r in inside), "low_share": ratio(low, len(inside)),
            "low_waiting_at_end": len(low_ids - started_low),
            "runs_per_second_timeline": per_second((r.start_s for r in inside), t0)}


class IsolationBench:
    """One run: world, node, executors, warm-up, then idle, loaded and idle-after trickles."""

    def __init__(self, args: argparse.Namespace, node_env: dict[str, str]):
        self.args, self.node_env = args, node_env
        # The phases end CLEANUP_S before the deadline, so that stopping everything fits in it.
        self.deadline = time.monotonic() + args.deadline_s - CLEANUP_S
        self.run_dir = pathlib.Path(tempfile.mkdtemp(prefix="isolation_"))
        self.stack = stack_from_args(args, "isolation")
        self.env = BenchEnv(self.stack, "isolation", self.run_dir)
        self.task_types = spread_task_types()
        self.expected = 0            # runs the executors should have made by now
        self.result: dict[str, Any] = {
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "run_dir": str(self.run_dir),
            "params": {k: v for k, v in vars(args).items() if k not in ("report_dir", "no_report")},
            "machine": machine_facts(self.stack),
            "capacity_per_s": args.executors * args.max_in_flight * 1000 / args.handler_ms}

    def left_s(self, reserve_s: float = 0.0) -> float:
        return max(0.0, self.deadline - time.monotonic() - reserve_s)

    def run(self) -> dict[str, Any]:
        a = self.args
        self.env.start()
        print(f"world: {self.env.describe()}; logs in {self.run_dir}", file=sys.stderr)
        try:
            self.node = self.env.start_node(f"iso-node-{self.env.run_id}", single=True,
                                            log_path=self.run_dir / "node.log", **self.node_env).wait_ready(60)
            self.executors = Executors(self.env.world, self.task_types, a.executors, a.max_in_flight,
                                       handler_ms=a.handler_ms)
            self.env.on_stop("executors", functools.partial(self.executors.stop, timeout_s=10))
            self.executors.start()
            self.result["warmup"] = warm_up(self.env.world, self.node.target, self.executors, self.task_types)
            self.expected = self.result["warmup"]["tasks"]
            trickles = [self.trickle("idle")]
            self.wait_drained(30)
            low_ids, loaded = self.loaded()
            trickles.append(loaded)
            if self.wait_drained(self.left_s(reserve_s=a.high_seconds + 20)):
                trickles.append(self.trickle("idle after"))
            else:
                self.result["idle_after_skipped"] = "the low backlog did not drain in time"
            runs = self.executors.stop()
            self.figures(runs, trickles, low_ids)
            # What the node complained of under the backlog (sweeps, recovery), for the reader.
            self.result["node_log"] = scan_logs(self.run_dir).get("node", {})
        finally:
            signal.alarm(0)   # the cleanup is bounded by its own timeouts; interrupted, it would leave processes
            problems = self.env.stop()
            if problems:
                self.result["cleanup_problems"] = problems
        self.result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return self.result

    def meter(self) -> CpuMeter:
        pids: dict[str, int | None] = {"node": self.node.pid, "load generator (this process)": os.getpid()}
        pids.update({f"executor {i}": pid for i, pid in enumerate(self.executors.pids)})
        return CpuMeter(pids).start()

    def trickle(self, phase: str) -> Trickle:
        a = self.args
        print(f"{phase}: {a.high_rate:g} high/s for {a.high_seconds:g} s ...", file=sys.stderr)
        meter = self.meter()
        t = asyncio.run(high_trickle(self.node.target, self.task_types, a.high_rate, a.high_seconds, phase))
        self.result.setdefault("cpu", {})[phase] = meter.stop()
        self.expected += len(t.accepted)
        return t

    def loaded(self) -> tuple[set[str], Trickle]:
        """The low backlog, then the high trickle while it waits."""
        a = self.args
        print(f"loaded: {a.n_low:,} low tasks, SubmitBatch x {a.batch} ...", file=sys.stderr)
        batches = [make_specs(min(a.batch, a.n_low - i), self.task_types, seq0=i, priority="low")
                   for i in range(0, a.n_low, a.batch)]
        executed0 = self.executors.executed()
        low = asyncio.run(submit_batches(self.node.target, batches, a.submitters))
        low_ids = {x.task_id for x in low["accepted"]}
        self.expected += len(low_ids)
        refused = [e for e in low["errors"] if "ResourceExhausted" in e]
        self.result["low_submit"] = {
            "submitted": a.n_low, "accepted": len(low_ids),
            "submit_s": round(low["t_last_ack"] - low["t_first_send"], 2),
            "refused_batches": len(refused), "refusals": message_shapes(e.split(": ", 3)[-1] for e in refused),
            "other_errors": [e for e in low["errors"] if e not in refused][:5]}
        self.result["backlog_at_trickle_start"] = self.backlog(low_ids, executed0)
        t = self.trickle("loaded")
        self.result["backlog_at_trickle_end"] = self.backlog(low_ids, executed0)
        return low_ids, t

    def backlog(self, low_ids: set[str], executed0: int) -> dict[str, Any]:
        """Low tasks not started yet (the executors' counter; only low ran since executed0,
        plus the trickle's few high), and the node's heap gauge (heap and ready stage, in
        entries: a task swept to the MySQL path while its message waits there counts twice)."""
        try:
            heap: float | str = self.node.metric("taskring_heap_size")
        except Exception as exc:
            heap = f"{type(exc).__name__}: {exc}"
        return {"low_not_started": len(low_ids) - (self.executors.executed() - executed0), "node_heap_size": heap}

    def wait_drained(self, timeout_s: float) -> bool:
        """Until the executors have run everything accepted so far, or timeout_s."""
        end = time.monotonic() + timeout_s
        while self.executors.executed() < self.expected:
            if time.monotonic() > end:
                return False
            time.sleep(0.2)
        return True

    def figures(self, runs: list[Run], trickles: list[Trickle], low_ids: set[str]) -> None:
        starts, res = starts_by_task(runs), self.result
        # Each pickup split where it waited (bench_node's breakdown): the Submit call (send ->
        # ack), the node (ack -> tasks.dispatched_at: intake, the ready stage, executor
        # capacity), the way to the handler (dispatch -> start).
        res["phases"] = {t.phase: {"sent": len(t.accepted) + len(t.refused) + len(t.errors),
                                   "accepted": len(t.accepted), "refused": len(t.refused),
                                   "refusals": message_shapes(t.refused), "errors": t.errors[:5],
                                   "pickup": pickup(t.accepted, starts),
                                   "breakdown": pickup_breakdown(self.env.world, t.accepted, starts)}
                         for t in trickles}
        res["phases"]["idle pooled"] = {"pickup": pickup([x for t in trickles if t.phase != "loaded"
                                                          for x in t.accepted], starts)}
        lp, ip = (res["phases"][ph]["pickup"]["from_ack_ms"] for ph in ("loaded", "idle pooled"))
        res["ratio_loaded_over_idle"] = {q: ratio(lp.get(q), ip.get(q)) for q in ("p50", "p99", "max")}
        loaded = trickles[1]
        res["loaded_dispatch_mix"] = dispatch_mix(runs, low_ids, {x.task_id for x in loaded.accepted},
                                                  loaded.t_first, loaded.t_last)
        res["refused"] = {"high": sum(len(t.refused) for t in trickles),
                          "low_batches": res["low_submit"]["refused_batches"]}


# ---------------------------------------------------------------- the report

def render(res: dict[str, Any], command: str) -> str:
    fmt, p = report.fmt, res["params"]

    def p50_p99(d: dict[str, Any]) -> str:
        return f"{fmt(d.get('p50'), 1)} / {fmt(d.get('p99'), 1)}"

    lines = report.heading("Priority isolation: high pickup with a low backlog, against idle", res, command)
    lines += ["", f"One node (`--single`), {p['executors']} executor process(es) x max_in_flight {p['max_in_flight']},"
              f" handler {p['handler_ms']:g} ms: capacity {fmt(res['capacity_per_s'])} runs/s. Low backlog"
              f" {p['n_low']:,} immediate LOW tasks; high trickle {p['high_rate']:g}/s for {p['high_seconds']:g} s."
              f" Node environment: {p['node_env'] or 'default'}. Pickup = executor start - the Submit's ack,"
              " ms, nearest-rank; its parts (p50 / p99): the Submit call, ack -> the node's dispatch,"
              " dispatch -> executor start.", "",
              "| phase | accepted / sent | refused | p50 | p99 | max | not executed | Submit call"
              " | ack -> dispatch | dispatch -> start |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, ph in res.get("phases", {}).items():
        a, b = ph["pickup"]["from_ack_ms"], ph.get("breakdown", {})
        sent = f"{ph['accepted']} / {ph['sent']}" if "sent" in ph else ""
        lines.append(f"| {name} | {sent} | {ph.get('refused', '')} |"
                     f" {fmt(a.get('p50'), 1)} | {fmt(a.get('p99'), 1)} | {fmt(a.get('max'), 1)} |"
                     f" {ph['pickup']['not_executed']} | {p50_p99(b.get('accept_to_ack_ms', {}))} |"
                     f" {p50_p99(b.get('ack_to_dispatch_ms', {}))} | {p50_p99(b.get('dispatch_to_start_ms', {}))} |")
    r, mix, low = res.get("ratio_loaded_over_idle", {}), res.get("loaded_dispatch_mix", {}), res.get("low_submit", {})
    b0, b1 = res.get("backlog_at_trickle_start", {}), res.get("backlog_at_trickle_end", {})
    lines += ["", *report.table([
        ("loaded / idle pooled, p50 (target <= 2)", fmt(r.get("p50"), 2)),
        ("loaded / idle pooled, p99 (target <= 2)", fmt(r.get("p99"), 2)),
        ("low accepted / submitted", f"{fmt(low.get('accepted'))} / {fmt(low.get('submitted'))}"
                                     f" in {fmt(low.get('submit_s'), 1)} s"),
        ("low not started at trickle start / end", f"{fmt(b0.get('low_not_started'))} / "
                                                   f"{fmt(b1.get('low_not_started'))}"),
        ("node heap + ready stage at trickle start / end (entries)",
         " / ".join(fmt(h) if isinstance(h, float) else str(h) for h in (b0.get("node_heap_size"),
                                                                         b1.get("node_heap_size")))),
        ("runs started during the loaded trickle (per s)", f"{fmt(mix.get('runs'))} ({fmt(mix.get('runs_per_s'))})"),
        ("of them low (floor >= 10% while low waits)",
         f"{fmt(mix.get('low'))} ({report.fmt_pct(mix.get('low_share'), 1)})"),
        # A slot is held from dispatch to outcome, the handler being only part of that.
        ("executor slots busy in handlers then (runs/s x handler / slots)",
         report.fmt_pct(mix.get("runs_per_s", 0) / res["capacity_per_s"])),
        ("low accepted but not started at trickle end (runs)", fmt(mix.get("low_waiting_at_end"))),
        ("high submits refused (all phases)", fmt(res.get("refused", {}).get("high"))),
        ("low batches refused", fmt(res.get("refused", {}).get("low_batches"))),
    ])]
    refusals = [(f"{name} high", ph["refusals"]) for name, ph in res.get("phases", {}).items() if ph.get("refusals")]
    refusals += [("low batches", low["refusals"])] if low.get("refusals") else []
    if refusals:
        lines += ["", "Refusals (RESOURCE_EXHAUSTED), by message:", ""]
        lines += [f"- {who}: {n} x `{msg}`" for who, shapes in refusals for msg, n in shapes.items()]
    lines += ["", "CPU seconds per phase (wall s): " + "; ".join(
        f"{ph} ({c['wall_s']} s): " + ", ".join(f"{k} {v}" for k, v in c["process_cpu_s"].items())
        for ph, c in res.get("cpu", {}).items())]
    shapes = res.get("node_log", {}).get("by_shape", {})
    if shapes:
        lines += ["", "Node log, WARNING/ERROR lines by shape:", ""]
        lines += [f"- {n} x `{shape.strip()}`" for shape, n in shapes.items()]
    for note in ("idle_after_skipped", "cleanup_problems"):
        if res.get(note):
            lines += ["", f"{note}: {res[note]}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-low", type=int, default=100_000, help="low tasks in the backlog (100,000)")
    p.add_argument("--batch", type=int, default=1_000, help="low tasks per SubmitBatch (1,000)")
    p.add_argument("--submitters", type=int, default=4, help="concurrent SubmitBatch calls (4)")
    p.add_argument("--high-rate", type=float, default=20.0, help="high Submits per second (20)")
    p.add_argument("--high-seconds", type=float, default=12.0, help="seconds of each high trickle (12)")
    p.add_argument("--executors", type=int, default=1, help="executor processes (1)")
    p.add_argument("--max-in-flight", type=int, default=64, help="each executor's max_in_flight (64)")
    p.add_argument("--handler-ms", type=float, default=100.0,
                   help="how long each run holds its slot (100 ms: 640 runs/s, below what the node dispatches)")
    p.add_argument("--deadline-s", type=float, default=420.0,
                   help=f"the whole run's bound (420 s; the phases end {CLEANUP_S:.0f} s before it)")
    p.add_argument("--node-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the node, e.g. TASKRING_ADMISSION_MAX_WAIT_MS=600000 (repeatable)")
    add_stack_options(p)
    report.add_report_options(p, "isolation", rerender=True)
    args = p.parse_args(argv)
    if report.rerender_if_asked(args, render):
        return
    node_env: dict[str, str] = {}
    for item in args.node_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            p.error(f"--node-env wants NAME=VALUE, got {item!r}")
        node_env[name] = value
    if args.handler_ms <= 0:
        p.error("--handler-ms must be > 0: executors that return at once are not saturated")
    args.node_env = node_env

    def on_signal(signum, frame):   # SIGTERM and the deadline's alarm: clean up like Ctrl-C
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(int(args.deadline_s))   # a backstop: the waits of the phases end before it
    command = report.command_line("loadtest.isolation", argv)
    result = IsolationBench(args, node_env).run()
    signal.alarm(0)
    text = render(result, command)
    print(text)
    report.publish(args, result, command, render)


if __name__ == "__main__":
    main()
