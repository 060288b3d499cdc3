"""The load generators, and what they were told.

- `submit_batches`: a list of prepared SubmitBatch calls, sent as fast as a few
  concurrent submitters (coroutines of one AsyncClient per target) can: throughput.
- `warm_up`: a thousand tasks through before anything is measured.
- `submit_spread`: a plan of (band, delay) tasks in batches spread evenly over a
  number of seconds: timing at a moderate rate.
- `PacedLoad`: a process that offers a steady rate (tasks/s) on an absolute schedule
  from a few sender threads, round-robin over targets that can change while it runs
  (a cluster losing and gaining nodes), each task carrying its due time and the
  current phase in its payload.
- `run_locust`: locustfile.py, headless, against a node.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import importlib.util
import json
import multiprocessing as mp
import os
import pathlib
import queue
import random
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from harness.stats import summarize_ms
from loadtest.bench.env import NAMESPACE
from loadtest.bench.store import Counts, wait_done

if TYPE_CHECKING:  # taskring is imported where it is used (not in every child process)
    from harness.world import World
    from taskring import SubmitResult, TaskSpec

REPO = pathlib.Path(__file__).resolve().parents[2]
WARMUP_TASKS = 1_000


@dataclasses.dataclass
class Accepted:
    task_id: str
    due_ts: float          # SubmitResult.due_at as unix time
    ack_ts: float          # when this process got the batch's response
    band: str              # immediate | kafka | mysql (what we meant)
    delay_ms: int


def make_specs(n: int, task_types: list[str], delays_ms: list[int] | None = None, seq0: int = 0,
               namespace: str = NAMESPACE, unique_keys: str | None = None, priority: str = "normal"
               ) -> list[TaskSpec]:
    """n no-op tasks over the task types in turn, payload {"seq": i}, each with its delay (0: none);
    with `unique_keys`, each task also carries its own unique key `<unique_keys>:<seq>`; all of
    them of `priority` (low, normal, high)."""
    from taskring import TaskSpec
    out = []
    for i in range(n):
        delay = None if not delays_ms or not delays_ms[i] else dt.timedelta(milliseconds=delays_ms[i])
        out.append(TaskSpec(namespace=namespace, task_type=task_types[(seq0 + i) % len(task_types)],
                            payload={"seq": seq0 + i}, delay=delay, priority=priority,
                            unique_key=None if unique_keys is None else f"{unique_keys}:{seq0 + i}"))
    return out


def _due_ts(r: SubmitResult) -> float:
    """When an accepted task is due, epoch seconds (the server sets due_at on every accepted task)."""
    if r.due_at is None:
        raise AssertionError(f"task {r.task_id}: accepted without a due time")
    return r.due_at.timestamp()


async def submit_batches(target: str | list[str], batches: list[list[TaskSpec]], submitters: int) -> dict[str, Any]:
    """`submitters` coroutines take the next batch and SubmitBatch it; with several targets
    (nodes), submitter k sends to target k mod len(targets)."""
    from taskring import AsyncClient
    accepted: list[Accepted] = []
    errors: list[str] = []
    rpc_ms: list[float] = []
    next_batch = iter(range(len(batches)))
    targets = [target] if isinstance(target, str) else target
    clients = [AsyncClient(t, rpc_timeout_s=120.0) for t in targets]
    t_first = time.time()

    async def submitter(client) -> None:
        for i in next_batch:
            t0 = time.time()
            try:
                results = await client.submit_batch(batches[i])
            except Exception as exc:
                errors.append(f"batch {i}: {type(exc).__name__}: {exc}")
                continue
            t1 = time.time()
            rpc_ms.append((t1 - t0) * 1000)
            accepted.extend(Accepted(r.task_id, _due_ts(r), t1, "immediate", 0) for r in results if not r.duplicate)

    try:
        await asyncio.gather(*(submitter(clients[k % len(clients)]) for k in range(submitters)))
    finally:
        for client in clients:
            await client.close()
    t_last_ack = max((a.ack_ts for a in accepted), default=time.time())
    return {"accepted": accepted, "errors": errors, "t_first_send": t_first, "t_last_ack": t_last_ack,
            "rpc_ms": summarize_ms(rpc_ms)}


async def submit_spread(target: str, plan: list[tuple[str, int]], task_types: list[str], batch: int,
                        spread_s: float, seq0: int) -> dict[str, Any]:
    """The plan's (band, delay_ms) tasks in batches of `batch`, evenly over `spread_s` seconds."""
    from taskring import AsyncClient
    accepted: list[Accepted] = []
    errors: list[str] = []
    client = AsyncClient(target, rpc_timeout_s=60.0)
    chunks = [plan[i:i + batch] for i in range(0, len(plan), batch)]
    interval = spread_s / max(1, len(chunks))
    t_first = time.time()
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        for k, chunk in enumerate(chunks):
            await asyncio.sleep(max(0.0, start + k * interval - loop.time()))
            specs = make_specs(len(chunk), task_types, [d for _b, d in chunk], seq0 + k * batch)
            try:
                results = await client.submit_batch(specs)
            except Exception as exc:
                errors.append(f"batch {k}: {type(exc).__name__}: {exc}")
                continue
            t1 = time.time()
            accepted.extend(Accepted(r.task_id, _due_ts(r), t1, band, delay)
                            for r, (band, delay) in zip(results, chunk) if not r.duplicate)
    finally:
        await client.close()
    return {"accepted": accepted, "errors": errors, "t_first_send": t_first, "t_last_ack": time.time()}


def warm_up(world: World, target: str, executors: Counts, task_types: list[str], n: int = WARMUP_TASKS
            ) -> dict[str, Any]:
    """n tasks through (two SubmitBatch calls) until they are `succeeded`, so that channels,
    consumers and the executors' registrations are up before anything is measured."""
    batches = [make_specs(n // 2, task_types, seq0=i * (n // 2)) for i in range(2)]
    warm = asyncio.run(submit_batches(target, batches, 2))
    done = wait_done(world, executors, n, warm["t_first_send"], len(warm["accepted"]), 60, "warm-up")
    if not done["complete"]:
        raise RuntimeError(f"the warm-up did not complete: {done}")
    return {"tasks": n, "s": round(done["last_completion_ts"] - warm["t_first_send"], 2)}


# ---------------------------------------------------------------- a steady rate, from a process of its own

@dataclasses.dataclass
class _LoadState:
    """What the load process's command thread changes (under its lock) and its senders read."""
    targets: list[str]
    phase: str


def paced_main(targets: list[str], rate: float, types: list[str], long_delay_share: float, threads: int,
               batch: int, cmds, counter, out_path: str, seed: int, namespace: str) -> None:
    """The body of the load process: submits `rate` tasks/s in batches, paced on an absolute
    schedule, round-robin over the current targets. Commands: ("targets", [...]),
    ("phase", name), ("stop",). Writes what was acknowledged to out_path."""
    from taskring import Client, TaskSpec

    state = _LoadState(targets=list(targets), phase="warmup")
    lock = threading.Lock()
    stop = threading.Event()
    acked: list[tuple[str, str, int, int]] = []          # task_id, phase, submit_ms, due_ms
    unknown: list[tuple[str, str]] = []
    errors: Counter = Counter()
    error_detail: list[tuple[int, str, str, int]] = []     # (time_ms, target, error, tasks)
    rpc_ms: list[float] = []
    behind: Counter[int] = Counter()                     # sender -> tasks skipped (fell behind)

    def commands():
        while not stop.is_set():
            try:
                cmd = cmds.get(timeout=0.1)
            except queue.Empty:
                continue
            with lock:
                if cmd[0] == "targets":
                    state.targets = list(cmd[1])
                elif cmd[0] == "phase":
                    state.phase = cmd[1]
                elif cmd[0] == "stop":
                    stop.set()

    def sender(k: int) -> None:
        rng = random.Random(seed * 100 + k)
        clients: dict[str, Client] = {}
        period = batch * threads / rate
        nxt = time.monotonic() + k * period / threads
        i = k
        try:
            while not stop.is_set():
                now = time.monotonic()
                if nxt > now:
                    stop.wait(nxt - now)
                    continue
                if now - nxt > 1.0:                      # fell behind by over a second: skip, and count it
                    skipped = int((now - nxt) / period)
                    behind[k] += skipped * batch
                    nxt += skipped * period
                nxt += period
                with lock:
                    tg, phase = state.targets, state.phase
                if not tg:
                    continue
                target = tg[i % len(tg)]
                i += 1
                client = clients.get(target)
                if client is None:
                    client = clients[target] = Client(target, rpc_timeout_s=5)
                now_ms = int(time.time() * 1000)
                specs, meta = [], []
                for _ in range(batch):
                    if rng.random() < long_delay_share:
                        delay = rng.uniform(2.0, 3.0)                       # MySQL path
                    else:
                        delay = rng.choice([0.0, 0.0, rng.uniform(0.1, 1.0)])  # Kafka path
                    due = now_ms + int(delay * 1000)
                    tid = str(uuid.uuid4())
                    specs.append(TaskSpec(namespace, rng.choice(types), {"due_ms": due, "phase": phase},
                                          task_id=tid, delay=delay))
                    meta.append((tid, phase, now_ms, due))
                t0 = time.perf_counter()
                try:
                    results = client.submit_batch(specs)
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                    error_detail.append((now_ms, target, f"{type(exc).__name__}: {str(exc)[:160]}", len(meta)))
                    unknown.extend((m[0], m[1]) for m in meta)
                    continue
                rpc_ms.append((time.perf_counter() - t0) * 1000)
                ok = {r.task_id for r in results}
                acked.extend(m for m in meta if m[0] in ok)
                counter.value += len(ok)
        finally:
            for c in clients.values():
                try:
                    c.close()
                except Exception:
                    pass

    threading.Thread(target=commands, daemon=True).start()
    workers = [threading.Thread(target=sender, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    pathlib.Path(out_path).write_text(json.dumps({
        "acked": acked, "unknown": unknown, "errors": dict(errors), "error_detail": error_detail, "rpc_ms": rpc_ms,
        "skipped_behind": sum(behind.values())}))


class PacedLoad:
    """The load process (paced_main), steered while it runs. stop() is safe before start() and twice."""

    def __init__(self, targets: list[str], rate: float, types: list[str], *, long_delay_share: float, threads: int,
                 batch: int, out_path: pathlib.Path, seed: int = 11, namespace: str = NAMESPACE):
        ctx = mp.get_context("spawn")
        self.out_path = out_path
        self.cmds = ctx.Queue()
        self.counter = ctx.Value("q", 0, lock=False)
        self.proc = ctx.Process(target=paced_main, name="bench-load",
                                args=(targets, rate, types, long_delay_share, threads, batch, self.cmds,
                                      self.counter, str(out_path), seed, namespace))

    def start(self) -> PacedLoad:
        self.proc.start()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    def acked(self) -> int:
        return self.counter.value

    def set_targets(self, targets: list[str]) -> None:
        self.cmds.put(("targets", list(targets)))

    def set_phase(self, phase: str) -> None:
        self.cmds.put(("phase", phase))

    def stop(self, timeout_s: float = 60.0) -> None:
        if self.proc.pid is None or not self.proc.is_alive():
            return
        self.cmds.put(("stop",))
        self.proc.join(timeout_s)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(5)

    def result(self) -> dict[str, Any]:
        """What the process wrote when it stopped: acked (task_id, phase, submit_ms, due_ms),
        unknown (task_id, phase: in a call that failed), errors, error_detail, rpc_ms, skipped_behind."""
        return json.loads(self.out_path.read_text())


# ---------------------------------------------------------------- Locust

LOCUST_MISSING = "locust is not installed (.venv/bin/pip install locust==2.47.0)"


def locust_argv() -> list[str] | None:
    """How to start Locust: `python -m locust`, run from the repository root (the cwd), so
    that a locustfile can import `loadtest.*` as a package (Locust itself puts only the
    locustfile's own folder on sys.path); None when locust is not installed."""
    return [sys.executable, "-m", "locust"] if importlib.util.find_spec("locust") else None

def run_locust(target: str, task_types: list[str], seconds: int, users: int, run_dir: pathlib.Path,
               namespace: str = NAMESPACE) -> dict[str, Any]:
    """locustfile.py, headless, `users` users for `seconds` against `target`: its exit code and summary."""
    exe = locust_argv()
    if not exe:
        return {"error": LOCUST_MISSING}
    env = dict(os.environ, TASKRING_TARGET=target, TASKRING_NAMESPACE=namespace,
               TASKRING_TASK_TYPES=",".join(task_types))
    cmd = [*exe, "-f", str(REPO / "loadtest" / "locustfile.py"), "--headless", "-u", str(users), "-r", str(users),
           "-t", f"{seconds}s", "--csv", str(run_dir / "locust"), "--only-summary"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=seconds + 90)
    # Locust's own summary table (printed at exit) is the final word; its CSV may be
    # written a moment before the last requests finish.
    return {"command": " ".join(["locust", "-f", "loadtest/locustfile.py", "--headless", "-u", str(users), "-r",
                                 str(users), "-t", f"{seconds}s"]),
            "returncode": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1),
            "output_tail": (proc.stdout + proc.stderr).splitlines()[-25:]}
