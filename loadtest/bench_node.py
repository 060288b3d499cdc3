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
executors.py); this process is the load generator (bench/load.py). The run is
loadtest/endtoend/scenario.py, the report endtoend/reporting.py. Percentiles are
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
import signal

from loadtest.bench import report
from loadtest.bench.env import (
    add_stack_options,
)
from loadtest.bench.profile import PROFILES
from loadtest.endtoend.reporting import format_report, print_summary
from loadtest.endtoend.scenario import NodeBench

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
