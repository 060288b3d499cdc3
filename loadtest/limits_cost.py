"""What limits cost when they never bind (issue 21): bench_node's phase A, alternately without
limits and with a concurrency limit per type and per key and a retry cap on every task type the
benchmark uses, set far above anything it reaches, in the same session.

A benchmark, not a test. Each run is a whole `python -m loadtest.bench_node --profile none
--no-raw` (its own private world, node and executor), the limited runs with
TASKRING_RETRY_POLICIES naming every bench type with {"concurrency": {"per_type": 1000000,
"per_key": 1000000, "key": "seq:{seq}"}, "retry_cap": 1000000}: the gate runs for every task
(places taken and freed, one per attempt as its outcome comes; the key built from each payload,
a different one per task, the worst case for the owner's table of keys, and checked at submit,
which takes such types off the API's fast path) and never makes one wait. Reported per pair and as medians: completed
tasks/s end to end, and the node's CPU per task (phase A's node CPU seconds / tasks). The
target is <= 10% slower; the box's noise between identical runs is several percent, so the
runs alternate.

    .venv/bin/python -m loadtest.limits_cost                  # 3 pairs, about 8 minutes
    .venv/bin/python -m loadtest.limits_cost --pairs 1 --n 20000 --no-report

Run from the repository root, one benchmark at a time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

from loadtest.bench import report
from loadtest.bench.env import add_stack_options, spread_task_types, stack_from_args
from loadtest.bench.observe import machine_facts

NEVER_BINDING = 1_000_000


def policies_file(directory: pathlib.Path) -> pathlib.Path:
    """Every task type bench_node submits, with limits it never reaches."""
    path = directory / "never_binding_limits.json"
    limits = {"concurrency": {"per_type": NEVER_BINDING, "per_key": NEVER_BINDING, "key": "seq:{seq}"},
              "retry_cap": NEVER_BINDING}
    path.write_text(json.dumps({f"bench/{t}": limits for t in spread_task_types()}))
    return path


def bench_once(n: int, out: pathlib.Path, name: str, node_env: dict[str, str]) -> dict:
    """One bench_node run; its phase A figures."""
    cmd = [sys.executable, "-m", "loadtest.bench_node", "--profile", "none", "--no-raw", "--n", str(n),
           "--report-dir", str(out), "--report-name", name]
    for key, value in node_env.items():
        cmd += ["--node-env", f"{key}={value}"]
    subprocess.run(cmd, check=True, timeout=600, stdout=subprocess.DEVNULL)
    phase = json.loads((out / f"{name}.json").read_text())["phase_a"]
    node_cpu_s = phase["cpu"]["process_cpu_s"]["node"]
    return {"completed_per_s": phase["completed_per_s"], "succeeded": phase["succeeded"],
            "node_cpu_s": node_cpu_s, "node_us_per_task": node_cpu_s / phase["succeeded"] * 1e6}


def render(result: dict, command: str) -> str:
    runs = result["runs"]
    lines = [*report.heading("Cost of limits that never bind", result, command), "",
             "bench_node phase A, alternately without limits and with a concurrency limit per type and per key"
             " (`seq:{seq}`: a key per task) and a retry cap, all 1,000,000, on every bench task type (places"
             " taken and freed for every attempt, never a wait).",
             "", "| pair | without: tasks/s | with: tasks/s | with / without | without: node µs/task |"
             " with: node µs/task |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for i, (off, on) in enumerate(zip(runs["without"], runs["with"]), 1):
        lines.append(f"| {i} | {off['completed_per_s']:,.0f} | {on['completed_per_s']:,.0f} |"
                     f" {on['completed_per_s'] / off['completed_per_s']:.3f} | {off['node_us_per_task']:.1f} |"
                     f" {on['node_us_per_task']:.1f} |")
    med = {side: statistics.median(r["completed_per_s"] for r in rs) for side, rs in runs.items()}
    cpu = {side: statistics.median(r["node_us_per_task"] for r in rs) for side, rs in runs.items()}
    lines += ["", f"Medians: {med['without']:,.0f} tasks/s without, {med['with']:,.0f} with"
              f" ({med['with'] / med['without']:.3f}; target >= 0.90); node {cpu['without']:.1f} µs/task without,"
              f" {cpu['with']:.1f} with.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--n", type=int, default=50_000)
    add_stack_options(p)
    report.add_report_options(p, "limits_cost")
    args = p.parse_args(argv)
    result: dict = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "machine": machine_facts(stack_from_args(args, "limits_cost")), "n": args.n, "pairs": args.pairs,
                    "runs": {"without": [], "with": []}}
    with tempfile.TemporaryDirectory(prefix="limits-cost-") as tmp:
        work = pathlib.Path(tmp)
        limited = {"TASKRING_RETRY_POLICIES": str(policies_file(work))}
        for i in range(args.pairs):
            for side, env in (("without", {}), ("with", limited)):
                figures = bench_once(args.n, work, f"{side}-{i}", env)
                result["runs"][side].append(figures)
                print(f"pair {i + 1} {side}: {figures['completed_per_s']:,.0f} tasks/s,"
                      f" node {figures['node_us_per_task']:.1f} µs/task", flush=True)
    command = report.command_line("loadtest.limits_cost", argv)
    print(render(result, command))
    report.publish(args, result, command, render)


if __name__ == "__main__":
    main()
