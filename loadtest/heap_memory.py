"""Memory per pending task held in a node's ETA heap.

A benchmark, not a test, and it needs no servers. It fills an EtaHeap the way a node
does, one Due per Kafka message (the QueuedTask of a no-op task, decoded as
Engine._take_kafka decodes it), and reads the process's resident memory before and
after: everything one held task costs (the decoded protobuf task in its arena, the
Due, the heap entry and tuple), whatever allocator it came from.

    .venv/bin/python loadtest/heap_memory.py                 # 1,000,000 tasks
    .venv/bin/python loadtest/heap_memory.py --n 200000 --payload-bytes 500

Prints the figure and writes loadtest/reports/heap_memory.md and .json.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dispatcher.due import KAFKA, Due  # noqa: E402
from dispatcher.heap import EtaHeap  # noqa: E402
from dispatcher.log.codec import decode_queued, queued_message  # noqa: E402
from taskring.wire import pb  # noqa: E402

REPORTS = REPO / "loadtest" / "reports"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def message_of(i: int, payload_bytes: int) -> bytes:
    payload = json.dumps({"i": i, "pad": "x" * max(0, payload_bytes - 20)}, separators=(",", ":"))
    task = pb.Task(task_id=f"0193a0c4-7d2e-7000-8000-{i:012d}", namespace="bench", task_type=f"noop-{i % 32}",
                   payload_json=payload, timeout_ms=30_000, max_retries=3, priority=pb.PRIORITY_NORMAL,
                   schedule_time="2030-01-01T00:00:00.000Z", created_at="2030-01-01T00:00:00.000Z",
                   retry_policy=pb.RetryPolicy(initial_backoff_ms=1000, max_backoff_ms=60_000, multiplier=2.0))
    return queued_message("t.normal", task, i % 16, 1, 1_900_000_000_000 + i).value


def measure(n: int, payload_bytes: int) -> dict:
    messages = [message_of(i, payload_bytes) for i in range(n)]   # what Kafka hands over, not counted
    gc.collect()
    before = rss_bytes()
    heap: EtaHeap[Due] = EtaHeap(n + 1)
    t0 = time.perf_counter()
    for offset, value in enumerate(messages):
        q = decode_queued(value)
        heap.push(q.due_at_ms, q.task.priority, offset % 16, Due(task=q.task, slot=offset % 16, attempt=q.attempt,
                                                               due_ms=q.due_at_ms, source=KAFKA, epoch=1,
                                                               topic="t.normal", offset=offset))
    fill_s = time.perf_counter() - t0
    gc.collect()
    after = rss_bytes()
    assert len(heap) == n
    return {"n": n, "payload_bytes": payload_bytes, "queued_task_bytes": len(messages[0]),
            "rss_growth_bytes": after - before, "bytes_per_task": (after - before) / n,
            "fill_us_per_task": fill_s / n * 1e6}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--payload-bytes", type=int, default=20, help="payload_json size of each task (20: a no-op's)")
    args = p.parse_args()
    result = measure(args.n, args.payload_bytes)
    text = (f"# Memory per pending task in the ETA heap\n\n"
            f"`python loadtest/heap_memory.py {' '.join(sys.argv[1:])}`: {result['n']:,} tasks held (a"
            f" {result['queued_task_bytes']}-byte QueuedTask each, payload {result['payload_bytes']} bytes):"
            f" resident memory grew {result['rss_growth_bytes'] / 1e6:,.1f} MB, **{result['bytes_per_task']:,.0f}"
            f" bytes per task**; decoding and pushing took {result['fill_us_per_task']:.1f} us per task.\n")
    (REPORTS / "heap_memory.md").write_text(text)
    (REPORTS / "heap_memory.json").write_text(json.dumps(result, indent=1))
    print(text)


if __name__ == "__main__":
    main()
