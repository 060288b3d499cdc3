"""Memory per pending task held in a node's ETA heap.

A benchmark, not a test, and it needs no servers. It fills an EtaHeap the way a node
does, one Due per Kafka message (the QueuedTask of a no-op task due a minute later,
made into a Due by due_of_message, as Engine._take_kafka does), and reads the
process's resident memory before and after: everything one held task costs (its
envelope's bytes, its id, the Due, the heap entry and its tuple), whatever allocator
it came from.

    .venv/bin/python -m loadtest.heap_memory                 # 1,000,000 tasks
    .venv/bin/python -m loadtest.heap_memory --n 200000 --payload-bytes 500

Prints the figure and writes loadtest/reports/heap_memory.md and .json.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import subprocess
import sys
import time

from dispatcher.base.config import NodeConfig
from dispatcher.engine.due import Due, due_of_message
from dispatcher.engine.heap import EtaHeap
from dispatcher.log.codec import queued_message
from loadtest.bench import report
from loadtest.bench.observe import process_rss
from taskring.wire import pb

REPO = pathlib.Path(__file__).resolve().parents[1]


def rss_bytes() -> int:
    rss = process_rss(os.getpid())
    assert rss is not None  # this process's own
    return rss


def message_of(i: int, payload_bytes: int) -> bytes:
    payload = json.dumps({"i": i, "pad": "x" * max(0, payload_bytes - 20)}, separators=(",", ":"))
    task = pb.Task(task_id=f"0193a0c4-7d2e-7000-8000-{i:012d}", namespace="bench", task_type=f"noop-{i % 32}",
                   payload_json=payload, timeout_ms=30_000, max_retries=3, priority=pb.PRIORITY_NORMAL,
                   schedule_time="2030-01-01T00:00:00.000Z", created_at="2030-01-01T00:00:00.000Z",
                   retry_policy=pb.RetryPolicy(initial_backoff_ms=1000, max_backoff_ms=60_000, multiplier=2.0))
    return queued_message("t.normal", task, i % 16, 1, 1_900_000_000_000 + i).value


def measure(n: int, payload_bytes: int, compact: bool, decoded: int) -> dict:
    messages = [message_of(i, payload_bytes) for i in range(n)]   # what Kafka hands over, not counted
    gc.collect()
    before = rss_bytes()
    heap: EtaHeap[Due] = EtaHeap(n + 1)
    t0 = time.perf_counter()
    now_ms = 1_900_000_000_000 - 60_000   # every task due a minute or more later: it waits in the heap
    for offset, value in enumerate(messages):
        due = due_of_message(value, slot=offset % 16, epoch=1, topic="t.normal", offset=offset, now_ms=now_ms,
                             compact=compact and offset >= decoded)
        heap.push(due.due_ms, due.priority, due.slot, due)
    fill_s = time.perf_counter() - t0
    gc.collect()
    after = rss_bytes()
    assert len(heap) == n
    return {"n": n, "payload_bytes": payload_bytes, "compact": compact, "decoded_first": decoded if compact else n,
            "queued_task_bytes": len(messages[0]),
            "rss_growth_bytes": after - before, "bytes_per_task": (after - before) / n,
            "fill_us_per_task": fill_s / n * 1e6}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--payload-bytes", type=int, default=20, help="payload_json size of each task (20: a no-op's)")
    p.add_argument("--variant", choices=["decoded", "node"],
                   help="measure one variant in this process and print its JSON (default: both, each in a process)")
    report.add_report_options(p, "heap_memory")
    args = p.parse_args(argv)
    command = report.command_line("loadtest.heap_memory", argv)
    decoded_capacity = NodeConfig(node_id="heap-memory").heap_decoded_capacity
    if args.variant:
        print(json.dumps(measure(args.n, args.payload_bytes, args.variant == "node", decoded_capacity)))
        return
    results = {}
    for variant in ("decoded", "node"):
        out = subprocess.run([sys.executable, "-m", "loadtest.heap_memory", "--n", str(args.n),
                              "--payload-bytes", str(args.payload_bytes), "--variant", variant],
                             capture_output=True, text=True, check=True, timeout=600, cwd=REPO)
        results[variant] = json.loads(out.stdout)
    d, nd = results["decoded"], results["node"]
    text = (f"# Memory per pending task in the ETA heap\n\n"
            f"`{command}`: {args.n:,} Kafka-path tasks held, due a"
            f" minute or more later (a {d['queued_task_bytes']}-byte QueuedTask each, payload {args.payload_bytes}"
            " bytes), each variant in a fresh process; the growth of resident memory:\n\n"
            "| variant | MB | bytes per task | us per task to decode and push |\n| --- | ---: | ---: | ---: |\n"
            f"| every task decoded (pb.Task) | {d['rss_growth_bytes'] / 1e6:,.0f} | {d['bytes_per_task']:,.0f} |"
            f" {d['fill_us_per_task']:.1f} |\n"
            f"| the node's policy: the first {decoded_capacity:,} decoded, the rest held as bytes"
            f" (heap_decoded_capacity) | {nd['rss_growth_bytes'] / 1e6:,.0f} | {nd['bytes_per_task']:,.0f} |"
            f" {nd['fill_us_per_task']:.1f} |\n")
    result = {"n": args.n, "variants": results, "bytes_per_task": nd["bytes_per_task"],
              "rss_growth_bytes": nd["rss_growth_bytes"]}
    report.print_and_publish(args, result, command, text)


if __name__ == "__main__":
    main()
