"""The scale curve: end-to-end tasks/s for 1, 2, 3 and 4 node processes of equal size.

A benchmark, not a test. Each node process is capped to the same CPU share through
a cgroup (harness/cgroup.py: machines of equal size, simulated on this box), and for
each node count loadtest/bench_node.py runs once (its phase A: N immediate no-op
tasks through SubmitBatch, submitters spread over the nodes; a short phase B), in a
process of its own, one after the other. The executors, MariaDB, Kafka and ZooKeeper
are not capped: they are the shared parts, and the curve bends where one of them (or
the box itself) runs out.

    .venv/bin/python -m loadtest.scale_curve                       # 1-4 nodes, 0.4 cores each
    .venv/bin/python -m loadtest.scale_curve --cap 0.3 --n 20000 --counts 1 2 3

Writes loadtest/reports/scale_curve.md and .json (each run's own report is
reports/scale_curve_nodes<N>.md/.json; `--report-dir` to write elsewhere). Needs root (cgroups).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import subprocess
import sys
from typing import Any

from loadtest.bench import report

REPO = pathlib.Path(__file__).resolve().parents[1]


def run_one(nodes: int, args: argparse.Namespace) -> dict[str, Any]:
    name = f"scale_curve_nodes{nodes}" + (f"_shards{args.shards}" if args.shards > 1 else "")
    command = [sys.executable, "-m", "loadtest.bench_node", "--profile", "none", "--no-raw",
               "--nodes", str(nodes), "--node-cpu-cap", str(args.cap), "--executors", str(args.executors),
               "--n", str(args.n), "--submitters", str(max(4, 2 * nodes)), "--shards", str(args.shards),
               "--timing-kafka", "300", "--timing-mysql", "300", "--timing-immediate", "300",
               "--timing-spread-s", "2", "--report-name", name, "--report-dir", str(args.report_dir)]
    print(f"scale curve: {nodes} node(s) at {args.cap} cores each ...", file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=REPO, timeout=args.run_timeout_s, capture_output=True, text=True)
    if done.returncode != 0:
        return {"nodes": nodes, "error": done.stderr[-2000:]}
    result = json.loads((args.report_dir / f"{name}.json").read_text())
    a = result["phase_a"]
    cpu = a["cpu"]
    per_task = {k: v / a["accepted"] * 1e6 for k, v in cpu["process_cpu_s"].items()} if a["accepted"] else {}
    node_us = sum(v for k, v in per_task.items() if k == "node" or k.startswith("node "))
    return {"nodes": nodes, "completed_per_s": a["completed_per_s"], "accepted_per_s": a["accepted_per_s"],
            "complete": a["complete"], "machine_busy_pct": cpu["machine_busy_pct_of_all_cores"],
            "cpu_us_per_task": per_task, "nodes_cpu_us_per_task": node_us,
            "throttled_periods": cpu.get("node_cpu_cap", {}).get("throttled_periods"),
            "command": " ".join(["python", *command[1:]])}


def where_it_bends(rows: list[dict[str, Any]]) -> str:
    ok = [r for r in rows if "error" not in r and r["completed_per_s"]]
    if len(ok) < 2:
        return "too few runs to tell"
    base = ok[0]["completed_per_s"] / ok[0]["nodes"]
    for r in ok[1:]:
        efficiency = r["completed_per_s"] / (base * r["nodes"])
        if efficiency < 0.8:
            shares: dict[str, float] = {}
            for k, v in r["cpu_us_per_task"].items():
                if not k.startswith("node"):  # the store's servers count as one part, however many shards
                    part = "mariadb" if k.startswith("mariadb") else k
                    shares[part] = shares.get(part, 0.0) + v
            busiest = max(shares, key=lambda k: shares[k])
            return (f"bends at {r['nodes']} nodes ({efficiency:.0%} of linear): the machine is "
                    f"{r['machine_busy_pct']:.0f}% busy, and the largest uncapped share is {busiest} "
                    f"({shares[busiest]:.0f} us per task)")
    return f"close to linear up to {ok[-1]['nodes']} nodes"


def format_report(rows: list[dict[str, Any]], args: argparse.Namespace, started: str, command: str) -> str:
    L = ["# Scale curve: node processes of equal size on one box", "",
         f"Run {started} with `{command}`. Each node process is"
         f" capped to {args.cap} cores (cgroup v1 cpu quota); {args.executors} executor processes, MariaDB,"
         " Kafka and ZooKeeper are shared and not capped. Each row is one bench_node.py run (its own report"
         " is `scale_curve_nodes<N>.md`)."
         + (f" The task store is split by slot over {args.shards} MariaDB servers (mariadb us/task is both)."
            if args.shards > 1 else ""), "",
         "| nodes | completed tasks/s | accepted tasks/s | per node | nodes' CPU us/task | mariadb us/task |"
         " executors us/task | machine busy % | cap throttled periods |",
         "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "error" in r:
            L.append(f"| {r['nodes']} | error | | | | | | | {r['error'][-200:]!r} |")
            continue
        per = r["cpu_us_per_task"]
        executors = sum(v for k, v in per.items() if k.startswith("executor"))
        L.append(f"| {r['nodes']} | {r['completed_per_s']:,.0f} | {r['accepted_per_s']:,.0f} |"
                 f" {r['completed_per_s'] / r['nodes']:,.0f} | {r['nodes_cpu_us_per_task']:.0f} |"
                 f" {per.get('mariadb', 0) + per.get('mariadb2', 0):.0f} | {executors:.0f} |"
                 f" {r['machine_busy_pct']:.0f} |"
                 f" {r['throttled_periods']} |")
    L += ["", f"Where it bends: {where_it_bends(rows)}.", ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--counts", type=int, nargs="+", default=[1, 2, 3, 4], help="node counts (1 2 3 4)")
    p.add_argument("--cap", type=float, default=0.4, help="cores per node process (0.4)")
    p.add_argument("--n", type=int, default=30_000, help="phase A tasks per run (30,000)")
    p.add_argument("--executors", type=int, default=2, help="executor processes (2)")
    p.add_argument("--run-timeout-s", type=float, default=600.0)
    p.add_argument("--shards", type=int, choices=(1, 2), default=1,
                   help="task-store shards (2: split by slot over the stack's two MariaDB servers)")
    report.add_report_options(p, None)  # --report-dir: this report's and each run's
    args = p.parse_args(argv)
    command = report.command_line("loadtest.scale_curve", argv)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = [run_one(n, args) for n in args.counts]
    name = args.report_name or "scale_curve" + (f"_shards{args.shards}" if args.shards > 1 else "")
    result = {"started_at": started, "cap_cores": args.cap, "shards": args.shards, "rows": rows}
    report.print_and_publish(args, result, command, format_report(rows, args, started, command), name=name)


if __name__ == "__main__":
    main()
