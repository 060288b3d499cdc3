"""What a no-op task costs the Python SDK's executor: CPU µs per task in the executor process.

A benchmark, not a test. The executor (`taskring.Executor`, no ZooKeeper) serves in this
process on 127.0.0.1 with one handler, ``async def noop(task): return None``; a client in
a separate process sends Execute calls of B deliveries shaped as a dispatcher sends them
(a task with an id, payload, creation time and timeout; lease fields set). The figure is
this process's CPU time (every thread: gRPC's own, the loop's, handler threads) between
the first call of a run and the last reply, divided by the tasks run: gRPC receive,
decoding, running, encoding the reply. The client's CPU is not in it. The median of R runs
is reported.

    .venv/bin/python -m loadtest.executor_cost                     # 3 runs of 20 calls of 1,000
    PYTHONPATH=/tmp/old .venv/bin/python -m loadtest.executor_cost  # another copy of the SDK
    .venv/bin/python -m loadtest.executor_cost --handler sync      # a `def` handler (threads)
    .venv/bin/python -m loadtest.executor_cost --transport stream  # messages on one Work stream

`PYTHONPATH=DIR` imports `taskring` from DIR/taskring instead of sdk/python (the first line
printed says which), to compare with another version of the SDK, e.g. the committed one:

    mkdir /tmp/old && git archive HEAD sdk/python/taskring | tar -x -C /tmp/old --strip-components=2

The box's other load moves the figure (CPU time of Python code grows when the other core
is busy); compare versions run back to back, alternately.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import pathlib
import statistics
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

TASK_TYPE = "noop"


def deliveries(pb: Any, batch: int, call: int) -> Any:
    """One ExecuteRequest of `batch` deliveries, as the dispatcher's ExecutorPool sends them."""
    now_ms = int(time.time() * 1000)
    return pb.ExecuteRequest(dispatcher_node="bench-node", deliveries=[
        pb.Delivery(
            task=pb.Task(task_id=f"0190a5c8-{call:04x}-7000-8000-{i:012x}", namespace="bench", task_type=TASK_TYPE,
                         payload_json='{"order_id":12345,"sku":"A-1"}', created_at="2030-01-01T00:00:00.000Z",
                         timeout_ms=30_000, max_retries=3, priority=pb.PRIORITY_NORMAL),
            attempt=1, epoch=7, timeout_ms=30_000, start_within_ms=60_000, start_by_unix_ms=now_ms + 3_600_000,
        )
        for i in range(batch)
    ])


def client(conn: Connection, address: str, calls: int, batch: int, runs: int, transport: str) -> None:
    """The dispatcher's side, in its own process: runs of `calls` Execute calls (or messages
    on one Work stream, each sent once the previous one's outcomes are all back), run by
    run as the server asks, each answered with the number of tasks that did not succeed."""
    import queue

    import grpc

    from taskring.wire import pb, pb_grpc

    requests = [deliveries(pb, batch, c) for c in range(calls)]
    with grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20),
                                                 ("grpc.max_send_message_length", 64 << 20)]) as channel:
        stub = pb_grpc.ExecutorServiceStub(channel)
        if transport == "stream":
            outbox: queue.Queue[Any] = queue.Queue()
            replies = stub.Work(iter(outbox.get, None))

            def execute(req: Any, timeout: float) -> Any:
                outbox.put(req)
                got = pb.ExecuteResponse()
                while len(got.outcomes) < len(req.deliveries):
                    got.outcomes.extend(next(replies).outcomes)
                return got
        else:
            execute = stub.Execute
        for req in requests[:3]:  # warm-up: connection, first-call paths, thread start
            execute(req, timeout=60)
        conn.send("warm")
        for _ in range(runs):
            conn.recv()
            failed = 0
            for req in requests:
                resp = execute(req, timeout=60)
                failed += sum(o.kind != pb.OUTCOME_KIND_SUCCEEDED for o in resp.outcomes)
                failed += len(req.deliveries) - len(resp.outcomes)
            conn.send(failed)
        if transport == "stream":
            outbox.put(None)


def make_executor(kind: str, max_in_flight: int) -> Any:
    from taskring import Executor

    ex = Executor("bench", zk_hosts=None, max_in_flight=max_in_flight)
    if kind == "async":
        async def noop(task: Any) -> None:
            return None

        ex.add_handler(TASK_TYPE, noop)
    else:
        def noop_sync(task: Any) -> None:
            return None

        ex.add_handler(TASK_TYPE, noop_sync)
    return ex


def answer(conn: Connection, proc: Any, timeout_s: float = 120.0) -> Any:
    """The client's next message; fails fast if the client died instead."""
    deadline = time.monotonic() + timeout_s
    while not conn.poll(0.2):
        if not proc.is_alive():
            raise RuntimeError(f"the client exited with code {proc.exitcode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no word from the client in {timeout_s:.0f} s")
    return conn.recv()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20, help="Execute calls per run")
    p.add_argument("--batch", type=int, default=1000, help="deliveries per call")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--transport", choices=("call", "stream"), default="call",
                   help="one Execute call per batch, or one message per batch on a Work stream")
    p.add_argument("--handler", choices=("async", "sync"), default="async")
    p.add_argument("--max-in-flight", type=int, default=64)
    args = p.parse_args(argv)
    import taskring

    print(f"taskring from {pathlib.Path(taskring.__file__).parent}; {args.handler} no-op handler, "
          f"{args.runs} runs of {args.calls} {args.transport}s of {args.batch} deliveries")
    ex = make_executor(args.handler, args.max_in_flight)
    ex.start()
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=client, daemon=True,
                       args=(theirs, ex.address, args.calls, args.batch, args.runs, args.transport))
    proc.start()
    per_task: list[float] = []
    try:
        answer(ours, proc)
        tasks = args.calls * args.batch
        for run in range(args.runs):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            ours.send("go")
            failed = answer(ours, proc)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            if failed:
                raise RuntimeError(f"{failed} tasks did not succeed")
            per_task.append(cpu / tasks * 1e6)
            print(f"run {run + 1}: {per_task[-1]:6.2f} µs CPU per task, {tasks / wall:,.0f} tasks/s")
        proc.join(30)
    finally:
        if proc.is_alive():
            proc.kill()
        ex.stop(grace_s=1)
    print(f"executor CPU per task (median of {args.runs}): {statistics.median(per_task):.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
