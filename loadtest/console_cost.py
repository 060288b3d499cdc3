"""What an open console costs a node: the CPU of the node and of MariaDB per refresh of every
endpoint the console's pages poll, measured in isolation (no other load), so the figure is not
lost in the run-to-run noise of a throughput benchmark.

A benchmark, not a test. One `taskring node --single` in a private world with D dead letters
(written directly, over 20 failure groups) and T tasks of per-minute figures; R rounds of the
console's requests (loadtest/bench/console.py PATHS) back to back; CPU from /proc before and
after. The share of a core that a console refreshing every 3 s takes is then
(CPU per round / 3 s).

    .venv/bin/python -m loadtest.console_cost              # 200 rounds, 5,000 dead letters
"""
from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import sys
import tempfile
import time
import urllib.request

from harness.processes import NodeProcess
from harness.stack import StackEndpoints
from harness.world import private_world
from loadtest.bench import report
from loadtest.bench.console import PATHS
from loadtest.bench.observe import process_cpu_s, stack_pids

REPO = pathlib.Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--dead", type=int, default=5000)
    p.add_argument("--refresh-s", type=float, default=3.0, help="the console's refresh, for the share of a core")
    report.add_report_options(p, "console_cost")
    args = p.parse_args(argv)
    command = report.command_line("loadtest.console_cost", argv)
    with tempfile.TemporaryDirectory() as logs, \
            private_world(StackEndpoints.from_env(), "console-cost", pathlib.Path(logs)) as world:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        world.sql("INSERT INTO dead_letters (task_id, slot, namespace, task_type, envelope, attempts, last_error,"
                  " error_class, error_shape, error_group, dead_lettered_at)"
                  " SELECT CONCAT('dl-', seq), seq %% 16, 'shop', CONCAT('type', seq %% 7), x'00', 3,"
                  " CONCAT('ValueError: failure ', seq %% 20, ' of order ', seq), 'ValueError',"
                  " CONCAT('failure ', seq %% 20, ' of order <n>'), LPAD(HEX(seq %% 20), 16, '0'),"
                  f" %s - INTERVAL seq SECOND FROM seq_1_to_{args.dead}", (now,))
        world.sql("INSERT INTO task_stats (minute, namespace, task_type, node, submitted, succeeded, failed,"
                  " dead_lettered, duration_buckets) SELECT %s - INTERVAL seq MINUTE, 'shop', CONCAT('type', seq %% 7),"
                  " 'n', 1000, 990, 10, 1, '0,0,100,800,90,10,0,0,0,0,0,0,0,0' FROM seq_0_to_300",
                  (now.replace(second=0, microsecond=0),))
        node = NodeProcess(world, "console-cost-1", single=True).start()
        try:
            node.wait_ready()
            for path in PATHS:   # warm: the first call of each route imports and caches
                urllib.request.urlopen(node.admin + path, timeout=30).read()
            mariadb = stack_pids().get("mariadb")
            n0, m0, t0 = process_cpu_s(node.pid) or 0.0, process_cpu_s(mariadb) or 0.0, time.perf_counter()
            per_path: dict[str, float] = dict.fromkeys(PATHS, 0.0)
            for _ in range(args.rounds):
                for path in PATHS:
                    s = time.perf_counter()
                    urllib.request.urlopen(node.admin + path, timeout=30).read()
                    per_path[path] += time.perf_counter() - s
            wall = time.perf_counter() - t0
            node_s, db_s = (process_cpu_s(node.pid) or 0.0) - n0, (process_cpu_s(mariadb) or 0.0) - m0
        finally:
            node.terminate()
    round_node_ms, round_db_ms = 1000 * node_s / args.rounds, 1000 * db_s / args.rounds
    share = (node_s + db_s) / args.rounds / args.refresh_s
    result = {"rounds": args.rounds, "dead_letters": args.dead, "wall_s": round(wall, 2),
              "node_cpu_ms_per_round": round(round_node_ms, 2), "mariadb_cpu_ms_per_round": round(round_db_ms, 2),
              "response_ms_mean": {k: round(1000 * v / args.rounds, 2) for k, v in per_path.items()},
              "share_of_a_core_at_refresh_s": {"refresh_s": args.refresh_s, "share": round(share, 4)}}
    lines = [f"# What an open console costs: {args.rounds} refreshes of every console endpoint", "",
             f"Command: `{command}`; one"
             f" node, {args.dead:,} dead letters over 20 failure groups, 5 h of per-minute figures, no other load.", "",
             "| figure | value |", "| --- | ---: |",
             f"| node CPU per refresh (all {len(PATHS)} endpoints) | {round_node_ms:.2f} ms |",
             f"| MariaDB CPU per refresh | {round_db_ms:.2f} ms |",
             f"| share of one core, one console refreshing every {args.refresh_s:g} s | {share:.2%} |", "",
             "| endpoint | mean response ms |", "| --- | ---: |"]
    lines += [f"| `{k}` | {v} |" for k, v in result["response_ms_mean"].items()]
    report.print_and_publish(args, result, command, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
