"""Where the node spends its time: py-spy or cProfile on the node process, and the
samples grouped by function, activity, library and thread.

- `py-spy` (default): `py-spy record --nonblocking`, Python stacks with thread names;
  the node is never paused, and a sample counts a thread that is running or ready to
  run (work that waits on MariaDB reads high).
- `py-spy-native`: with C frames (protobuf, grpc, librdkafka, the GC); py-spy pauses
  the node for every sample, and samples blocked in waits are dropped: the shares
  approximate CPU, the run's rates are not to be quoted.
- `cprofile`: the node under `python -m cProfile`, main thread only.

CPU per node thread comes from /proc (observe.thread_cpu) beside the samples.
"""
from __future__ import annotations

import collections
import contextlib
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any


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
     re.compile(r"Dispatch\._deliver\b|ExecutorPool\.|Dispatch\._decide\b")),
    ("engine: dispatch batch (_run_batch)", re.compile(r"Dispatch\._run_batch\b")),
    ("engine: dispatch loop / heap pops", re.compile(r"Dispatch\.run\b|EtaHeap\.")),
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



# ---------------------------------------------------------------- one profile of a run

PROFILES = ("py-spy", "py-spy-native", "cprofile", "none")


def pyspy_for(kind: str, pid: int, run_dir: pathlib.Path, rate: int) -> PySpy | None:
    """The py-spy a profile kind needs (None for cprofile and none); not started."""
    if kind not in ("py-spy", "py-spy-native"):
        return None
    return PySpy(pid, run_dir / "node.pyspy.txt", rate, run_dir / "py-spy.log", native=kind == "py-spy-native")


def profile_figures(kind: str, run_dir: pathlib.Path, threads_before: dict[int, tuple[str, float]],
                    threads_after: dict[int, tuple[str, float]], cprofile_file: pathlib.Path | None) -> dict[str, Any]:
    """The report's profile: what py-spy (or cProfile) wrote, analysed, with the node's CPU by
    thread between the two /proc snapshots."""
    if kind in ("py-spy", "py-spy-native"):
        pyspy_file = run_dir / "node.pyspy.txt"
        if not pyspy_file.exists():
            return {"error": f"py-spy wrote nothing; see {run_dir / 'py-spy.log'}"}
        stacks = parse_pyspy_raw(pyspy_file)
        dropped = cond = 0
        if kind == "py-spy-native":
            stacks, dropped, cond = drop_waits(stacks)
        prof = analyze_profile(stacks, top=20)
        prof["dropped_wait_samples"] = dropped
        prof["dropped_cond_wait_samples"] = cond
        names = {tid: name for name, tid, _f, _n in stacks if tid is not None}
        prof["node_threads_cpu"] = node_thread_cpu_delta(threads_before, threads_after, names)
        prof["raw_file"] = str(pyspy_file)
        return prof
    if kind == "cprofile":
        if cprofile_file is None or not cprofile_file.exists():
            return {"error": "the node wrote no cProfile file (did it exit cleanly on SIGTERM?)"}
        prof = analyze_cprofile(cprofile_file)
        prof["node_threads_cpu"] = node_thread_cpu_delta(threads_before, threads_after, {})
        return prof
    return {}
