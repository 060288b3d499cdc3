"""Step load with real Locust: fixed target rates of 25, 50, 75 and 100% of a peak.

A benchmark, not a test. In a private world (a scratch MariaDB database, a ZooKeeper
chroot and topics of its own, made by harness/world.py and dropped at the end) it
starts one `taskring node --single` (or `--nodes N` cluster nodes, the ring settled
first), SDK executor processes with no-op handlers that record when each task starts
(loadtest/bench/executors.py), and a Locust master with `--locust-workers` worker
processes (loadtest/locust_rate.py: locustfile.py's SubmitBatch user, paced). Locust
then offers each step's rate for `--step-s` seconds and stops by itself.

How the rate is fixed: each user calls SubmitBatch at a constant pace (Locust's
`constant_throughput`, anchored at each user's own random start so that users do not
call in step), so U users x batch x calls/s per user = tasks/s, and the step shape
changes only the number of users. The users of the peak step are the fewest, rounded
up so that every step has a whole number of them, that keep each user at most
`--max-user-rate` calls/s (default 0.5: a call has 2 s, against the tens to hundreds
of ms it takes). A step whose calls take longer than their period falls short of its
target; the table shows the target and what was accepted side by side.

Per second of the run (the timeline), and per step:
  accepted   tasks acknowledged to Locust (each SubmitBatch response, recorded by the
             worker that got it: locust_rate.py's record files)
  completed  tasks that reached `succeeded` in the store, by the second of their
             `updated_at` (set when the outcome is recorded), from one GROUP BY at the
             end; the node's Prometheus counters, sampled every second, are kept
             beside it (node_submitted / node_succeeded) as a live cross-check
  pickup     executor start - due time (bench_node.py's pickup: the executors record
             the start, the store's trigger_at is SubmitResult.due_at), p50/p99 of the
             tasks due in that second (in the step, for the step)
  errors     Locust failures (SubmitBatch calls that raised) and user errors
and the machine's busy CPU and each process group's, sampled every second.

    .venv/bin/python -m loadtest.locust_steps                        # 4 x 60 s up to 5,000 tasks/s
    .venv/bin/python -m loadtest.locust_steps --step-s 10 --peak 2000
    .venv/bin/python -m loadtest.locust_steps --nodes 3 --peak 3000
    .venv/bin/python -m loadtest.locust_steps --rerender              # redraw .md and .png from the .json

Writes loadtest/reports/locust_steps.{json,md,png} (`--report-name` to change).
Every process it starts is stopped by its PID and the world is dropped, also on an
error or Ctrl-C; logs stay in the temporary directory it prints. One benchmark at a
time on the 2 shared cores.
"""
from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from loadtest.bench import report
from loadtest.steps.chart import draw_chart
from loadtest.steps.plan import plan_steps
from loadtest.steps.reporting import print_steps, render_report
from loadtest.steps.run import run
from loadtest.steps.sampling import say


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--peak", type=float, default=5000, help="tasks/s of the 100%% step (default 5,000)")
    p.add_argument("--step-s", type=float, default=60, help="seconds of each step (default 60)")
    p.add_argument("--steps", default="25,50,75,100", help="percent of --peak of each step (default 25,50,75,100)")
    p.add_argument("--nodes", type=int, default=1, help="1: one `--single` node (default); N: N cluster nodes")
    p.add_argument("--executors", type=int, default=1, help="executor processes (default 1)")
    p.add_argument("--max-in-flight", type=int, default=2_000, help="each executor's max_in_flight (default 2,000)")
    p.add_argument("--batch", type=int, default=100, help="tasks per SubmitBatch (default 100, locustfile.py's)")
    p.add_argument("--max-user-rate", type=float, default=0.5,
                   help="at most this many SubmitBatch calls/s per Locust user (default 0.5)")
    p.add_argument("--users", type=int, default=None, help="users of the 100%% step (default: from --max-user-rate)")
    p.add_argument("--locust-workers", type=int, default=2, help="Locust worker processes (default 2)")
    p.add_argument("--delay-ms", type=int, default=0, help="delay of every task (default 0: due at once)")
    p.add_argument("--route-threshold-ms", type=int, default=5_000, help="the node's TASKRING_ROUTE_THRESHOLD_MS")
    p.add_argument("--drain-s", type=float, default=60, help="wait at most this long after the load (default 60)")
    p.add_argument("--node-log-level", default="INFO")
    report.add_report_options(p, "locust_steps", rerender=True)
    args = p.parse_args(argv)
    try:
        args.percents = [int(x) for x in args.steps.split(",") if x.strip()]
    except ValueError:
        p.error("--steps: whole percentages, comma-separated")
    if not args.percents or min(args.percents) <= 0 or args.nodes < 1 or args.locust_workers < 1:
        p.error("--steps, --nodes and --locust-workers must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if report.rerender_if_asked(args, render_report, draw_chart):
        return 0
    plan = plan_steps(args.peak, args.percents, args.batch, args.step_s, args.max_user_rate, args.users)

    def on_term(signum: int, frame: Any) -> None:  # SIGTERM: clean up as on Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    command = report.command_line("loadtest.locust_steps", argv)
    try:
        result = run(args, plan)
    except KeyboardInterrupt:
        say("interrupted: every process stopped and the world dropped")
        return 130
    result["command"] = command
    print_steps(result)
    report.publish(args, result, command, render_report, draw_chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
