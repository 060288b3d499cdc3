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
  Raw      loadtest/raw_parts.py's measure_raw_parts for the same message size
           (the serialized QueuedTask of a no-op task, as the node produces it)
           and a similar N, in the same run, after the node has stopped:
           node / Kafka-raw and node / MariaDB-raw.
  Profile  top functions of the node by self and cumulative samples, CPU of every
           process and of the node's threads, and where the time goes.

Everything runs in a private world made for the run and removed after it: a
scratch MariaDB database (dispatcher.store.migrate), a ZooKeeper chroot, and
topics `<prefix>.{high,normal,low}` with 16 partitions. The node and the
executors are separate processes from this one (the load generator).

    .venv/bin/python loadtest/bench_node.py                  # N=50,000, about 35 s on a quiet machine
    .venv/bin/python loadtest/bench_node.py --n 20000 --report-name bench_node_n20000
    .venv/bin/python loadtest/bench_node.py --profile none --no-raw --no-report
    .venv/bin/python loadtest/bench_node.py --locust-s 20    # also run locustfile.py against the node
    .venv/bin/python loadtest/bench_node.py --serve 600      # just a node + executors, for Locust by hand

Run from the repository root with the project venv, one benchmark at a time
(2 shared cores). The default profile needs py-spy (`.venv/bin/pip install py-spy`,
not in pyproject's dev extra yet); `--profile none` runs without it. See
loadtest/README.md for how to read the figures.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import datetime as dt
import json
import multiprocessing as mp
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import TYPE_CHECKING, Any

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cluster.slots import slot_of  # noqa: E402
from harness.cgroup import CpuCap  # noqa: E402
from harness.demo import stop_nodes, wait_settled  # noqa: E402
from harness.processes import NodeProcess  # noqa: E402
from harness.stack import StackEndpoints  # noqa: E402
from harness.world import World, create_world, drop_world  # noqa: E402
from loadtest.raw_parts import format_table as raw_format_table  # noqa: E402
from loadtest.raw_parts import machine_facts, make_envelopes, measure_raw_parts  # noqa: E402

if TYPE_CHECKING:  # taskring is imported where it is used
    from taskring import SubmitResult

SLOTS = 16
NAMESPACE = "bench"
REPORTS_DIR = pathlib.Path(__file__).resolve().parent / "reports"


# ---------------------------------------------------------------- small helpers

def now_naive_utc(ts: float) -> dt.datetime:
    """A unix time as the naive UTC datetime MySQL DATETIME(3) columns hold."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(ts * 1000))


def naive_utc_to_ts(value: dt.datetime) -> float:
    return (value - dt.datetime(1970, 1, 1)).total_seconds()


def pct(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def summarize_ms(values: list[float]) -> dict[str, Any]:
    """p50/p90/p99/p99.9/max/min/mean of a list of milliseconds."""
    v = sorted(values)
    if not v:
        return {"count": 0}
    return {"count": len(v), "min": v[0], "p50": pct(v, 50), "p90": pct(v, 90), "p99": pct(v, 99),
            "p999": pct(v, 99.9), "max": v[-1], "mean": sum(v) / len(v)}


def spread_task_types(per_slot: int = 2, slots: int = SLOTS, namespace: str = NAMESPACE) -> list[str]:
    """Task types chosen so that every slot gets exactly `per_slot` of them: all tasks
    of one type share one slot (one partition, one poller), so a single type would
    measure one slot, not the node."""
    chosen: dict[int, list[str]] = collections.defaultdict(list)
    i = 0
    while any(len(chosen[s]) < per_slot for s in range(slots)):
        name = f"noop-{i}"
        s = slot_of(namespace, name, slots)
        if len(chosen[s]) < per_slot:
            chosen[s].append(name)
        i += 1
    return [t for s in range(slots) for t in chosen[s]]


def fmt(value: float | None, digits: int = 0, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}{unit}"


# ---------------------------------------------------------------- CPU accounting

def read_proc_stat_total() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return float(total - idle), float(total)


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{tid: (comm, cpu seconds)} of every thread of a process."""
    out: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            raw = pathlib.Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            comm = raw[raw.index("(") + 1:raw.rindex(")")]
            fields = raw.rsplit(")", 1)[1].split()
            out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, ValueError, IndexError):
            continue
    return out


def process_cpu_split(pid: int | None) -> tuple[float, float] | None:
    """(user, system) CPU seconds of a process, from /proc."""
    if pid is None:
        return None
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick
    except (OSError, ValueError, IndexError):
        return None


def stack_pids() -> dict[str, int]:
    """PIDs of the local stack's servers (deploy/local/stack.sh pid files), when readable."""
    pids = {}
    for name in ("mariadb", "kafka", "zookeeper"):
        try:
            pid = int((REPO / ".stack" / f"{name}.pid").read_text().split()[0])
            if pathlib.Path(f"/proc/{pid}/stat").exists():
                pids[name] = pid
        except (OSError, ValueError, IndexError):
            continue
    return pids


class CpuMeter:
    """CPU seconds of named processes and of the whole machine between two points."""

    def __init__(self, pids: dict[str, int | None]):
        self.pids = dict(pids)       # None: a process that did not start (its figures are None)
        self._t0: float | None = None
        self._m0: tuple[float, float] | None = None
        self._c0: dict[str, tuple[float, float] | None] = {}

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._m0 = read_proc_stat_total()
        self._c0 = {name: process_cpu_split(pid) for name, pid in self.pids.items()}

    def stop(self) -> dict[str, Any]:
        if self._t0 is None or self._m0 is None:
            raise RuntimeError("CpuMeter.stop() before start()")
        wall = time.perf_counter() - self._t0
        m1 = read_proc_stat_total()
        tick = os.sysconf("SC_CLK_TCK")
        busy_s = (m1[0] - self._m0[0]) / tick
        procs: dict[str, float | None] = {}
        system: dict[str, float | None] = {}
        for name, pid in self.pids.items():
            c1 = process_cpu_split(pid)
            c0 = self._c0.get(name)
            if c0 is None or c1 is None:
                procs[name] = system[name] = None
            else:
                procs[name] = round(c1[0] + c1[1] - c0[0] - c0[1], 2)
                system[name] = round(c1[1] - c0[1], 2)
        known = sum(v for v in procs.values() if v is not None)
        return {"wall_s": round(wall, 2), "cores": os.cpu_count(), "machine_busy_cpu_s": round(busy_s, 2),
                "machine_busy_pct_of_all_cores": round(100 * busy_s / (wall * (os.cpu_count() or 1)), 1),
                "process_cpu_s": procs, "process_system_cpu_s": system,
                "other_processes_cpu_s": round(busy_s - known, 2)}


# ---------------------------------------------------------------- the node process

NODE_ENV: dict[str, str] = {}
"""Extra environment of every node process (--node-env NAME=VALUE)."""


def start_node(world: World, run_dir: pathlib.Path, route_threshold_ms: int, log_level: str,
               cprofile_out: pathlib.Path | None = None, index: int | None = None) -> NodeProcess:
    """`taskring node --single` in the world (harness/processes.py), optionally under cProfile;
    with an `index`, one cluster node of several (ZooKeeper claims spread the slots)."""
    if world.topic_prefix is None:
        raise ValueError("start_node: the world needs topics of its own (create_world), not the node's default")
    suffix = "" if index is None else f"-{index}"
    env: dict[str, Any] = {"TASKRING_ROUTE_THRESHOLD_MS": str(route_threshold_ms), "TASKRING_LOG_LEVEL": log_level,
                           **NODE_ENV}
    return NodeProcess(world, f"bench-node-{world.topic_prefix.rsplit('-', 1)[-1]}{suffix}", single=index is None,
                       log_path=run_dir / f"node{suffix}.log",
                       python_args=["-m", "cProfile", "-o", str(cprofile_out)] if cprofile_out else (), **env).start()


def node_metrics(node: NodeProcess) -> str:
    try:
        return node.get_bytes("/metrics", 5.0).decode()
    except Exception as exc:
        return f"# could not read /metrics: {exc}"


def stack_from_args(args: argparse.Namespace) -> StackEndpoints:
    """The stack of the command line (its defaults: harness/stack.py's)."""
    zk_host, _, zk_port = args.zk.rpartition(":")
    kafka_host, _, kafka_port = args.kafka.rpartition(":")
    if not zk_host == kafka_host == args.mysql_host:
        raise SystemExit("bench_node: ZooKeeper, Kafka and MariaDB must be on one host (the local stack)")
    return dataclasses.replace(StackEndpoints.from_env(), host=args.mysql_host, zk_port=int(zk_port),
                               kafka_port=int(kafka_port), mysql_port=args.mysql_port, mysql_user=args.mysql_user)


# ---------------------------------------------------------------- executor processes

def executor_main(zk_hosts: str, task_types: list[str], max_in_flight: int, counter, ready, stop, conn) -> None:
    """The body of an executor process: an SDK Executor whose async no-op handler
    records (task_id, attempt, start time). The records go back over `conn` at the end."""
    import logging
    logging.basicConfig(level=logging.WARNING)
    from taskring import Executor
    starts: list[tuple[str, int, float]] = []

    async def noop(ctx) -> None:
        starts.append((ctx.task_id, ctx.attempt, time.time()))
        counter.value += 1

    executor = Executor(NAMESPACE, zk_hosts=zk_hosts, max_in_flight=max_in_flight)
    for t in task_types:
        executor.add_handler(t, noop)
    executor.start()
    ready.set()
    stop.wait()
    executor.stop(grace_s=2)
    conn.send(starts)
    conn.close()


class Executors:
    def __init__(self, world: World, task_types: list[str], count: int, max_in_flight: int):
        ctx = mp.get_context("spawn")
        self._ctx = ctx
        self.stop_event = ctx.Event()
        self.counters = [ctx.RawValue("q", 0) for _ in range(count)]
        self.readies = [ctx.Event() for _ in range(count)]
        self.pipes = [ctx.Pipe(duplex=False) for _ in range(count)]
        self.procs = [ctx.Process(target=executor_main, name=f"bench-executor-{i}", daemon=True,
                                  args=(world.zk_hosts, task_types, max_in_flight, self.counters[i],
                                        self.readies[i], self.stop_event, self.pipes[i][1]))
                      for i in range(count)]

    def start(self, timeout_s: float = 60.0) -> None:
        for p in self.procs:
            p.start()
        for i, ready in enumerate(self.readies):
            if not ready.wait(timeout_s):
                raise RuntimeError(f"executor {i} did not start within {timeout_s:.0f}s")

    @property
    def pids(self) -> list[int | None]:
        """None for a process not start()ed yet."""
        return [p.pid for p in self.procs]

    def executed(self) -> int:
        return sum(c.value for c in self.counters)

    def stop(self, timeout_s: float = 30.0) -> dict[str, list[float]]:
        """Stop them and gather {task_id: [start times]} (every start, duplicates included)."""
        self.stop_event.set()
        starts: dict[str, list[float]] = collections.defaultdict(list)
        for p, (recv, _send) in zip(self.procs, self.pipes):
            if p.pid is None:
                continue
            if recv.poll(timeout_s):
                try:
                    for task_id, _attempt, t in recv.recv():
                        starts[task_id].append(t)
                except EOFError:
                    pass
            p.join(10)
            if p.is_alive():
                p.terminate()
                p.join(5)
        return starts


# ---------------------------------------------------------------- py-spy

class PySpy:
    """`py-spy record` on a pid, raw (collapsed) output with thread names; stop with SIGINT.

    --nonblocking: py-spy does not pause the node for each sample (less overhead), and
    it tells idle threads from running ones by their real kernel state. Paused (the
    default), threads blocked in a queue, a lock or recv() were often counted as
    running, which with the node's ~40 mostly idle threads inflated the samples about
    four-fold compared with the CPU the node used."""

    def __init__(self, pid: int, out: pathlib.Path, rate: int, log: pathlib.Path, native: bool = False):
        self.pid, self.out, self.rate, self.log, self.native = pid, out, rate, log, native
        self.proc: subprocess.Popen | None = None

    @staticmethod
    def find() -> str | None:
        here = pathlib.Path(sys.executable).parent / "py-spy"
        return str(here) if here.exists() else shutil.which("py-spy")

    def start(self) -> None:
        exe = self.find()
        if exe is None:
            raise RuntimeError("py-spy not found (pip install py-spy), or use --profile cprofile")
        with open(self.log, "ab") as log:
            # Native stacks (C frames of protobuf, grpc, librdkafka) need the paused mode.
            mode = ["--native"] if self.native else ["--nonblocking"]
            self.proc = subprocess.Popen([exe, "record", "--pid", str(self.pid), "--rate", str(self.rate),
                                          "--threads", "--function", *mode, "--format", "raw",
                                          "--output", str(self.out)],
                                         stdout=log, stderr=subprocess.STDOUT)
        time.sleep(0.5)  # attach before the phase starts
        if self.proc.poll() is not None:
            raise RuntimeError(f"py-spy exited at once ({self.proc.returncode}): {self.log.read_text()[-2000:]}")

    @property
    def process_pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


# Where a sample's time is charged: by the file of its innermost frame (library) ...
LIBRARIES = [
    ("Python's cyclic GC (native stacks only)", re.compile(r"gc_collect|collect_generations|gc_collect_main")),
    ("grpc (grpc.aio, Cython, C core)", re.compile(r"grpc")),
    ("protobuf (upb C extension)", re.compile(r"google/protobuf|_pb2|_message\.abi3|upb_|PyUpb")),
    ("TLS/crypto (PyMySQL's SSL context per new connection)", re.compile(r"libssl|libcrypto|ssl\.py")),
    ("socket send/recv with MariaDB (much of it waiting)",
     re.compile(r"socket\.py|Connection\._write_bytes|sock_call_ex|sock_send|sock_recv")),
    ("PyMySQL", re.compile(r"pymysql/")),
    ("Kafka client (confluent_kafka, librdkafka)", re.compile(r"confluent_kafka|cimpl|rdkafka|rd_kafka")),
    ("kazoo (ZooKeeper)", re.compile(r"kazoo/")),
    ("asyncio", re.compile(r"asyncio/|selectors\.py")),
    ("threads, queues, futures", re.compile(r"threading\.py|queue\.py|concurrent/futures")),
    ("logging", re.compile(r"logging/")),
    ("prometheus_client", re.compile(r"prometheus_client")),
    ("our code: dispatcher/", re.compile(r"dispatcher/")),
    ("our code: cluster/, membership/", re.compile(r"cluster/|membership/")),
    ("our code: SDK (taskring/)", re.compile(r"taskring/")),
    ("json", re.compile(r"json/")),
    ("datetime, uuid, other stdlib", re.compile(r"datetime|uuid|\.py[:)]")),
]
# Native frames that say nothing about who asked for the work (libc, the interpreter,
# unresolved addresses): the sample is charged to the next frame out that does.
UNNAMED_NATIVE = re.compile(r"^0x[0-9a-fA-F]+ |\((libc|libpthread|libm|ld-linux|libpython[^)]*|python3[^)]*|libz)"
                            r"[.)]|\(.*\.so[^)]*\)$")
# In the paused (native) mode py-spy counts some blocked threads as running; a sample
# whose innermost Python frame is one of these waits and whose leaf is an unnamed native
# frame (a syscall, a lock) is dropped there.
WAITS = re.compile(r"^(_worker|Connection\._write_bytes|Condition\.wait|Event\.wait|EpollSelector\.select|"
                   r"_PollLikeSelector\.select|"
                   r"SocketIO\.readinto|Queue\.get|TaskProducer\._poll_loop|PartitionReader\.read|Mailbox\._run|"
                   r"Thread\.run|KafkaIntake\._run|ThreadingHTTPServer|BaseServer\.serve_forever|"
                   r"_select|SequentialThreadingHandler\.|_connection|_read_socket|_poll_wrapper|select) ")

# ... and by what the node was doing (the first rule whose function is on the stack).
ACTIVITIES = [
    ("MySQL: insert tasks + events (SubmitBatch)", re.compile(r"TaskStore\.insert_tasks\b")),
    ("MySQL: begin_dispatch (-> dispatched)", re.compile(r"TaskStore\.begin_dispatch\b")),
    ("MySQL: record_outcomes (-> succeeded)", re.compile(r"TaskStore\.record_outcomes\b")),
    ("MySQL: claim_due / sweep / commit_offsets",
     re.compile(r"TaskStore\.(claim_due|sweep_enqueued|commit_offsets|load_offsets)\b")),
    ("MySQL: other store calls", re.compile(r"TaskStore\.")),
    ("API: validation", re.compile(r"validate_(batch|task)\b")),
    ("API: Kafka produce (send)", re.compile(r"TaskProducer\.send\b")),
    ("API: rows, envelopes, response (_accept)", re.compile(r"TaskApi\.(_accept|SubmitBatch|Submit)\b")),
    ("Kafka producer poll thread", re.compile(r"TaskProducer\._poll_loop\b")),
    ("Kafka intake thread (consume)", re.compile(r"KafkaIntake\._run\b|PartitionReader\.")),
    ("engine: take Kafka messages into the heap", re.compile(r"Engine\._take_kafka\b")),
    ("engine: deliver (build frames, Execute RPC, decide outcomes)",
     re.compile(r"Engine\._deliver\b|ExecutorPool\.|Engine\._decide\b")),
    ("engine: dispatch batch (_run_batch)", re.compile(r"Engine\._run_batch\b")),
    ("engine: dispatch loop / heap pops", re.compile(r"Engine\._dispatch_loop\b|EtaHeap\.")),
    ("engine: poll / commit / sweep loops",
     re.compile(r"Engine\._(poll_loop|commit_loop|commit_offsets|sweep_loop)\b")),
    ("ZooKeeper (kazoo threads)", re.compile(r"kazoo|membership/")),
    ("admin / metrics server", re.compile(r"AdminServer|http/server|socketserver")),
    ("thread pool plumbing (to_thread workers)", re.compile(r"_worker \(|concurrent/futures/thread")),
    ("event loop: asyncio + grpc.aio polling", re.compile(r"_run_once|run_forever|BaseEventLoop|grpc")),
]


def parse_pyspy_raw(path: pathlib.Path) -> list[tuple[str, int | None, list[str], int]]:
    """[(thread name, tid, frames outermost first, samples)] of a py-spy raw (collapsed) file."""
    stacks = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.rstrip()
        if not line:
            continue
        body, _, count = line.rpartition(" ")
        try:
            n = int(count)
        except ValueError:
            continue
        frames = body.split(";")
        thread, tid = "?", None
        if frames and frames[0].startswith("thread ("):
            m = re.match(r"thread \((?:0x)?([0-9A-Fa-f]+)\):?\s*(.*)", frames[0])
            if m:
                thread = m.group(2) or "?"
                with contextlib.suppress(ValueError):
                    tid = int(m.group(1))
            frames = frames[1:]
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        stacks.append((thread, tid, frames, n))
    return stacks


def thread_group(name: str) -> str:
    return re.sub(r"[_-]?\d+$", "", name) or name


def frame_name(frame: str) -> str:
    return frame.split(" (", 1)[0]


def library_of(frames: list[str]) -> str:
    """The library a sample is charged to: the innermost frame that names one."""
    for f in reversed(frames):
        lib = next((name for name, rx in LIBRARIES if rx.search(f)), None)
        if lib is not None:
            return lib
        if UNNAMED_NATIVE.search(f) or f.endswith(".so)"):
            continue
    return "other / native"


def is_native(frame: str) -> bool:
    return not re.search(r"\.py[:)]|<frozen|<string>", frame)


NATIVE_WAIT_LEAF = re.compile(r"^(pthread_cond_(timed)?wait|__futex|futex|sem_(timed)?wait|epoll_wait|poll|select|"
                              r"nanosleep|clock_nanosleep) \(")


def drop_waits(stacks: list[tuple[str, int | None, list[str], int]]) -> tuple[list, int, int]:
    """Native mode only: (samples kept, samples in a known wait, samples waiting in
    pthread_cond_wait & co., which in a Python thread is mostly waiting for the GIL)."""
    kept, dropped, cond = [], 0, 0
    for thread, tid, frames, n in stacks:
        leaf = next((f for f in reversed(frames) if not f.startswith("0x")), "")
        if NATIVE_WAIT_LEAF.search(leaf):
            cond += n
            continue
        py = [f for f in frames if not is_native(f)]
        if frames and py and is_native(frames[-1]) and WAITS.search(py[-1]):
            dropped += n
            continue
        kept.append((thread, tid, frames, n))
    return kept, dropped, cond


def activity_group(name: str) -> str:
    head = name.split(":", 1)[0] if ":" in name else name
    return {"MySQL": "MySQL store calls (PyMySQL + our SQL building, in to_thread workers)",
            "API": "API (SubmitBatch) Python work: validation, rows, envelopes, produce, response",
            "engine": "engine: intake, heap, dispatch, deliver, outcomes (Python)",
            }.get(head, head)


def analyze_profile(stacks: list[tuple[str, int | None, list[str], int]], top: int = 20) -> dict[str, Any]:
    total = sum(n for *_, n in stacks)
    self_c: collections.Counter = collections.Counter()
    cum_c: collections.Counter = collections.Counter()
    libs: collections.Counter = collections.Counter()
    acts: collections.Counter = collections.Counter()
    threads: collections.Counter = collections.Counter()
    for thread, _tid, frames, n in stacks:
        threads[thread_group(thread)] += n
        if not frames:
            continue
        # self: the innermost frame with a name (an unresolved libc address says nothing)
        self_c[next((f for f in reversed(frames) if not f.startswith("0x")), frames[-1])] += n
        for f in set(frames):
            cum_c[f] += n
        libs[library_of(frames)] += n
        joined = ";".join(frames)
        activity = next((name for name, rx in ACTIVITIES if rx.search(joined)),
                        f"other (thread {thread_group(thread)})")
        acts[activity] += n
    groups: collections.Counter = collections.Counter()
    for name, v in acts.items():
        groups[activity_group(name)] += v

    def share(counter: collections.Counter, limit: int | None = None) -> list[dict[str, Any]]:
        return [{"name": k, "samples": v, "pct": round(100 * v / total, 1) if total else 0.0}
                for k, v in counter.most_common(limit)]

    return {"samples": total, "top_self": share(self_c, top), "top_cumulative": share(cum_c, top),
            "by_library": share(libs), "by_activity": share(acts), "by_activity_group": share(groups),
            "by_thread": share(threads)}


def analyze_cprofile(path: pathlib.Path, top: int = 20) -> dict[str, Any]:
    import pstats
    st = pstats.Stats(str(path))
    rows = []
    # Stats.stats is set by Stats.__init__ (load_stats) but typeshed does not declare it.
    for (file, line, func), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"name": f"{func} ({file}:{line})", "calls": nc, "self_s": tt, "cum_s": ct})
    total = sum(r["self_s"] for r in rows) or 1.0
    top_self = sorted(rows, key=lambda r: -r["self_s"])[:top]
    top_cum = sorted(rows, key=lambda r: -r["cum_s"])[:top]
    libs: collections.Counter = collections.Counter()
    for r in rows:
        libs[next((name for name, rx in LIBRARIES if rx.search(r["name"])), "other / native")] += r["self_s"]
    return {"note": "cProfile: main thread (event loop) only, whole node lifetime; seconds, not samples",
            "total_self_s": total,
            "top_self": [{"name": r["name"], "samples": round(r["self_s"], 3),
                          "pct": round(100 * r["self_s"] / total, 1)}
                         for r in top_self],
            "top_cumulative": [{"name": r["name"], "samples": round(r["cum_s"], 3),
                                "pct": round(100 * r["cum_s"] / total, 1)} for r in top_cum],
            "by_library": [{"name": k, "samples": round(v, 3), "pct": round(100 * v / total, 1)}
                           for k, v in libs.most_common()],
            "by_activity": [], "by_thread": []}


def node_thread_cpu_delta(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]],
                          names: dict[int, str]) -> list[dict[str, Any]]:
    """CPU seconds per thread group of the node between two snapshots; Python threads
    are named from py-spy (native threads by their comm: grpc, rdk:*, ...)."""
    groups: collections.defaultdict[str, float] = collections.defaultdict(float)   # CPU seconds
    counts: collections.Counter[str] = collections.Counter()
    for tid, (comm, cpu) in after.items():
        delta = cpu - before.get(tid, (comm, 0.0))[1]
        name = names.get(tid)
        key = f"python: {thread_group(name)}" if name else f"native: {thread_group(comm)}"
        groups[key] += delta
        counts[key] += 1
    by_cpu = sorted(groups.items(), key=lambda kv: kv[1], reverse=True)   # as Counter.most_common()
    return [{"thread": k, "threads": counts[k], "cpu_s": round(v, 2)} for k, v in by_cpu if v > 0.005]


# ---------------------------------------------------------------- load

@dataclasses.dataclass
class Accepted:
    task_id: str
    due_ts: float          # SubmitResult.due_at as unix time
    ack_ts: float          # when this process got the batch's response
    band: str              # immediate | kafka | mysql (what we meant)
    delay_ms: int


def make_specs(n: int, task_types: list[str], delays_ms: list[int] | None = None, seq0: int = 0) -> list:
    from taskring import TaskSpec
    out = []
    for i in range(n):
        delay = None if not delays_ms or not delays_ms[i] else dt.timedelta(milliseconds=delays_ms[i])
        out.append(TaskSpec(namespace=NAMESPACE, task_type=task_types[(seq0 + i) % len(task_types)],
                            payload={"seq": seq0 + i}, delay=delay))
    return out


def _due_ts(r: SubmitResult) -> float:
    """When an accepted task is due, epoch seconds (the server sets due_at on every accepted task)."""
    if r.due_at is None:
        raise AssertionError(f"task {r.task_id}: accepted without a due time")
    return r.due_at.timestamp()


async def submit_throughput(target: str | list[str], batches: list[list], submitters: int) -> dict[str, Any]:
    """Phase A's load: `submitters` coroutines take the next batch and SubmitBatch it; with
    several targets (nodes), submitter k sends to target k mod len(targets)."""
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
            specs = batches[i]
            t0 = time.time()
            try:
                results = await client.submit_batch(specs)
            except Exception as exc:
                errors.append(f"batch {i}: {type(exc).__name__}: {exc}")
                continue
            t1 = time.time()
            rpc_ms.append((t1 - t0) * 1000)
            for r in results:
                if not r.duplicate:
                    accepted.append(Accepted(r.task_id, _due_ts(r), t1, "immediate", 0))

    try:
        await asyncio.gather(*(submitter(clients[k % len(clients)]) for k in range(submitters)))
    finally:
        for client in clients:
            await client.close()
    t_last_ack = max((a.ack_ts for a in accepted), default=time.time())
    return {"accepted": accepted, "errors": errors, "t_first_send": t_first, "t_last_ack": t_last_ack,
            "rpc_ms": summarize_ms(rpc_ms)}


async def submit_timing(target: str, plan: list[tuple[str, int]], task_types: list[str], batch: int,
                        spread_s: float, seq0: int) -> dict[str, Any]:
    """Phase B's load: the plan's tasks in batches of `batch`, evenly over `spread_s` seconds."""
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
            for r, (band, delay) in zip(results, chunk):
                if not r.duplicate:
                    accepted.append(Accepted(r.task_id, _due_ts(r), t1, band, delay))
    finally:
        await client.close()
    return {"accepted": accepted, "errors": errors, "t_first_send": t_first, "t_last_ack": time.time()}


def wait_done(world: World, executors: Executors, expected_executions: int, since: float, expected: int,
              deadline_s: float, label: str) -> dict[str, Any]:
    """Wait until `expected` tasks created since `since` are `succeeded` in MySQL.

    The executors' counters tell when to start asking MySQL (cheap); the time of the
    last completion is the newest `updated_at` of those rows (set when the outcome
    was recorded), not when we noticed."""
    t0 = time.time()
    since_dt = now_naive_utc(since - 0.001)
    last_print = 0.0
    done = 0
    while True:
        executed = executors.executed()
        if executed >= expected_executions:
            (done, last), = world.sql("SELECT COUNT(*), MAX(updated_at) FROM tasks"
                                      " WHERE status = 'succeeded' AND created_at >= %s", (since_dt,))
            if done >= expected:
                return {"complete": True, "succeeded": done, "last_completion_ts": naive_utc_to_ts(last),
                        "waited_s": time.time() - t0}
        if time.time() - last_print > 3:
            print(f"  [{label}] executed {executed:,} of {expected_executions:,} (all phases); "
                  f"succeeded in MySQL {done:,} of {expected:,}", file=sys.stderr, flush=True)
            last_print = time.time()
        if time.time() - t0 > deadline_s:
            by_status = dict(world.sql("SELECT status, COUNT(*) FROM tasks WHERE created_at >= %s GROUP BY status",
                                       (since_dt,)))
            (last,), = world.sql("SELECT MAX(updated_at) FROM tasks WHERE status = 'succeeded' AND created_at >= %s",
                                 (since_dt,))
            return {"complete": False, "succeeded": by_status.get("succeeded", 0), "by_status": by_status,
                    "last_completion_ts": naive_utc_to_ts(last) if last else None, "waited_s": time.time() - t0}
        time.sleep(0.25 if executed >= expected_executions else 0.1)


# ---------------------------------------------------------------- analysis

def latency_figures(accepted: list[Accepted], starts: dict[str, list[float]]) -> dict[str, Any]:
    """Pickup (start - due) and start - ack; early starts; duplicates and missing."""
    from_due, from_ack = [], []
    early, missing, dup = [], 0, 0
    for a in accepted:
        s = starts.get(a.task_id)
        if not s:
            missing += 1
            continue
        if len(s) > 1:
            dup += 1
        first = min(s)
        d = (first - a.due_ts) * 1000
        from_due.append(d)
        from_ack.append((first - a.ack_ts) * 1000)
        if first < a.due_ts:
            early.append(round(d, 3))
    return {"from_due_ms": summarize_ms(from_due), "from_ack_ms": summarize_ms(from_ack),
            "early_starts": len(early), "earliest_ms": min(early) if early else None,
            "not_executed": missing, "executed_more_than_once": dup}


def pickup_breakdown(world: World, accepted: list[Accepted], starts: dict[str, list[float]]) -> dict[str, Any]:
    """Where an immediate task's pickup goes, from the times the run recorded: acceptance
    (due_at) -> the client's ack (the MySQL insert and the Kafka produce) -> the node's
    dispatch (tasks.dispatched_at: read from Kafka, into the heap, popped) -> the
    executor's start (begin_dispatch's transaction, the Execute call, the handler's
    scheduling). The node's and this process's clocks are the same machine's."""
    dispatched: dict[str, float] = {}
    ids = [a.task_id for a in accepted]
    for i in range(0, len(ids), 1000):
        chunk = ids[i:i + 1000]
        marks = ",".join(["%s"] * len(chunk))
        for tid, at_ms in world.sql("SELECT task_id, UNIX_TIMESTAMP(dispatched_at) * 1000 FROM tasks"
                                    f" WHERE dispatched_at IS NOT NULL AND task_id IN ({marks})", chunk):
            dispatched[tid] = float(at_ms)
    to_ack, ack_to_dispatch, dispatch_to_start = [], [], []
    for a in accepted:
        s, d = starts.get(a.task_id), dispatched.get(a.task_id)
        if not s or d is None:
            continue
        to_ack.append((a.ack_ts - a.due_ts) * 1000)
        ack_to_dispatch.append(d - a.ack_ts * 1000)
        dispatch_to_start.append(min(s) * 1000 - d)
    return {"accept_to_ack_ms": summarize_ms(to_ack), "ack_to_dispatch_ms": summarize_ms(ack_to_dispatch),
            "dispatch_to_start_ms": summarize_ms(dispatch_to_start)}


def execution_rate_windows(accepted: list[Accepted], starts: dict[str, list[float]], t_first: float,
                           t_last_ack: float) -> dict[str, Any]:
    """Executions per second while submitting and after the last ack."""
    firsts = sorted(min(starts[a.task_id]) for a in accepted if starts.get(a.task_id))
    if not firsts:
        return {}
    during = sum(1 for t in firsts if t <= t_last_ack)
    after = len(firsts) - during
    submit_s = max(1e-6, t_last_ack - t_first)
    tail_s = max(1e-6, firsts[-1] - t_last_ack)
    # executions per whole second of the phase, for the report's timeline
    per_s = collections.Counter(int(t - t_first) for t in firsts)
    return {"executed_while_submitting": during, "executed_per_s_while_submitting": during / submit_s,
            "executed_after_last_ack": after, "executed_per_s_after_last_ack": after / tail_s if after else None,
            "first_start_after_first_send_s": firsts[0] - t_first,
            "last_start_after_first_send_s": firsts[-1] - t_first,
            "executions_per_second_timeline": [per_s.get(i, 0) for i in range(int(firsts[-1] - t_first) + 1)]}


def recorded_paths(world: World, task_ids: list[str]) -> dict[str, str]:
    """{task_id: 'kafka'|'mysql'} from the node's `queued` event of attempt 0."""
    out: dict[str, str] = {}
    for i in range(0, len(task_ids), 1000):
        chunk = task_ids[i:i + 1000]
        marks = ",".join(["%s"] * len(chunk))
        for tid, detail in world.sql(f"SELECT task_id, detail FROM task_history WHERE state = 'queued' AND attempt = 0"
                                     f" AND task_id IN ({marks})", chunk):
            out[tid] = detail
    return out


def mysql_row_writes(world: World) -> dict[str, int]:
    """The server's counters of rows written (Handler_write / _update / _delete: rows
    inserted, updated and deleted in tables, internal temporary tables not included),
    of statements (Questions) and of commits (Com_commit plus autocommitted statements
    are not told apart; Handler_commit counts engine commits). Their delta over a phase,
    per task, is what each task cost the server, whatever statement did it.
    Server-wide: run on a quiet server."""
    names = {"Handler_write": "inserted", "Handler_update": "updated", "Handler_delete": "deleted",
             "Questions": "statements", "Com_commit": "commits"}
    rows = dict(world.sql("SHOW GLOBAL STATUS WHERE Variable_name IN"
                          f" ({', '.join(repr(n) for n in names)})"))
    return {names[name]: int(value) for name, value in rows.items()}


def store_facts(world: World) -> dict[str, Any]:
    by_status = dict(world.sql("SELECT status, COUNT(*) FROM tasks GROUP BY status"))
    (tasks,), = world.sql("SELECT COUNT(*) FROM tasks")
    (events,), = world.sql("SELECT COUNT(*) FROM task_events")
    events_by_state = dict(world.sql("SELECT state, COUNT(*) FROM task_events GROUP BY state"))
    (retried,), = world.sql("SELECT COUNT(*) FROM tasks WHERE attempts > 1")
    (env_len, env), = world.sql("SELECT LENGTH(envelope), envelope FROM tasks WHERE task_type LIKE 'noop-%%'"
                                " ORDER BY created_at LIMIT 1")
    return {"tasks": tasks, "by_status": by_status, "task_events": events, "events_by_state": events_by_state,
            "events_per_task": events / tasks if tasks else None, "tasks_with_more_than_one_attempt": retried,
            "task_envelope_bytes": env_len, "sample_envelope": bytes(env)}


def queued_task_size(envelope: bytes) -> int:
    """The Kafka message the node produces for this task (pb.QueuedTask), in bytes."""
    from taskring.wire import pb
    task = pb.Task.FromString(envelope)
    return len(pb.QueuedTask(task=task, attempt=1, due_at_ms=int(time.time() * 1000)).SerializeToString())


def raw_min_bytes() -> int:
    try:
        make_envelopes(1, 1)
    except ValueError as exc:
        m = re.search(r">= (\d+)", str(exc))
        if m:
            return int(m.group(1))
    return 1


# ---------------------------------------------------------------- locust

def run_locust(target: str, task_types: list[str], seconds: int, users: int, run_dir: pathlib.Path) -> dict[str, Any]:
    exe = pathlib.Path(sys.executable).parent / "locust"
    exe_s = str(exe) if exe.exists() else shutil.which("locust")
    if not exe_s:
        return {"error": "locust not installed (.venv/bin/pip install locust==2.47.0)"}
    env = dict(os.environ, TASKRING_TARGET=target, TASKRING_NAMESPACE=NAMESPACE,
               TASKRING_TASK_TYPES=",".join(task_types))
    csv = run_dir / "locust"
    cmd = [exe_s, "-f", str(REPO / "loadtest" / "locustfile.py"), "--headless", "-u", str(users), "-r", str(users),
           "-t", f"{seconds}s", "--csv", str(csv), "--only-summary"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=seconds + 90)
    # Locust's own summary table (printed at exit) is the final word; its CSV may be
    # written a moment before the last requests finish.
    return {"command": " ".join(["locust", "-f", "loadtest/locustfile.py", "--headless", "-u", str(users), "-r",
                                 str(users), "-t", f"{seconds}s"]),
            "returncode": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1),
            "output_tail": (proc.stdout + proc.stderr).splitlines()[-25:]}


# ---------------------------------------------------------------- the run

def run(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench_node_"))
    stack = stack_from_args(args)
    task_types = spread_task_types()
    result: dict[str, Any] = {
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "run_dir": str(run_dir),
        "params": {"n": args.n, "nodes": args.nodes, "node_env": dict(NODE_ENV), "node_cpu_cap": args.node_cpu_cap,
                   "batch": args.batch,
                   "submitters": args.submitters, "executors": args.executors,
                   "executor_max_in_flight": args.max_in_flight, "route_threshold_ms": args.route_threshold_ms,
                   "timing_kafka": args.timing_kafka, "timing_mysql": args.timing_mysql,
                   "timing_immediate": args.timing_immediate, "timing_batch": args.timing_batch,
                   "kafka_delay_s": args.kafka_delay,
                   "mysql_delay_s": args.mysql_delay, "timing_spread_s": args.timing_spread_s,
                   "profile": args.profile, "profile_rate_hz": args.profile_rate, "raw_n": args.raw_n or args.n,
                   "task_types": len(task_types), "slots": SLOTS, "node_log_level": args.node_log_level},
        "machine": machine_facts(args.mysql_host, args.mysql_port, args.mysql_user),
    }
    result["machine"]["loadavg_start"] = [round(x, 2) for x in os.getloadavg()]
    with contextlib.suppress(Exception):
        cpu = [ln for ln in pathlib.Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        result["machine"]["cpu"] = cpu[0].split(":", 1)[1].strip() if cpu else None
    with contextlib.suppress(Exception):
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "dispatcher", "cluster", "membership", "sdk",
                                "proto"], cwd=REPO, capture_output=True, text=True)
        result["machine"]["git"] = head.stdout.strip() + (" + uncommitted changes to the node or SDK"
                                                          if dirty.stdout.strip() else "")
    result["machine"]["grpcio"] = __import__("grpc").__version__
    result["machine"]["protobuf"] = __import__("google.protobuf", fromlist=["__version__"]).__version__
    world = create_world(stack, "bench-node", run_dir, SLOTS, run_id=uuid.uuid4().hex[:8])
    print(f"world: database {world.database}, ZooKeeper {world.zk_hosts}, topics {world.topic_prefix}.*; "
          f"logs in {run_dir}", file=sys.stderr)
    node = executors = spy = None
    others: list[NodeProcess] = []   # with --nodes N > 1: the cluster's other nodes (node is the first)
    caps: list[CpuCap] = []          # with --node-cpu-cap: one per node, in the nodes' order
    try:
        cprof = run_dir / "node.cprofile" if args.profile == "cprofile" else None
        if args.nodes == 1:
            node = start_node(world, run_dir, args.route_threshold_ms, args.node_log_level, cprof)
        else:
            node = start_node(world, run_dir, args.route_threshold_ms, args.node_log_level, cprof, index=0)
            others = [start_node(world, run_dir, args.route_threshold_ms, args.node_log_level, index=i)
                      for i in range(1, args.nodes)]
        if args.node_cpu_cap:
            # Each node process in a cgroup of its own, all of the same size: machines of
            # equal size, simulated (harness/cgroup.py).
            for i, n in enumerate([node, *others]):
                cap = CpuCap(f"taskring-bench-{world.database}-{i}", args.node_cpu_cap).start()
                caps.append(cap)
                cap.add(n.pid)
        t_ready = time.perf_counter()
        for n in [node, *others]:
            n.wait_ready(60.0)
        if others:
            settled, views = wait_settled([node, *others], 60.0)
            if not settled:
                raise RuntimeError(f"the ring of {args.nodes} nodes did not settle: {views}")
        result["node"] = {"command": " ".join(node.args[1:]), "ready_s": round(time.perf_counter() - t_ready, 2),
                          "pid": node.pid, "target": node.target, "nodes": args.nodes,
                          "other_pids": [n.pid for n in others]}
        executors = Executors(world, task_types, args.executors, args.max_in_flight)
        executors.start()
        print(f"node {node.target} (pid {node.pid}) ready; executors {executors.pids}", file=sys.stderr)

        if args.serve:
            print(f"\nserving for {args.serve} s (Ctrl-C to stop). For Locust:\n"
                  f"  TASKRING_TARGET={node.target} TASKRING_NAMESPACE={NAMESPACE} "
                  f"TASKRING_TASK_TYPES={','.join(task_types)} \\\n"
                  f"  .venv/bin/locust -f loadtest/locustfile.py --headless -u 4 -r 4 -t 30s", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                time.sleep(args.serve)
            return result

        # Warm-up: the executors are visible to the node, channels and consumers are up.
        print("warm-up ...", file=sys.stderr)
        warm_n = 1_000
        warm_batches = [make_specs(500, task_types, seq0=i * 500) for i in range(2)]
        warm = asyncio.run(submit_throughput(node.target, warm_batches, 2))
        w = wait_done(world, executors, warm_n, warm["t_first_send"], len(warm["accepted"]), 60, "warm-up")
        if not w["complete"]:
            raise RuntimeError(f"warm-up did not complete: {w}; node log:\n{node.log_tail()}")
        result["warmup"] = {"tasks": warm_n, "s": round(w["last_completion_ts"] - warm["t_first_send"], 2)}
        expected_exec = warm_n

        # ---- Phase A
        print(f"phase A: {args.n:,} immediate tasks, SubmitBatch x {args.batch}, {args.submitters} submitters ...",
              file=sys.stderr)
        batches = [make_specs(min(args.batch, args.n - i), task_types, seq0=10_000 + i)
                   for i in range(0, args.n, args.batch)]
        pids: dict[str, int | None] = {"node": node.pid, **{f"node {i}": n.pid for i, n in enumerate(others, 1)},
                                       "load generator (this process)": os.getpid(),
                **{f"executor {i}": pid for i, pid in enumerate(executors.pids)}, **stack_pids()}
        if args.profile in ("py-spy", "py-spy-native"):
            spy = PySpy(node.pid, run_dir / "node.pyspy.txt", args.profile_rate, run_dir / "py-spy.log",
                        native=args.profile == "py-spy-native")
            spy.start()
            pids["py-spy"] = spy.process_pid
        meter = CpuMeter(pids)
        threads_before = thread_cpu(node.pid)
        rows_before = mysql_row_writes(world)
        meter.start()
        a = asyncio.run(submit_throughput([n.target for n in [node, *others]], batches, args.submitters))
        expected_exec += len(a["accepted"])
        done_a = wait_done(world, executors, expected_exec, a["t_first_send"], len(a["accepted"]),
                           30 + args.n / 500, "phase A")
        cpu_a = meter.stop()
        if caps:
            cpu_a["node_cpu_cap"] = {"cores_per_node": args.node_cpu_cap,
                                     "throttled_periods": [cap.stat()["nr_throttled"] for cap in caps]}
        rows_after = mysql_row_writes(world)
        threads_after = thread_cpu(node.pid)
        if spy is not None:
            spy.stop()
        n_acc = len(a["accepted"])
        submit_s = a["t_last_ack"] - a["t_first_send"]
        e2e_s = (done_a["last_completion_ts"] or time.time()) - a["t_first_send"]
        result["phase_a"] = {
            "submitted": args.n, "accepted": n_acc, "batch_errors": a["errors"][:10],
            "batch_error_count": len(a["errors"]),
            "submit_s": submit_s, "accepted_per_s": n_acc / submit_s if submit_s > 0 else None,
            "submit_batch_rpc_ms": a["rpc_ms"],
            "complete": done_a["complete"], "succeeded": done_a["succeeded"],
            "end_to_end_s": e2e_s, "completed_per_s": done_a["succeeded"] / e2e_s if e2e_s > 0 else None,
            "drain_after_last_ack_s": (done_a["last_completion_ts"] or time.time()) - a["t_last_ack"],
            "cpu": cpu_a,
            "mysql_row_writes": {k: rows_after[k] - rows_before[k] for k in rows_after},
        }
        writes = result["phase_a"]["mysql_row_writes"]
        writes["per_task"] = (writes["inserted"] + writes["updated"] + writes["deleted"]) / n_acc if n_acc else None
        writes["statements_per_task"] = writes.pop("statements") / n_acc if n_acc else None
        writes["commits_per_task"] = writes.pop("commits") / n_acc if n_acc else None
        if not done_a["complete"]:
            result["phase_a"]["by_status_at_deadline"] = done_a.get("by_status")

        # ---- Phase B
        plan = ([("kafka", random.randint(int(args.kafka_delay[0] * 1000), int(args.kafka_delay[1] * 1000)))
                 for _ in range(args.timing_kafka)]
                + [("mysql", random.randint(int(args.mysql_delay[0] * 1000), int(args.mysql_delay[1] * 1000)))
                   for _ in range(args.timing_mysql)]
                + [("immediate", 0) for _ in range(args.timing_immediate)])
        random.shuffle(plan)
        print(f"phase B: {len(plan):,} tasks ({args.timing_kafka:,} delayed {args.kafka_delay[0]:g}-"
              f"{args.kafka_delay[1]:g} s, {args.timing_mysql:,} delayed {args.mysql_delay[0]:g}-"
              f"{args.mysql_delay[1]:g} s, {args.timing_immediate:,} immediate) over {args.timing_spread_s:g} s ...",
              file=sys.stderr)
        b = asyncio.run(submit_timing(node.target, plan, task_types, args.timing_batch, args.timing_spread_s,
                                      seq0=10_000_000))
        expected_exec += len(b["accepted"])
        last_due = max((x.due_ts for x in b["accepted"]), default=time.time())
        done_b = wait_done(world, executors, expected_exec, b["t_first_send"], len(b["accepted"]),
                           max(0.0, last_due - time.time()) + 30, "phase B")
        result["phase_b"] = {"planned": len(plan), "accepted": len(b["accepted"]), "batch_errors": b["errors"][:10],
                             "submit_s": b["t_last_ack"] - b["t_first_send"],
                             "submit_rate_per_s": len(b["accepted"]) / max(1e-6, b["t_last_ack"] - b["t_first_send"]),
                             "complete": done_b["complete"], "succeeded": done_b["succeeded"]}
        if not done_b["complete"]:
            result["phase_b"]["by_status_at_deadline"] = done_b.get("by_status")

        # ---- The store's view of phases A and B (before Locust adds its own tasks)
        facts = store_facts(world)
        envelope = facts.pop("sample_envelope")
        result["store"] = facts
        result["message_bytes"] = {"task_envelope": facts["task_envelope_bytes"],
                                   "queued_task": queued_task_size(envelope)}
        result["node_metrics_excerpt"] = [ln for ln in node_metrics(node).splitlines()
                                          if ln.startswith("taskring_") and "_bucket" not in ln][:60]

        # ---- Locust (optional), against the same node
        if args.locust_s:
            print(f"locust: {args.locust_s} s, {args.locust_users} users ...", file=sys.stderr)
            result["locust"] = run_locust(node.target, task_types, args.locust_s, args.locust_users, run_dir)

        # ---- Gather: executor records, the store's view
        starts = executors.stop()
        executors = None
        result["phase_a"]["pickup"] = latency_figures(a["accepted"], starts)
        result["phase_a"]["execution_rate"] = execution_rate_windows(a["accepted"], starts, a["t_first_send"],
                                                                     a["t_last_ack"])
        paths = recorded_paths(world, [x.task_id for x in b["accepted"]])
        by_path: dict[str, list[Accepted]] = collections.defaultdict(list)
        mismatched: collections.Counter[str] = collections.Counter()
        for x in b["accepted"]:
            p = "immediate" if x.band == "immediate" else paths.get(x.task_id, "?")
            if x.band != "immediate" and p != x.band:
                mismatched[f"{x.band}->{p}"] += 1
            by_path[p].append(x)
        result["phase_b"]["lateness"] = {
            f"kafka path (delay {args.kafka_delay[0]:g}-{args.kafka_delay[1]:g} s)":
                latency_figures(by_path.get("kafka", []), starts),
            f"mysql path (delay {args.mysql_delay[0]:g}-{args.mysql_delay[1]:g} s)":
                latency_figures(by_path.get("mysql", []), starts),
            "immediate (pickup at a moderate rate)": latency_figures(by_path.get("immediate", []), starts),
        }
        result["phase_b"]["path_mismatches"] = dict(mismatched)
        result["phase_b"]["pickup_breakdown"] = pickup_breakdown(world, by_path.get("immediate", []), starts)

        # ---- Node stop (clean handoff; writes the cProfile file if any)
        stop_nodes(others)
        node.stop(60.0)
        result["node"].update({"stop_s": round(node.stop_s or 0, 2), "returncode": node.returncode})

        # ---- Profile
        if args.profile in ("py-spy", "py-spy-native"):
            pyspy_file = run_dir / "node.pyspy.txt"
            if pyspy_file.exists():
                stacks = parse_pyspy_raw(pyspy_file)
                dropped = cond = 0
                if args.profile == "py-spy-native":
                    stacks, dropped, cond = drop_waits(stacks)
                prof = analyze_profile(stacks, top=20)
                prof["dropped_wait_samples"] = dropped
                prof["dropped_cond_wait_samples"] = cond
                names = {tid: name for name, tid, _f, _n in stacks if tid is not None}
                prof["node_threads_cpu"] = node_thread_cpu_delta(threads_before, threads_after, names)
                prof["raw_file"] = str(pyspy_file)
                result["profile"] = prof
            else:
                result["profile"] = {"error": f"py-spy wrote nothing; see {run_dir / 'py-spy.log'}"}
        elif args.profile == "cprofile":
            if cprof and cprof.exists():
                prof = analyze_cprofile(cprof)
                prof["node_threads_cpu"] = node_thread_cpu_delta(threads_before, threads_after, {})
                result["profile"] = prof
            else:
                result["profile"] = {"error": "the node wrote no cProfile file (did it exit cleanly on SIGTERM?)"}
    finally:
        if spy is not None:
            spy.stop()
        if executors is not None:
            executors.stop(timeout_s=10)
        stop_nodes(others)
        if node is not None:
            node.stop(60.0)
            result.setdefault("node", {}).setdefault("log_tail", node.log_tail(15).splitlines())
        for cap in caps:
            cap.stop()
        problems = drop_world(world)
        if problems:
            result["cleanup_problems"] = problems
            print("cleanup problems: " + "; ".join(problems), file=sys.stderr)

    # ---- Raw parts, same run, node stopped
    if not args.no_raw:
        size = result["message_bytes"]["queued_task"]
        raw_bytes = max(size, raw_min_bytes())
        print(f"raw parts: N={result['params']['raw_n']:,}, {raw_bytes} bytes ...", file=sys.stderr)
        raw = measure_raw_parts(result["params"]["raw_n"], raw_bytes, kafka_bootstrap=args.kafka,
                                mysql_host=args.mysql_host, mysql_port=args.mysql_port, mysql_user=args.mysql_user)
        raw["requested_bytes"] = size
        result["raw_parts"] = raw
        result["ratios"] = ratios(result)
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return result


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    a, raw, store = result["phase_a"], result["raw_parts"], result["store"]
    k, m = raw.get("kafka", {}), raw.get("mysql", {})
    e2e, acc = a.get("completed_per_s"), a.get("accepted_per_s")
    rows_per_task = a.get("mysql_row_writes", {}).get("per_task") or 1 + (store["events_per_task"] or 0)
    div = lambda x, y: (x / y) if x and y else None  # noqa: E731
    steady = None
    if k.get("consume_first_message_s") is not None and k.get("combined_s"):
        steady = raw["n"] / (k["combined_s"] - k["consume_first_message_s"])
    return {
        "kafka produce+consume msgs/s without the consumer's start (N / (total - time to first message))": steady,
        "node_e2e / kafka produce+consume": div(e2e, k.get("combined_per_s")),
        "node_e2e / kafka produce+consume without the consumer's start": div(e2e, steady),
        "node_e2e / mariadb insert+claim": div(e2e, m.get("combined_per_s")),
        "node_accepted / kafka produce": div(acc, k.get("produce_per_s")),
        "node_accepted / mariadb insert": div(acc, m.get("insert_per_s")),
        "rows inserted per task (1 task row + events)": rows_per_task,
        "mariadb insert rows/s / rows per task": div(m.get("insert_per_s"), rows_per_task),
        "node_e2e / (mariadb insert rows/s / rows per task)": div(e2e, div(m.get("insert_per_s"), rows_per_task)),
    }


# ---------------------------------------------------------------- output

def table(rows: list[tuple[str, str]], head: tuple[str, str] = ("figure", "value")) -> list[str]:
    out = [f"| {head[0]} | {head[1]} |", "| --- | ---: |"]
    out += [f"| {k} | {v} |" for k, v in rows]
    return out


def lat_row(name: str, f: dict[str, Any]) -> str:
    d, k = f["from_due_ms"], f["from_ack_ms"]
    if not d.get("count"):
        return f"| {name} | 0 | - | - | - | - | - | {f['early_starts']} | {f['not_executed']} | - |"
    ack = f"{k['p50']:,.1f}" if name.startswith("immediate") else "-"  # a delayed task's includes its delay
    return (f"| {name} | {d['count']:,} | {d['p50']:,.1f} | {d['p90']:,.1f} | {d['p99']:,.1f} | {d['max']:,.1f} |"
            f" {d['min']:,.1f} | {f['early_starts']} | {f['not_executed']} | {ack} |")


def format_report(result: dict[str, Any], command: str) -> str:
    p, a, b = result["params"], result.get("phase_a", {}), result.get("phase_b", {})
    L: list[str] = ["# One node, end to end: bench_node.py", "",
                    f"Run {result['started_at']} with `{command}`.", ""]
    mach = result["machine"]
    L += ["Machine: " + ", ".join(f"{k} {v}" for k, v in mach.items()) + ".", ""]
    if p.get("nodes", 1) > 1:
        L += [f"**{p['nodes']} node processes** (a cluster on this box; phase A's submitters spread over them). "
              "The node below is the first; the others differ only by id and ports.", ""]
    L += [f"Node: `{result.get('node', {}).get('command', '?')}` (route threshold {p['route_threshold_ms']} ms, "
          f"{p['slots']} slots, {p['task_types']} task types spread 2 per slot), {p['executors']} executor process(es) "
          f"(SDK Executor, async no-op handler, max_in_flight {p['executor_max_in_flight']}), "
          f"load generator in this process (AsyncClient). Node ready in {result.get('node', {}).get('ready_s')} s, "
          f"stopped on SIGTERM in {result.get('node', {}).get('stop_s')} s (exit code "
          f"{result.get('node', {}).get('returncode')}).", ""]
    if a:
        pk = a.get("pickup", {})
        er = a.get("execution_rate", {})
        L += [f"## Phase A: throughput ({a['accepted']:,} immediate no-op tasks, SubmitBatch x {p['batch']:,},"
              f" {p['submitters']} concurrent submitters)", ""]
        rows = [("accepted tasks/s (first send to last ack)", f"{fmt(a['accepted_per_s'])} ({a['submit_s']:.2f} s)"),
                ("completed tasks/s end to end (first send to last `succeeded`)",
                 f"{fmt(a['completed_per_s'])} ({a['end_to_end_s']:.2f} s)"),
                ("drain after the last ack", f"{a['drain_after_last_ack_s']:.2f} s"),
                ("executed/s while submitting / after the last ack",
                 f"{fmt(er.get('executed_per_s_while_submitting'))} / {fmt(er.get('executed_per_s_after_last_ack'))}"),
                ("SubmitBatch RPC ms p50 / p99 / max",
                 f"{fmt(a['submit_batch_rpc_ms'].get('p50'), 0)} / {fmt(a['submit_batch_rpc_ms'].get('p99'), 0)} / "
                 f"{fmt(a['submit_batch_rpc_ms'].get('max'), 0)}"),
                ("complete", f"{a['complete']} ({a['succeeded']:,} succeeded; {a['batch_error_count']} batch errors)")]
        mw = a.get("mysql_row_writes")
        if mw:
            rows.append(("MySQL row writes per task (Handler_* counters over the phase: inserted / updated / deleted)",
                         f"{fmt(mw['per_task'], 2)} ({mw['inserted']:,} / {mw['updated']:,} / {mw['deleted']:,})"))
            if mw.get("statements_per_task") is not None:
                rows.append(("MySQL statements / commits per task (Questions, Com_commit)",
                             f"{fmt(mw['statements_per_task'], 3)} / {fmt(mw['commits_per_task'], 3)}"))
        if pk:
            d, k = pk["from_due_ms"], pk["from_ack_ms"]
            rows += [("pickup latency, start - acceptance (due_at), p50 / p99 / max",
                      f"{fmt(d.get('p50'), 0)} / {fmt(d.get('p99'), 0)} / {fmt(d.get('max'), 0)} ms"),
                     ("pickup latency, start - ack at the client, p50 / p99",
                      f"{fmt(k.get('p50'), 0)} / {fmt(k.get('p99'), 0)} ms"),
                     ("early starts / not executed / executed twice",
                      f"{pk['early_starts']} / {pk['not_executed']} / {pk['executed_more_than_once']}")]
        L += table(rows) + [""]
        if er.get("executions_per_second_timeline"):
            L += ["Executions started per second of the phase: "
                  + ", ".join(f"{x:,}" for x in er["executions_per_second_timeline"]) + ".", ""]
        L += ["Pickup latency in this phase is measured under saturation: tasks are accepted faster than they"
              " are dispatched, so it is mostly time spent queued behind earlier tasks (it grows through the"
              " phase). Phase B's immediate tasks show the pickup latency of a node that is not saturated.", ""]
        cpu = a["cpu"]
        L += [f"CPU during phase A ({cpu['wall_s']} s wall, {cpu['cores']} cores = "
              f"{cpu['wall_s'] * cpu['cores']:.1f} CPU-s available; machine busy "
              f"{cpu['machine_busy_pct_of_all_cores']}%):", "",
              "| process | CPU s | of which kernel | % of one core |", "| --- | ---: | ---: | ---: |"]
        for name, v in sorted(cpu["process_cpu_s"].items(), key=lambda kv: -(kv[1] or 0)):
            L.append(f"| {name} | {fmt(v, 1)} | {fmt(cpu.get('process_system_cpu_s', {}).get(name), 1)} |"
                     f" {fmt(100 * v / cpu['wall_s'] if v is not None else None, 0)} |")
        other = max(0.0, cpu["other_processes_cpu_s"])  # slightly negative = clock-tick jitter
        L += [f"| everything else on the machine | {other:.1f} | | {100 * other / cpu['wall_s']:.0f} |", ""]
    if b:
        L += [f"## Phase B: timing ({b['accepted']:,} tasks submitted over {b['submit_s']:.1f} s, "
              f"{b['submit_rate_per_s']:,.0f}/s, batches of {p.get('timing_batch', 100)})", "",
              "Lateness = executor start - due_at (SubmitResult.due_at), ms; the path is the one the node"
              " recorded in the task's `queued` event.", "",
              "| tasks | count | p50 | p90 | p99 | max | min | early starts | not executed |"
              " start - client ack, p50 |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for name, f in b.get("lateness", {}).items():
            L.append(lat_row(name, f))
        L += ["", f"Complete: {b['complete']} ({b['succeeded']:,} succeeded). Planned path != recorded path: "
              f"{b.get('path_mismatches') or 'none'}.", ""]
        bd = b.get("pickup_breakdown")
        if bd:
            L += ["Where the immediate tasks' pickup goes (ms, p50 / p99): "
                  + "; ".join(f"{name} {fmt(bd[key].get('p50'), 1)} / {fmt(bd[key].get('p99'), 1)}" for name, key in (
                      ("acceptance -> client ack (insert + produce)", "accept_to_ack_ms"),
                      ("ack -> node's dispatch (consume, heap, pop)", "ack_to_dispatch_ms"),
                      ("dispatch -> executor start (begin_dispatch, Execute call)", "dispatch_to_start_ms")))
                  + ".", ""]
    st = result.get("store")
    if st:
        L += [f"Store after the run: {st['tasks']:,} tasks {st['by_status']}; {st['task_events']:,} task_events"
              f" ({st['events_per_task']:.2f} per task: {st['events_by_state']}); "
              f"tasks with more than one attempt: {st['tasks_with_more_than_one_attempt']}. "
              f"Message sizes: task envelope {result['message_bytes']['task_envelope']} bytes, Kafka QueuedTask "
              f"{result['message_bytes']['queued_task']} bytes.", ""]
    raw = result.get("raw_parts")
    if raw:
        L += [f"## The parts underneath, same run (loadtest/raw_parts.py, node stopped; "
              f"{raw['envelope_bytes']}-byte envelope"
              + (f", the smallest raw_parts makes; the node's message is {raw['requested_bytes']} bytes"
                 if raw['envelope_bytes'] != raw['requested_bytes'] else "") + ")", "",
              raw_format_table(raw), "", "Ratios:", ""]
        L += table([(k, fmt(v, 3) if v is not None and v < 10 else fmt(v)) for k, v in result["ratios"].items()],
                   ("ratio", "value")) + [""]
    prof = result.get("profile")
    if prof and "error" not in prof:
        unit = "samples" if "note" not in prof else "s"
        L += [f"## Profile of the node during phase A ({p['profile']}"
              + (f", {p['profile_rate_hz']} Hz, {prof['samples']:,} samples of threads on CPU" if "note" not in prof
                 else f"; {prof['note']}") + ")", ""]
        cpu = a.get("cpu", {})
        nt = prof.get("node_threads_cpu") or []
        py_cpu = sum(t["cpu_s"] for t in nt if t["thread"].startswith("python:"))
        node_cpu = (cpu.get("process_cpu_s") or {}).get("node")
        if node_cpu and p["profile"] == "py-spy-native":
            L += [f"{prof['samples']:,} samples at {p['profile_rate_hz']} Hz, after dropping waits, are"
                  f" {prof['samples'] / p['profile_rate_hz']:.1f} thread-seconds, against {node_cpu:.1f} CPU-s the"
                  " node used: close enough to read the shares as CPU. py-spy pauses the node for every sample in"
                  " this mode, so the node's throughput in this run is not a figure to quote.", ""]
        elif node_cpu and "note" not in prof:
            L += [f"{prof['samples']:,} samples at {p['profile_rate_hz']} Hz are"
                  f" {prof['samples'] / p['profile_rate_hz']:.1f} thread-seconds, against {node_cpu:.1f} CPU-s the"
                  " node used: a sample counts a thread that is running *or ready to run* (waiting for a core, or"
                  " just woken from a socket), so shares of waiting-heavy work (MySQL round trips) read high here."
                  " The `py-spy-native` run (reports/bench_node_native.md) drops waits and approximates CPU.", ""]
        if cpu.get("wall_s") and nt:
            L += [f"The node's Python threads used {py_cpu:.1f} CPU-s in {cpu['wall_s']} s: one GIL was held about"
                  f" {min(100, 100 * py_cpu / cpu['wall_s']):.0f}% of the time at most (C code that releases the GIL"
                  " counts here too). Samples are charged to the thread's stack at the moment; at"
                  f" {p['profile_rate_hz']} Hz one sample is about {1000 / p['profile_rate_hz']:.0f} ms of a thread"
                  " on CPU.", ""]
        if prof.get("node_threads_cpu"):
            L += ["Node CPU by thread (from /proc; Python threads named by py-spy):", "",
                  "| thread | threads | CPU s |", "| --- | ---: | ---: |"]
            L += [f"| {t['thread']} | {t['threads']} | {t['cpu_s']:.2f} |" for t in prof["node_threads_cpu"]] + [""]
        if prof.get("dropped_wait_samples") or prof.get("dropped_cond_wait_samples"):
            L += [f"(Dropped: {prof['dropped_wait_samples']:,} samples of threads blocked in a known wait (queue,"
                  " select, socket send/recv) and "
                  f"{prof['dropped_cond_wait_samples']:,} samples in pthread_cond_wait & co. (in a Python thread:"
                  " mostly waiting for the GIL). The paused mode that native stacks need counts such threads as"
                  " running; what is left approximates CPU.)", ""]
        for key, title in (("by_activity_group", "Where the time goes (activities grouped)"),
                           ("by_activity", "By activity (first matching function on the stack)"),
                           ("by_library", "By library (file of the innermost Python frame)"),
                           ("by_thread", "By thread")):
            if prof.get(key):
                L += [f"{title}:", "", f"| what | {unit} | % |", "| --- | ---: | ---: |"]
                L += [f"| {x['name']} | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
        for key, title in (("top_cumulative", "Top 20 by cumulative"), ("top_self", "Top 20 by self")):
            L += [f"{title}:", "", f"| function | {unit} | % |", "| --- | ---: | ---: |"]
            L += [f"| `{x['name']}` | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
    elif prof:
        L += [f"Profile: {prof['error']}", ""]
    if result.get("locust"):
        lo = result["locust"]
        L += ["## Locust (loadtest/locustfile.py) against the same node, after phases A and B", "",
              f"`TASKRING_TARGET=<node> TASKRING_NAMESPACE={NAMESPACE} TASKRING_TASK_TYPES=<the 32 types> "
              f"{lo.get('command')}`: exit {lo.get('returncode')}, {lo.get('wall_s')} s. Its summary:", "", "```"]
        L += [ln for ln in lo.get("output_tail", []) if not re.match(r"\[\d{4}-", ln)]
        L += ["```", ""]
    L += ["What this is and how to read it: loadtest/README.md. Every figure: the .json beside this file.", ""]
    return "\n".join(L)


def print_summary(result: dict[str, Any]) -> None:
    a, b = result.get("phase_a", {}), result.get("phase_b", {})
    rows = []
    if a:
        pk = a.get("pickup", {}).get("from_due_ms", {})
        rows += [("A accepted tasks/s", fmt(a.get("accepted_per_s"))),
                 ("A completed tasks/s end to end", fmt(a.get("completed_per_s"))),
                 ("A pickup p50 / p99 ms (saturated)", f"{fmt(pk.get('p50'))} / {fmt(pk.get('p99'))}")]
    for name, f in b.get("lateness", {}).items():
        d = f["from_due_ms"]
        rows.append((f"B {name}: p50 / p99 / max ms, early",
                     f"{fmt(d.get('p50'), 1)} / {fmt(d.get('p99'), 1)} / {fmt(d.get('max'), 1)}, {f['early_starts']}"))
    raw = result.get("raw_parts")
    if raw:
        rows += [("raw Kafka produce+consume msgs/s", fmt(raw["kafka"]["combined_per_s"])),
                 ("raw MariaDB insert+claim rows/s", fmt(raw["mysql"]["combined_per_s"]))]
        rows += [(k, fmt(v, 3) if v is not None and v < 10 else fmt(v)) for k, v in result["ratios"].items()]
    width = max(len(k) for k, _ in rows) if rows else 10
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def write_report(result: dict[str, Any], command: str, name: str, directory: pathlib.Path) -> list[pathlib.Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / f"{name}.md", directory / f"{name}.json"
    js.write_text(json.dumps({**result, "command": command}, indent=2, default=str) + "\n")
    md.write_text(format_report(result, command))
    return [md, js]


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
    p.add_argument("--profile", choices=["py-spy", "py-spy-native", "cprofile", "none"], default="py-spy",
                   help="py-spy: Python stacks, node not paused (default); py-spy-native: with C frames"
                        " (protobuf, grpc, librdkafka), node paused per sample; cprofile: main thread only")
    p.add_argument("--profile-rate", type=int, default=50, help="py-spy samples per second (50)")
    p.add_argument("--raw-n", type=int, default=None, help="raw parts N (default: --n)")
    p.add_argument("--no-raw", action="store_true", help="skip the raw parts")
    p.add_argument("--locust-s", type=int, default=0, help="also run locustfile.py for this many seconds (0: no)")
    p.add_argument("--locust-users", type=int, default=4)
    p.add_argument("--serve", type=int, default=0, metavar="SECONDS",
                   help="only start the world, node and executors and keep them up this long (for Locust by hand)")
    p.add_argument("--node-log-level", default="INFO")
    stack = StackEndpoints.from_env()
    p.add_argument("--kafka", default=stack.kafka_bootstrap)
    p.add_argument("--zk", default=stack.zk_hosts)
    p.add_argument("--mysql-host", default=stack.host)
    p.add_argument("--mysql-port", type=int, default=stack.mysql_port)
    p.add_argument("--mysql-user", default=stack.mysql_user)
    p.add_argument("--report-name", default="bench_node", help="reports/<name>.md and .json (default bench_node)")
    p.add_argument("--report-dir", type=pathlib.Path, default=REPORTS_DIR)
    p.add_argument("--no-report", action="store_true", help="print only")
    p.add_argument("--rerender", action="store_true",
                   help="run nothing: rewrite reports/<report-name>.md from its .json")
    args = p.parse_args(argv)
    for item in args.node_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            p.error(f"--node-env wants NAME=VALUE, got {item!r}")
        NODE_ENV[name] = value
    if args.rerender:
        js = args.report_dir / f"{args.report_name}.json"
        result = json.loads(js.read_text())
        (args.report_dir / f"{args.report_name}.md").write_text(format_report(result, result.get("command", "?")))
        print(f"rewrote {args.report_dir / (args.report_name + '.md')}")
        return
    if args.kafka_delay[1] * 1000 > args.route_threshold_ms:
        p.error("--kafka-delay max must be <= --route-threshold-ms, or those tasks take the MySQL path")
    if args.mysql_delay[0] * 1000 <= args.route_threshold_ms:
        p.error("--mysql-delay min must be > --route-threshold-ms, or those tasks take the Kafka path")

    def on_term(signum, frame):  # SIGTERM: clean up like Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    command = " ".join(["python", "loadtest/bench_node.py", *(argv if argv is not None else sys.argv[1:])]).strip()
    result = run(args)
    if args.serve:
        return
    print(format_report(result, command))
    print_summary(result)
    if not args.no_report:
        for path in write_report(result, command, args.report_name, args.report_dir):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
