"""Noisy neighbour (issue 21, item 4): two tenants of one task type, one sending 90% of the
tasks with handlers ten times slower, at saturation; the quiet tenant's pickup with fair
shares by executor time, against FIFO, in the same run.

A benchmark, not a test. One `taskring node --single` whose policies give one task type fair
shares by tenant (`{"fairness": {"key": "tenant:{tenant}"}}`) and leave a twin type FIFO, and
SDK executor processes whose handler holds its slot for the payload's `sleep_ms`. Each phase,
FIFO first, then fair, on its own type: for --seconds, every 100 ms, one SubmitBatch of the
noisy tenant (90% of --rate, handlers --noisy-ms) and one of the quiet tenant (10%, --quiet-ms).
With the defaults the noisy tenant alone asks for 450/s x 200 ms = 90 executor slots of the 64
there are: the executors are saturated, a FIFO backlog grows by the second, and the quiet
tenant, who needs one slot, waits behind it; with fair shares it gets its share of executor
time and starts at once. Between phases the backlog drains.

Pickup = the executor's start of the task - the ack of its SubmitBatch, ms, nearest-rank.
Executor time per tenant = the handler time (sleep_ms) of the runs that started in the phase.

    .venv/bin/python -m loadtest.noisy_neighbour                 # 10 s a phase; ~1.5 min
    .venv/bin/python -m loadtest.noisy_neighbour --seconds 5 --no-report

Run from the repository root, one benchmark at a time; every process it starts is stopped by
PID (bench/env.py's BenchEnv), and the whole run is bounded by --deadline-s.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import json
import os
import pathlib
import signal
import sys
import tempfile
import time
from typing import Any

from harness.stats import latency_figures, ratio
from loadtest.bench import report
from loadtest.bench.env import NAMESPACE, BenchEnv, add_stack_options, stack_from_args
from loadtest.bench.executors import Executors, Run, starts_by_task
from loadtest.bench.load import Accepted, warm_up
from loadtest.bench.observe import CpuMeter, machine_facts

FIFO_TYPE, FAIR_TYPE = "render-fifo", "render-fair"
NOISY, QUIET = "noisy", "quiet"
TICK_S = 0.1
CLEANUP_S = 45.0


async def tenants_load(target: str, task_type: str, seconds: float, rate: float, noisy_ms: float,
                       quiet_ms: float) -> dict[str, Any]:
    """Every tick, one SubmitBatch per tenant on an absolute schedule (a slow answer does not
    delay the next tick): 90% of `rate` noisy, 10% quiet."""
    from taskring import AsyncClient, TaskSpec
    client = AsyncClient(target, rpc_timeout_s=30.0)
    accepted: dict[str, list[Accepted]] = {NOISY: [], QUIET: []}
    errors: list[str] = []
    per_tick = {NOISY: round(rate * 0.9 * TICK_S), QUIET: max(1, round(rate * 0.1 * TICK_S))}
    sleep = {NOISY: noisy_ms, QUIET: quiet_ms}

    async def batch(tenant: str, tick: int) -> None:
        specs = [TaskSpec(NAMESPACE, task_type, {"tenant": tenant, "sleep_ms": sleep[tenant], "seq": tick * 1000 + i})
                 for i in range(per_tick[tenant])]
        try:
            results = await client.submit_batch(specs)
        except Exception as exc:
            errors.append(f"{tenant}: {type(exc).__name__}: {exc}")
            return
        ack = time.time()
        accepted[tenant].extend(Accepted(r.task_id, ack, ack, "immediate", 0) for r in results)

    loop = asyncio.get_running_loop()
    start, calls = loop.time(), []
    t0 = time.time()
    try:
        for tick in range(int(seconds / TICK_S)):
            await asyncio.sleep(max(0.0, start + tick * TICK_S - loop.time()))
            calls += [asyncio.ensure_future(batch(NOISY, tick)), asyncio.ensure_future(batch(QUIET, tick))]
        await asyncio.gather(*calls)
    finally:
        await client.close()
    return {"accepted": accepted, "errors": errors, "t0": t0, "t1": time.time()}


def executor_time(runs: list[Run], ids: dict[str, set[str]], sleep_ms: dict[str, float], t0: float,
                  t1: float) -> dict[str, Any]:
    """Runs started within [t0, t1] and the handler time they took, per tenant."""
    inside = [r for r in runs if t0 <= r.start_s <= t1]
    out: dict[str, Any] = {}
    for tenant, of_tenant in ids.items():
        n = sum(r.task_id in of_tenant for r in inside)
        out[tenant] = {"starts": n, "executor_s": round(n * sleep_ms[tenant] / 1000, 1)}
    total = sum(v["executor_s"] for v in out.values())
    for v in out.values():
        v["executor_share"] = ratio(v["executor_s"], total)
    return out


class NoisyBench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.deadline = time.monotonic() + args.deadline_s - CLEANUP_S
        self.run_dir = pathlib.Path(tempfile.mkdtemp(prefix="noisy_"))
        self.stack = stack_from_args(args, "noisy_neighbour")
        self.env = BenchEnv(self.stack, "noisy", self.run_dir)
        self.expected = 0
        self.result: dict[str, Any] = {
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "run_dir": str(self.run_dir),
            "params": {k: v for k, v in vars(args).items() if k not in ("report_dir", "no_report")},
            "machine": machine_facts(self.stack), "phases": {}}

    def run(self) -> dict[str, Any]:
        a = self.args
        policies = self.run_dir / "policies.json"
        policies.write_text(json.dumps({f"{NAMESPACE}/{FAIR_TYPE}": {"fairness": {"key": "tenant:{tenant}"}}}))
        self.env.start()
        print(f"world: {self.env.describe()}; logs in {self.run_dir}", file=sys.stderr)
        try:
            self.node = self.env.start_node(f"noisy-node-{self.env.run_id}", single=True,
                                            log_path=self.run_dir / "node.log",
                                            TASKRING_RETRY_POLICIES=str(policies)).wait_ready(60)
            self.executors = Executors(self.env.world, [FIFO_TYPE, FAIR_TYPE], a.executors, a.max_in_flight,
                                       handler_ms=a.quiet_ms)
            self.env.on_stop("executors", functools.partial(self.executors.stop, timeout_s=10))
            self.executors.start()
            self.result["warmup"] = warm_up(self.env.world, self.node.target, self.executors, [FIFO_TYPE, FAIR_TYPE])
            self.expected = self.result["warmup"]["tasks"]
            loads = {}
            for phase, task_type in (("fifo", FIFO_TYPE), ("fair shares", FAIR_TYPE)):
                print(f"{phase}: {a.rate:g} tasks/s for {a.seconds:g} s on {task_type} ...", file=sys.stderr)
                meter = CpuMeter({"node": self.node.pid, "load generator (this process)": os.getpid(),
                                  **{f"executor {i}": pid for i, pid in enumerate(self.executors.pids)}}).start()
                loads[phase] = asyncio.run(tenants_load(self.node.target, task_type, a.seconds, a.rate, a.noisy_ms,
                                                        a.quiet_ms))
                self.result.setdefault("cpu", {})[phase] = meter.stop()
                self.expected += sum(len(v) for v in loads[phase]["accepted"].values())
                if not self.wait_drained(max(0.0, self.deadline - time.monotonic() - 5)):
                    self.result["not_drained"] = phase
                    break
            runs = self.executors.stop()
            self.figures(runs, loads)
        finally:
            signal.alarm(0)
            problems = self.env.stop()
            if problems:
                self.result["cleanup_problems"] = problems
        self.result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return self.result

    def wait_drained(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while self.executors.executed() < self.expected:
            if time.monotonic() > end:
                return False
            time.sleep(0.2)
        return True

    def figures(self, runs: list[Run], loads: dict[str, dict[str, Any]]) -> None:
        a, starts = self.args, starts_by_task(runs)
        sleep_ms = {NOISY: a.noisy_ms, QUIET: a.quiet_ms}
        for phase, load in loads.items():
            acc = load["accepted"]
            self.result["phases"][phase] = {
                "accepted": {t: len(v) for t, v in acc.items()}, "errors": load["errors"][:5],
                "pickup_quiet": latency_figures(acc[QUIET], starts)["from_ack_ms"],
                "pickup_noisy": latency_figures(acc[NOISY], starts)["from_ack_ms"],
                "not_executed": sum(latency_figures(v, starts)["not_executed"] for v in acc.values()),
                "during_load": executor_time(runs, {t: {x.task_id for x in v} for t, v in acc.items()}, sleep_ms,
                                             load["t0"], load["t1"])}
        phases = self.result["phases"]
        if "fifo" in phases and "fair shares" in phases:
            fifo, fair = phases["fifo"]["pickup_quiet"], phases["fair shares"]["pickup_quiet"]
            self.result["quiet_p95_fifo_over_fair"] = ratio(fifo.get("p95"), fair.get("p95"))


def render(res: dict[str, Any], command: str) -> str:
    fmt, p = report.fmt, res["params"]
    lines = report.heading("Noisy neighbour: the quiet tenant's pickup with fair shares, against FIFO", res, command)
    lines += ["", f"One node (`--single`), {p['executors']} executor process(es) x max_in_flight {p['max_in_flight']}."
              f" {p['rate']:g} tasks/s for {p['seconds']:g} s a phase: 90% from the noisy tenant (handler"
              f" {p['noisy_ms']:g} ms), 10% from the quiet one ({p['quiet_ms']:g} ms), one SubmitBatch per tenant"
              " every 100 ms. FIFO runs on a type without fairness, then fair shares on a type with"
              " `{\"fairness\": {\"key\": \"tenant:{tenant}\"}}`. Pickup = executor start - the SubmitBatch's"
              " ack, ms, nearest-rank; executor time = handler time of the runs started while the load ran.", "",
              "| phase | quiet p50 | quiet p95 | quiet p99 | noisy p50 | noisy p95 | quiet starts / executor share"
              " | noisy starts / executor share | not executed |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, ph in res.get("phases", {}).items():
        q, n, d = ph["pickup_quiet"], ph["pickup_noisy"], ph["during_load"]
        lines.append(f"| {name} | {fmt(q.get('p50'), 1)} | {fmt(q.get('p95'), 1)} | {fmt(q.get('p99'), 1)} |"
                     f" {fmt(n.get('p50'), 1)} | {fmt(n.get('p95'), 1)} |"
                     f" {d[QUIET]['starts']} / {report.fmt_pct(d[QUIET]['executor_share'], 1)} |"
                     f" {d[NOISY]['starts']} / {report.fmt_pct(d[NOISY]['executor_share'], 1)} |"
                     f" {ph['not_executed']} |")
    lines += ["", *report.table([("quiet tenant's pickup p95, FIFO / fair shares",
                                  fmt(res.get("quiet_p95_fifo_over_fair"), 1))])]
    lines += ["", "CPU seconds per phase (wall s): " + "; ".join(
        f"{ph} ({c['wall_s']} s): " + ", ".join(f"{k} {v}" for k, v in c["process_cpu_s"].items())
        for ph, c in res.get("cpu", {}).items())]
    for note in ("not_drained", "cleanup_problems"):
        if res.get(note):
            lines += ["", f"{note}: {res[note]}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=500.0, help="tasks per second, both tenants (500)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of load per phase (10)")
    p.add_argument("--noisy-ms", type=float, default=200.0, help="the noisy tenant's handler time (200 ms)")
    p.add_argument("--quiet-ms", type=float, default=20.0, help="the quiet tenant's handler time (20 ms)")
    p.add_argument("--executors", type=int, default=1, help="executor processes (1)")
    p.add_argument("--max-in-flight", type=int, default=64, help="each executor's max_in_flight (64)")
    p.add_argument("--deadline-s", type=float, default=240.0, help="the whole run's bound (240 s)")
    add_stack_options(p)
    report.add_report_options(p, "noisy_neighbour", rerender=True)
    args = p.parse_args(argv)
    if report.rerender_if_asked(args, render):
        return

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(int(args.deadline_s))
    command = report.command_line("loadtest.noisy_neighbour", argv)
    result = NoisyBench(args).run()
    signal.alarm(0)
    text = render(result, command)
    print(text)
    report.publish(args, result, command, render)


if __name__ == "__main__":
    main()
