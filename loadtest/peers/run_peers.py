"""Celery + Redis and Dramatiq + Redis on a no-op workload, measured the way loadtest/bench_node.py measures taskring.

A benchmark, not a test: nothing here passes or fails. For each system, one after the other, it starts a private
`redis-server` (redis_server.RedisServer: a free 127.0.0.1 port, a temporary directory, no persistence), the
system's worker as a separate process, warms it up, and runs two phases with this process as the load generator:

  Phase A  throughput: N no-op tasks enqueued as fast as one producer can, in batches (Celery: one producer
           held per batch, `apply_async(producer=...)` per task, about 15% faster here than `group(sigs)
           .apply_async()`, which --celery-enqueue group selects; both publish one message per task, kombu's
           Redis transport has no bulk publish. Dramatiq: `group(messages).run()` per batch, which is
           `broker.enqueue` per message: Dramatiq has no bulk enqueue either). Celery's `chunks` is not used: it
           would make one message of many calls, and this measures a message per task.
           *accepted tasks/s* = N / (first enqueue call to the last one returned); *completed tasks/s* =
           N / (first enqueue call to the start of the last task executed). The pickup
           latency of this phase (start - the enqueue time of the task's batch) is queueing under saturation.
  Phase B  pickup latency at a moderate fixed rate (--rate tasks/s for --seconds), one task per call (Celery
           `apply_async`, Dramatiq `broker.enqueue`, the calls behind `delay()` and `send()`), each carrying the
           time.time() taken just before its call: pickup = the task's start - that time; p50/p99/max.

How a task's execution is known: the no-op task's whole body is StartRecorder.record(phase, seq, enqueued_at),
which takes time.time() and appends a tuple to an in-process deque (about 1 us, measured in each run as
`record_cost_us`); a daemon thread in each worker process pushes the deque every 20 ms to the Redis list
`peers:starts:<phase>` with one pipelined RPUSH. The runner polls LLEN until all N records are in and then reads
them: missing or duplicated sequence numbers are counted, and the start times give the figures above. The start
of a no-op is its end, give or take that microsecond.

CPU: utime + stime from /proc/<pid>/stat at the start and the end of each phase, for the worker (its main process
and every descendant), redis-server, and this process (the load generator), and the machine's busy time from
/proc/stat; reported as CPU microseconds per task. "everything else" is the machine's busy time less those: on a
shared machine, other people's work. The phase's window runs to when the last record was seen (up to ~40 ms after
the last task ran).

Run from the repository root with the project venv (needs `redis-server` on PATH and
`pip install -r loadtest/peers/requirements.txt`), one benchmark at a time (2 shared cores):

    .venv/bin/python -m loadtest.peers.run_peers                          # N=50,000, 200/s x 10 s, both systems
    .venv/bin/python -m loadtest.peers.run_peers --n 2000 --rate 100 --seconds 3 --no-report   # a quick check
    .venv/bin/python -m loadtest.peers.run_peers --systems dramatiq --dramatiq-processes 2 --dramatiq-threads 4

It prints a markdown table and writes loadtest/reports/peers.md and peers.json (--report-name, --no-report).
From Python: `from loadtest.peers.run_peers import run_peers; run_peers(20_000, 200, 10)` returns the same dict
that peers.json holds.

Worker configurations (the defaults; --celery-pool/--celery-concurrency, --dramatiq-processes/--dramatiq-threads
change them). Celery: `--pool=solo`, one process. With prefork the parent process alone (kombu's Redis consumer
plus the pipe hand-off to the children and back) spent more CPU per task than the whole solo worker, and ran
2-3 times fewer tasks per second on 2 cores; the threads pool was slower still (the GIL, and the same hand-off).
Dramatiq: `--processes 2 --threads 8`, its own defaults on a 2-core machine; it kept up with the producer (no
drain), 1 process did as well within the noise, and 2 threads per process were slower (its prefetch is 2 per
thread).

Reading it: accepted tasks/s is what a producer sees (the enqueue calls return); completed tasks/s is what the
workers sustain while the producer shares the 2 cores with them; the drain after the last enqueue says how far
the workers fell behind. Phase B's pickup is the latency of a worker that is not saturated: for Dramatiq's Redis
broker it includes the consumer's idle polling (it sleeps with backoff up to 1 s when the queue is empty); for
Celery's it is kombu's BRPOP wake-up plus the hand-off to a pool child. CPU per task, summed over worker, Redis
and load generator, is the cost of a task on this machine; taskring's figures in bench_node.md are per task too.
"""
from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from typing import Any

from loadtest.bench import report
from loadtest.peers.model import SYSTEMS, PeersConfig
from loadtest.peers.phases import run_peers
from loadtest.peers.reporting import format_report, format_table

# ---------------------------------------------------------------- the command line

def overall_timeout_s(cfg: PeersConfig) -> int:
    """An upper bound for the whole run, after which main() stops it (and cleans up) whatever it is doing."""
    per_system = cfg.start_timeout_s + 2 * cfg.drain_timeout_s + cfg.seconds + cfg.drain_timeout_s + 90
    return int(per_system * len(cfg.systems))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = PeersConfig()
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--n", type=int, default=d.n, help=f"phase A tasks (default {d.n:,})")
    p.add_argument("--rate", type=float, default=d.rate, help=f"phase B tasks/s (default {d.rate:g})")
    p.add_argument("--seconds", type=float, default=d.seconds, help=f"phase B duration (default {d.seconds:g} s)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, from: celery,dramatiq")
    p.add_argument("--batch", type=int, default=d.batch, help=f"phase A tasks per batch (default {d.batch:,})")
    p.add_argument("--warmup", type=int, default=d.warmup, help=f"warm-up tasks (default {d.warmup})")
    p.add_argument("--celery-pool", choices=["prefork", "threads", "solo"], default=d.celery_pool)
    p.add_argument("--celery-concurrency", type=int, default=d.celery_concurrency)
    p.add_argument("--celery-prefetch", type=int, default=d.celery_prefetch, help="--prefetch-multiplier")
    p.add_argument("--celery-enqueue", choices=["group", "loop"], default=d.celery_enqueue,
                   help="phase A: group(...).apply_async() per batch, or apply_async(producer=...) in a loop")
    p.add_argument("--dramatiq-processes", type=int, default=d.dramatiq_processes)
    p.add_argument("--dramatiq-threads", type=int, default=d.dramatiq_threads)
    p.add_argument("--start-timeout-s", type=float, default=d.start_timeout_s)
    p.add_argument("--drain-timeout-s", type=float, default=d.drain_timeout_s,
                   help="longest wait for a phase's tasks to have run (and for phase A's enqueueing)")
    p.add_argument("--stall-timeout-s", type=float, default=d.stall_timeout_s,
                   help="give up waiting when no task has run for this long")
    p.add_argument("--redis-server", default=d.redis_server, help="the redis-server binary")
    report.add_report_options(p, "peers")
    args = p.parse_args(argv)
    args.systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        p.error(f"--systems: unknown {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if args.n <= 0 or args.batch <= 0 or args.rate <= 0 or args.seconds <= 0 or args.warmup <= 0:
        p.error("--n, --batch, --rate, --seconds and --warmup must be positive")
    return args


class RunTimeout(BaseException):
    """The whole run's time limit: a BaseException, so that run_system's `except Exception` lets it through."""


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    options = {f.name: getattr(args, f.name) for f in dataclasses.fields(PeersConfig)
               if f.name not in ("n", "rate", "seconds", "systems")}
    cfg = PeersConfig(n=args.n, rate=args.rate, seconds=args.seconds, systems=args.systems, **options)

    def on_term(signum: int, frame: Any) -> None:  # SIGTERM: unwind like Ctrl-C, so that cleanup runs
        raise KeyboardInterrupt

    def on_alarm(signum: int, frame: Any) -> None:
        raise RunTimeout(f"the whole run took over {overall_timeout_s(cfg)} s")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(overall_timeout_s(cfg))
    command = report.command_line("loadtest.peers.run_peers", argv)
    try:
        result = run_peers(cfg.n, cfg.rate, cfg.seconds, cfg.systems, **options)
    finally:
        signal.alarm(0)
    print()
    print(format_table(result))
    print()
    print(f"versions: {result['versions']}; record() {result['record_cost_us']} us per call")
    report.publish(args, result, command, format_report)
    if not all(s["complete"] for s in result["systems"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
