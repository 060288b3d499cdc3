"""Cluster handoff, measured: re-own time, slots moved, the throughput dip.

A private taskring cluster (its own MariaDB database, ZooKeeper chroot and
Kafka topics, dropped afterwards) of real `taskring node` processes, with an
executor process and a load-generator process, under a steady offered load
(default 500 tasks/s through SubmitBatch, spread over 64 task types, 4 per
slot, so every one of the 16 slots has traffic; 80% Kafka path, 20% MySQL path
as in tests/integration/cluster_harness.py). The world, the processes, the load,
the observers are loadtest/bench/'s, the statistics harness/stats.py; loadtest/handoff/
is the order of the scenarios and what they report, and this file its command line.
One run, in this order:

  ring model      cluster.ring.desired_owners for 16 and 64 slots over many
                  node-name sets: the fraction of slots a join/leave moves,
                  against the ideal 1/N (pure computation, no cluster).
  membership      joins 3->4 (n4), 4->5 (n5), leaves 5->4, 4->3 (SIGTERM):
                  slots whose owner changed, and whether each moved only to
                  or from the joining/leaving node (and never elsewhere, even
                  transiently).
  kill -9         x repeats, session timeout 3000 ms: time until every slot of
                  the victim has a new actual owner; the victim is restarted
                  and the ring settles before the next repeat.
  SIGTERM         x repeats: the same for a clean shutdown.
  kill -9         x repeats, session timeout 6000 ms (the default).

"Re-owned" = every slot the victim owned has an /owners/<slot> znode of a
survivor with its epoch written (the claim is complete). Measured three ways:
  zk stat   mtime of those znodes (ZooKeeper's own clock, the same machine's):
            exact, independent of polling;
  zk poll   the first 50 ms poll of the chroot that saw it;
  /ring     the first 50 ms poll of a survivor's /ring that saw it (the node
            caches /ring for ~1 s and refreshes its claims view on reconcile).
Also: when the victim's znodes vanished (session expiry, seen by the poll), and
each survivor's own `ownership_moves` "assigned" times.

Every event (join, leave, kill, SIGTERM) also gets: completed tasks per 250 ms
window (executor records), baseline rate (the median window of the seconds before
the event), minimum window, time below 80% of baseline, and lateness (start - due)
of the tasks due around the handoff. Every task carries its scenario in its
payload, so executions twice and lost tasks (acked but not succeeded at the end)
are counted per scenario. Percentiles and medians are nearest-rank (harness/stats.py).

    .venv/bin/python -m loadtest.bench_cluster                  # ~2.5-3 minutes
    .venv/bin/python -m loadtest.bench_cluster --repeats 1 --rate 300
    .venv/bin/python -m loadtest.bench_cluster --only ring-model

Node logs are kept in a temporary directory printed at the end (and named in
the report). Writes loadtest/reports/bench_cluster.md and .json (--report-dir,
--report-name).
"""
from __future__ import annotations

import argparse
import datetime as dt
import signal
import time
from typing import Any

from harness.stack import StackEndpoints
from loadtest.bench import report
from loadtest.bench.observe import machine_facts
from loadtest.bench.ring_model import ring_model
from loadtest.handoff.reporting import format_tables, render_report
from loadtest.handoff.scenario import ClusterBench, params_of
from loadtest.handoff.summary import observations, summarize


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="repeats of each re-own series (default 3)")
    p.add_argument("--rate", type=float, default=500.0, help="offered tasks/s (default 500)")
    p.add_argument("--batch", type=int, default=25, help="tasks per SubmitBatch (default 25)")
    p.add_argument("--load-threads", type=int, default=4)
    p.add_argument("--long-delay-share", type=float, default=0.2, help="share of tasks delayed 2-3 s (MySQL path)")
    p.add_argument("--max-in-flight", type=int, default=256, help="executor max_in_flight")
    p.add_argument("--session-ms", type=int, default=3000, help="ZooKeeper session timeout of the nodes (3000)")
    p.add_argument("--default-session-ms", type=int, default=6000,
                   help="the second kill -9 series' victim timeout (6000, taskring's default)")
    p.add_argument("--baseline-s", type=float, default=3.0, help="steady seconds before each event")
    p.add_argument("--after-s", type=float, default=3.0, help="seconds kept after each event settled")
    p.add_argument("--quiet-s", type=float, default=1.0,
                   help="seconds after the ring settled before the baseline starts (the last handoff's catch-up)")
    p.add_argument("--drain-timeout-s", type=float, default=60.0)
    p.add_argument("--ring-sets", type=int, default=200, help="name sets per family for the ring model")
    p.add_argument("--only", choices=["ring-model"], help="the ring model only (no cluster)")
    p.add_argument("--keep", action="store_true", help="keep the database, chroot and topics")
    report.add_report_options(p, "bench_cluster", rerender=True)
    args = p.parse_args(argv)
    if report.rerender_if_asked(args, render_report):
        return

    def on_term(signum, frame):  # SIGTERM: clean up like Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    t0 = time.time()
    result: dict[str, Any] = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                              "machine": machine_facts(StackEndpoints.from_env())}
    print("ring model ...", flush=True)
    result["ring_model"] = ring_model(args.ring_sets)
    if args.only != "ring-model":
        bench = ClusterBench(args)
        result.update(bench.run())
        bench.dips()
        result["events"] = bench.events
        summarize(result)
        result["observations"] = observations(result)
    else:
        result["params"] = params_of(args)
    result["seconds"] = time.time() - t0
    written = []
    if not args.no_report:
        command = report.command_line("loadtest.bench_cluster", argv)
        written = report.write(result, command, args.report_dir, args.report_name, render_report)
    print()
    print(format_tables(result))
    if result.get("observations"):
        print("\nObservations:\n" + "\n".join(f"- {o}" for o in result["observations"]))
    if result.get("logs"):
        print(f"\nnode logs: {result['logs']}")
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
