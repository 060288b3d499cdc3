"""What the machine and its processes did during a run: CPU and RSS per process from
/proc, the MariaDB server's row and statement counters, the facts of the machine, and
the WARNING/ERROR lines of the node logs.

Every CPU figure in loadtest/ is read here. Three views of CPU, all from the same /proc
readers:

- `CpuMeter`: named processes between two points (a phase), plus the whole machine:
  what is left over is "everything else on the machine".
- `GroupCpuMeter`: the same for groups of processes whose members come and go (a
  worker and whatever it forks), each group's PIDs asked for at both points.
- `ProcessSampler`: once a second, every process on the machine, grouped (the nodes,
  this benchmark's processes, the stack servers, anything else): on a shared 2-core
  box, the first suspect for an odd figure.

CPU is utime + stime (field 14 and 15 of /proc/<pid>/stat), RSS the resident pages of
/proc/<pid>/statm.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import re
import socket
import statistics
import subprocess
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.stack import StackEndpoints
    from harness.world import World

REPO = pathlib.Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
STACK_SERVERS = ("mariadb", "mariadb2", "kafka", "zookeeper")
"""deploy/local/stack.sh's servers; mariadb2 is the task store's second shard (idle unless --shards 2)."""


# ---------------------------------------------------------------- /proc readers

def machine_jiffies() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine since boot, from /proc/stat."""
    fields = [int(x) for x in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return float(total - idle), float(total)


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc stat file after the command name (which may hold spaces)."""
    return pathlib.Path(path).read_text().rsplit(")", 1)[1].split()


def process_cpu(pid: int | None) -> tuple[float, float] | None:
    """(user, system) CPU seconds of a process, all its threads; None when it is gone."""
    if pid is None:
        return None
    try:
        f = _stat_fields(f"/proc/{pid}/stat")
        return int(f[11]) / TICK, int(f[12]) / TICK
    except (OSError, ValueError, IndexError):
        return None


def process_rss(pid: int | None) -> int | None:
    """Resident memory of a process in bytes; None when it is gone."""
    if pid is None:
        return None
    try:
        return int(pathlib.Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{tid: (comm, CPU seconds)} of every thread of a process."""
    out: dict[int, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            raw = pathlib.Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            comm = raw[raw.index("(") + 1:raw.rindex(")")]
            f = raw.rsplit(")", 1)[1].split()
            out[int(tid)] = (comm, (int(f[11]) + int(f[12])) / TICK)
        except (OSError, ValueError, IndexError):
            continue
    return out


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of a process, all its threads; None when it is gone."""
    split = process_cpu(pid)
    return None if split is None else split[0] + split[1]


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores; idle and iowait left out)."""
    return machine_jiffies()[0] / TICK


def _every_stat() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/<pid>/stat after the command name) of every process."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                yield int(entry), _stat_fields(f"/proc/{entry}/stat")
            except (OSError, IndexError):
                continue


def descendants(root: int) -> list[int]:
    """root and every process below it (root first), from the ppid field of /proc/*/stat."""
    children: defaultdict[int, list[int]] = defaultdict(list)
    for pid, fields in _every_stat():
        children[int(fields[1])].append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def group_members(pgid: int) -> list[int]:
    """PIDs of the live (not zombie) processes whose process group is pgid."""
    return [pid for pid, fields in _every_stat() if int(fields[2]) == pgid and fields[0] != "Z"]


def stack_pids() -> dict[str, int]:
    """PIDs of the local stack's servers (deploy/local/stack.sh's pid files), when readable."""
    pids = {}
    for name in STACK_SERVERS:
        try:
            pid = int((REPO / ".stack" / f"{name}.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if pathlib.Path(f"/proc/{pid}/stat").exists():
            pids[name] = pid
    return pids


# ---------------------------------------------------------------- CPU of named processes over a phase

class CpuMeter:
    """CPU seconds of named processes and of the whole machine between start() and stop(),
    and each process's resident memory at stop()."""

    def __init__(self, pids: dict[str, int | None]):
        self.pids = dict(pids)       # None: a process that did not start (its figures are None)
        self._t0: float | None = None
        self._m0: tuple[float, float] | None = None
        self._c0: dict[str, tuple[float, float] | None] = {}

    def start(self) -> CpuMeter:
        self._t0 = time.perf_counter()
        self._m0 = machine_jiffies()
        self._c0 = {name: process_cpu(pid) for name, pid in self.pids.items()}
        return self

    def stop(self) -> dict[str, Any]:
        if self._t0 is None or self._m0 is None:
            raise RuntimeError("CpuMeter.stop() before start()")
        wall = time.perf_counter() - self._t0
        busy_s = (machine_jiffies()[0] - self._m0[0]) / TICK
        cores = os.cpu_count() or 1
        procs: dict[str, float | None] = {}
        system: dict[str, float | None] = {}
        rss: dict[str, float | None] = {}
        for name, pid in self.pids.items():
            c0, c1 = self._c0.get(name), process_cpu(pid)
            if c0 is None or c1 is None:
                procs[name] = system[name] = None
            else:
                procs[name] = round(c1[0] + c1[1] - c0[0] - c0[1], 2)
                system[name] = round(c1[1] - c0[1], 2)
            r = process_rss(pid)
            rss[name] = None if r is None else round(r / 1e6, 1)
        known = sum(v for v in procs.values() if v is not None)
        return {"wall_s": round(wall, 2), "cores": os.cpu_count(), "machine_busy_cpu_s": round(busy_s, 2),
                "machine_busy_pct_of_all_cores": round(100 * busy_s / (wall * cores), 1),
                "process_cpu_s": procs, "process_system_cpu_s": system, "process_rss_mb": rss,
                "other_processes_cpu_s": round(busy_s - known, 2)}


class GroupCpuMeter:
    """CPU seconds of groups of processes and of the whole machine between start() and stop().
    A group is a callable giving its PIDs at the time, asked at both points: a process that
    appeared in between counts whole, one that exited in between is lost (and counted)."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]):
        self.groups = groups
        self._t0 = 0.0
        self._m0 = 0.0
        self._c0: dict[str, dict[int, float]] = {}

    def _snapshot(self) -> dict[str, dict[int, float]]:
        snap: dict[str, dict[int, float]] = {}
        for name, pids in self.groups.items():
            snap[name] = {}
            for pid in pids():
                cpu = process_cpu_s(pid)
                if cpu is not None:
                    snap[name][pid] = cpu
        return snap

    def start(self) -> GroupCpuMeter:
        self._t0, self._m0, self._c0 = time.perf_counter(), machine_busy_s(), self._snapshot()
        return self

    def stop(self) -> dict[str, Any]:
        """wall_s, machine_busy_s, cores, and per group: cpu_s, by_pid (CPU s of each process
        present at the end, in the order its callable gave them) and gone (processes that exited)."""
        wall, busy = time.perf_counter() - self._t0, machine_busy_s() - self._m0
        c1 = self._snapshot()
        groups: dict[str, dict[str, Any]] = {}
        for name in self.groups:
            before, after = self._c0.get(name, {}), c1.get(name, {})
            by_pid = {pid: round(cpu - before.get(pid, 0.0), 3) for pid, cpu in after.items()}
            groups[name] = {"cpu_s": round(sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()), 3),
                            "by_pid": by_pid, "gone": len(set(before) - set(after))}
        return {"wall_s": wall, "machine_busy_s": busy, "cores": os.cpu_count() or 1, "groups": groups}


# ---------------------------------------------------------------- every process, once a second

class ProcessSampler(threading.Thread):
    """Once a second: the machine's CPU busy share and load average, and the CPU of every
    process by group: "nodes" and "bench" (the roles this run gives its processes, and
    any other child of this one), "stack" (the stack's servers) and "others" (a
    colleague's run, a build). Processes with a role also get their largest RSS."""

    STACK = re.compile(r"mariadbd|kafka\.Kafka|ZooKeeperServerMain")
    GROUPS = ("nodes", "bench", "stack", "others")

    def __init__(self, interval_s: float = 1.0):
        super().__init__(name="process-sampler", daemon=True)
        self.interval_s = interval_s
        self.me = os.getpid()
        self.roles: dict[int, tuple[str, str]] = {self.me: ("bench", "main")}   # pid -> (group, name)
        self.roles.update({pid: ("stack", name) for name, pid in stack_pids().items()})
        self.samples: list[tuple[float, float, float, dict[str, float]]] = []  # t, busy, loadavg, group -> cores
        self.cpu_s: defaultdict[tuple[str, str], float] = defaultdict(float)  # (group, name) -> CPU s
        self.rss_max: dict[tuple[str, str], int] = {}                         # (group, name) -> bytes
        self.seen: dict[str, list[float]] = {}                                 # other command -> [first, last]
        self._prev: dict[int, int] = {}
        self._halt = threading.Event()

    def role(self, pid: int, group: str, name: str) -> None:
        """Name a process of this run (a node, the executor, the load)."""
        self.roles[pid] = (group, name)

    def _role_of(self, pid: int, ppid: int, d: pathlib.Path, t: float) -> tuple[str, str]:
        if pid in self.roles:
            return self.roles[pid]
        if ppid == self.me:
            return ("bench", "child")
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = ""
        m = self.STACK.search(cmd)
        if m:
            return ("stack", m.group(0))
        key = re.sub(r"--(grpc|admin)-port \d+", "", cmd or "[kernel threads]")
        key = re.sub(r"\S*go-build\S*", "<go-build>", key)[:100]
        self.seen.setdefault(key, [t, t])[1] = t
        return ("others", key)

    def _scan(self, t: float, dt_s: float) -> dict[str, float]:
        cur: dict[int, int] = {}
        groups: defaultdict[str, float] = defaultdict(float)                   # group -> CPU s
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            pid = int(d.name)
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
                ppid, ticks = int(f[1]), int(f[11]) + int(f[12])
            except (OSError, ValueError, IndexError):
                continue
            cur[pid] = ticks
            if pid in self.roles:
                rss = process_rss(pid)
                if rss is not None:
                    self.rss_max[self.roles[pid]] = max(rss, self.rss_max.get(self.roles[pid], 0))
            if pid not in self._prev:
                continue                                  # first sight: no delta yet
            delta = (ticks - self._prev[pid]) / TICK
            if delta <= 0:
                continue
            group, name = self._role_of(pid, ppid, d, t)
            self.cpu_s[(group, name)] += delta
            groups[group] += delta
        self._prev = cur
        return {g: v / dt_s for g, v in groups.items()} if dt_s > 0 else {}

    def run(self) -> None:
        last = machine_jiffies()
        t_last = time.time()
        self._scan(t_last, 0)
        while not self._halt.wait(self.interval_s):
            now = machine_jiffies()
            busy, total = now[0] - last[0], now[1] - last[1]
            last = now
            t = time.time()
            groups = self._scan(t, t - t_last)
            t_last = t
            self.samples.append((t, busy / total if total else 0.0, os.getloadavg()[0], groups))

    def stop(self) -> None:
        """Safe before start() and twice."""
        self._halt.set()
        if self.is_alive():
            self.join(5)

    def window(self, lo: float, hi: float) -> dict[str, Any]:
        """Mean CPU busy share, and mean and largest cores per group, over the samples in [lo, hi]."""
        near = [x for x in self.samples if lo <= x[0] <= hi]
        if not near:
            return {}
        out: dict[str, Any] = {"cpu_busy_mean": statistics.mean(b for _, b, _, _ in near)}
        for g in self.GROUPS:
            vals = [gr.get(g, 0.0) for _, _, _, gr in near]
            out[f"{g}_cores_mean"] = statistics.mean(vals)
            out[f"{g}_cores_max"] = max(vals)
        return out

    def summary(self, t0: float) -> dict[str, Any]:
        busy = [b for _, b, _, _ in self.samples]
        wall = (self.samples[-1][0] - self.samples[0][0]) if len(self.samples) > 1 else 0.0
        by_group: defaultdict[str, float] = defaultdict(float)
        for (g, _n), v in self.cpu_s.items():
            by_group[g] += v
        top = sorted(((n, v) for (g, n), v in self.cpu_s.items() if g == "others"), key=lambda kv: -kv[1])[:8]
        return {"cpu_busy_mean": statistics.mean(busy) if busy else None, "cpu_busy_max": max(busy, default=None),
                "loadavg_max": max((la for _, _, la, _ in self.samples), default=None), "wall_s": wall,
                "cpu_s_by_group": dict(by_group),
                "cpu_s_by_process": {f"{g}:{n}": round(v, 2) for (g, n), v in sorted(self.cpu_s.items())
                                     if g != "others"},
                "rss_mb_max_by_process": {f"{g}:{n}": round(v / 1e6, 1) for (g, n), v in sorted(self.rss_max.items())},
                "others_top": [{"cmd": k, "cpu_s": v, "first_s": round(self.seen[k][0] - t0, 1),
                                "last_s": round(self.seen[k][1] - t0, 1)} for k, v in top],
                "per_second": [(round(t - t0, 1), round(b, 3), la, {g: round(v, 2) for g, v in gr.items()})
                               for t, b, la, gr in self.samples]}


# ---------------------------------------------------------------- the MariaDB server's counters

MYSQL_COUNTERS = {"Handler_write": "inserted", "Handler_update": "updated", "Handler_delete": "deleted",
                  "Questions": "statements", "Com_commit": "commits"}


def mysql_counters(world: World) -> dict[str, int]:
    """The server's counters of rows written (Handler_write / _update / _delete: rows
    inserted, updated and deleted in tables, internal temporary tables not included),
    of statements (Questions) and of commits (Com_commit). Server-wide: run on a quiet
    server. Summed over the world's shards (each its own server)."""
    totals: dict[str, int] = {}
    for name, value in world.sql_all("SHOW GLOBAL STATUS WHERE Variable_name IN"
                                     f" ({', '.join(repr(n) for n in MYSQL_COUNTERS)})"):
        totals[MYSQL_COUNTERS[name]] = totals.get(MYSQL_COUNTERS[name], 0) + int(value)
    return totals


def mysql_per_task(before: dict[str, int], after: dict[str, int], tasks: int) -> dict[str, Any]:
    """The counters' delta over a phase, and per task: what each task cost the server,
    whatever statement did it."""
    d: dict[str, Any] = {k: after[k] - before[k] for k in after}
    d["per_task"] = (d["inserted"] + d["updated"] + d["deleted"]) / tasks if tasks else None
    d["statements_per_task"] = d.pop("statements") / tasks if tasks else None
    d["commits_per_task"] = d.pop("commits") / tasks if tasks else None
    return d


# ---------------------------------------------------------------- the machine

def zk_conf(stack: StackEndpoints) -> dict[str, str]:
    """tickTime and the session timeout bounds of the ZooKeeper server (`conf`)."""
    try:
        with socket.create_connection((stack.host, stack.zk_port), timeout=3) as s:
            s.sendall(b"conf")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        conf = dict(ln.split("=", 1) for ln in data.decode().splitlines() if "=" in ln)
        return {k: conf[k] for k in ("tickTime", "minSessionTimeout", "maxSessionTimeout") if k in conf}
    except Exception as exc:
        return {"error": str(exc)}


def git_revision() -> str | None:
    """HEAD, and whether the node or the SDK has uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "dispatcher", "cluster", "membership", "sdk",
                                "proto"], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + (" + uncommitted changes to the node or SDK" if dirty.stdout.strip() else "")


def machine_facts(stack: StackEndpoints) -> dict[str, Any]:
    """Cores, load, versions of the servers and libraries, the database's settings,
    ZooKeeper's tick and session bounds, the CPU model and the git revision."""
    import importlib.metadata as md

    from loadtest.raw_parts import machine_facts as server_facts
    try:
        f = server_facts(stack.host, stack.mysql_port, stack.mysql_user)
    except Exception as exc:
        f = {"nproc": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2), "facts_error": str(exc)}
    f["zookeeper"] = zk_conf(stack)
    with contextlib.suppress(Exception):
        cpu = [ln for ln in pathlib.Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        f["cpu"] = cpu[0].split(":", 1)[1].strip() if cpu else None
    f["git"] = git_revision()
    for dist in ("grpcio", "protobuf", "kazoo", "uhashring"):
        with contextlib.suppress(md.PackageNotFoundError):
            f[dist] = md.version(dist)
    return f


# ---------------------------------------------------------------- node logs

_INTERESTING = re.compile(r" (WARNING|ERROR|CRITICAL) |Traceback|Exception")


def scan_logs(logs: pathlib.Path, per_node: int = 6) -> dict[str, Any]:
    """WARNING/ERROR lines per log in `logs`: counts by message shape, and the first few."""
    out = {}
    for path in sorted(logs.glob("*.log")):
        lines = path.read_text(errors="replace").splitlines()
        hits = [ln for ln in lines if _INTERESTING.search(ln)]
        shapes: Counter[str] = Counter()
        first: list[str] = []
        for ln in hits:
            shape = re.sub(r"\d+(\.\d+)?", "#", ln[24:])[:140]
            if shape not in shapes and len(first) < per_node:
                first.append(ln[:300])
            shapes[shape] += 1
        out[path.stem] = {"lines": len(lines), "warnings_errors": len(hits),
                          "by_shape": dict(shapes.most_common(10)), "first": first}
    return out
