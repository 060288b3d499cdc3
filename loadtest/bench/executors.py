"""SDK executor processes that record every run of every task.

Each process is one `taskring.Executor` of the namespace with an async no-op handler
for every task type; the handler only records the run (task id, attempt, epoch, start
time, and the payload's `due_ms` and `phase` when the load put them there) and counts
it in a shared counter, so the load generator can tell cheaply when to ask MySQL. The
records are written to a JSON file per process when it stops, and read back by
`Executors.stop()`. With `handler_ms`, the handler then sleeps that long (asyncio.sleep,
holding its max_in_flight slot), so that executor capacity, not the node, bounds the rate.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import multiprocessing as mp
import pathlib
import time
from collections.abc import Iterable
from typing import Any

from harness.world import World
from loadtest.bench.env import NAMESPACE


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of one task, as its handler saw it."""
    task_id: str
    attempt: int
    epoch: int
    start_s: float            # unix time when the handler began
    due_ms: int | None        # payload["due_ms"], when the load generator set it
    phase: str | None         # payload["phase"], likewise
    task_type: str

    @property
    def start_ms(self) -> int:
        return int(self.start_s * 1000)


def executor_main(zk_hosts: str, namespace: str, task_types: list[str], max_in_flight: int, counter, ready,
                  stop, out_path: str, tls_dir: str | None = None, handler_ms: float = 0.0) -> None:
    """The body of an executor process (multiprocessing, spawn). `tls_dir`: serve mutual TLS
    with deploy/local/certs.sh's server certificate, requiring its CA's client certificate.
    `handler_ms`: each run sleeps this long after it is recorded, or its payload's `sleep_ms`
    (0: returns at once)."""
    import asyncio
    import logging
    logging.basicConfig(level=logging.WARNING)
    from taskring import Executor, executor_tls_credentials
    records: list[tuple[Any, ...]] = []

    async def noop(ctx) -> None:
        records.append((ctx.task_id, ctx.attempt, ctx.epoch, time.time(), ctx.payload.get("due_ms"),
                        ctx.payload.get("phase"), ctx.task_type))
        counter.value += 1

    async def sleeper(ctx) -> None:
        await noop(ctx)
        await asyncio.sleep(ctx.payload.get("sleep_ms", handler_ms) / 1000)   # a task may say how long

    # Two handlers, not one with a branch: the no-op stays the no-op other benchmarks measured.
    handler = sleeper if handler_ms > 0 else noop
    certs = pathlib.Path(tls_dir) if tls_dir else None
    credentials = (executor_tls_credentials(certs / "server.pem", certs / "server.key", certs / "ca.pem")
                   if certs else None)
    executor = Executor(namespace, zk_hosts=zk_hosts, max_in_flight=max_in_flight, credentials=credentials)
    for t in task_types:
        executor.add_handler(t, handler)
    executor.start()
    ready.set()
    stop.wait()
    executor.stop(grace_s=2)
    pathlib.Path(out_path).write_text(json.dumps(records))


class Executors:
    """`count` executor processes of `task_types`; start() waits until each is up, stop()
    stops them by PID and returns every run they recorded. stop() is safe before
    start() and twice (the second returns nothing). `handler_ms`: how long each run
    holds its slot (0, the default: a no-op)."""

    def __init__(self, world: World, task_types: list[str], count: int = 1, max_in_flight: int = 2_000,
                 namespace: str = NAMESPACE, out_dir: pathlib.Path | None = None, name: str = "bench-executor",
                 tls_dir: pathlib.Path | None = None, handler_ms: float = 0.0):
        ctx = mp.get_context("spawn")
        out_dir = out_dir or world.logs
        self.stop_event = ctx.Event()
        self.counters = [ctx.RawValue("q", 0) for _ in range(count)]
        self.readies = [ctx.Event() for _ in range(count)]
        self.outs = [out_dir / f"{name}-{i}.runs.json" for i in range(count)]
        self.procs = [ctx.Process(target=executor_main, name=f"{name}-{i}", daemon=True,
                                  args=(world.zk_hosts, namespace, task_types, max_in_flight, self.counters[i],
                                        self.readies[i], self.stop_event, str(self.outs[i]),
                                        str(tls_dir) if tls_dir else None, handler_ms))
                      for i in range(count)]
        self._stopped = False

    def start(self, timeout_s: float = 60.0) -> Executors:
        for p in self.procs:
            p.start()
        for i, ready in enumerate(self.readies):
            if not ready.wait(timeout_s):
                raise RuntimeError(f"executor {i} did not start within {timeout_s:.0f}s")
        return self

    @property
    def pids(self) -> list[int | None]:
        """None for a process not start()ed yet."""
        return [p.pid for p in self.procs]

    def executed(self) -> int:
        """Runs so far, all processes together."""
        return sum(c.value for c in self.counters)

    def stop(self, timeout_s: float = 30.0) -> list[Run]:
        """Stop every process (SIGTERM after `timeout_s`, SIGKILL 5 s later) and read its runs."""
        if self._stopped:
            return []
        self._stopped = True
        self.stop_event.set()
        runs: list[Run] = []
        for p, out in zip(self.procs, self.outs):
            if p.pid is None:
                continue
            p.join(timeout_s)
            if p.is_alive():
                p.terminate()
                p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
            try:
                runs += [Run(*r) for r in json.loads(out.read_text())]
            except (OSError, ValueError):
                pass          # killed before it wrote its runs
        return runs


def starts_by_task(runs: Iterable[Run]) -> dict[str, list[float]]:
    """{task_id: [start times of every run]} (duplicates included)."""
    starts: dict[str, list[float]] = collections.defaultdict(list)
    for r in runs:
        starts[r.task_id].append(r.start_s)
    return starts
