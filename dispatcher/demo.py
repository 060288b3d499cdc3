"""`taskring demo`: the README's main job, on the local stack.

Starts N dispatcher nodes as separate processes (a real cluster through
ZooKeeper), waits until the ring has settled, runs an executor in this process,
submits a mixed batch of tasks through the nodes and follows every task to its
end. Then it prints what happened to each task (path, state, attempts, lateness,
history), the ring, and a one-line summary, and stops the nodes.

    taskring demo [--nodes 3]

Exits 0 only if every task ended as expected, no attempt started before it was
due, and every node ran and stopped cleanly. Needs the local stack
(`bash deploy/local/stack.sh up`); uses its ZooKeeper chroot `/taskring` and its
database `taskring`.

Environment:

    TASKRING_DEMO_KEEP=1           leave the nodes running afterwards (prints how to stop them)
    TASKRING_DEMO_SINGLE=1         one `--single` node instead of a cluster (fallback)
    TASKRING_DEMO_GRPC_PORT=7071   first node's gRPC port (node k: +k-1); free ports if taken
    TASKRING_DEMO_ADMIN_PORT=7081  first node's admin port (node k: +k-1)
    TASKRING_DEMO_SETTLE_TIMEOUT=60  seconds to wait for the ring to settle
    TASKRING_DEMO_TIMEOUT=90       seconds to wait for every task to finish
    TASKRING_ZK / TASKRING_KAFKA / TASKRING_MYSQL_PORT / TASKRING_MYSQL_DATABASE
                                   as for `taskring node`; TASKRING_ZK_PORT and
                                   TASKRING_KAFKA_PORT (the stack's) are honoured too
Node logs: .stack/logs/demo-node-<k>.log (TASKRING_STACK_DIR overrides .stack).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections import Counter

ROUTE_THRESHOLD_MS = 10_000
NAMESPACE = "demo"
_TERMINAL = ("succeeded", "dead_lettered", "cancelled")


def say(message: str = "") -> None:
    print(message, flush=True)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parent.parent


def _stack_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TASKRING_STACK_DIR") or _repo_root() / ".stack")


# ---------------------------------------------------------------- endpoints


@dataclasses.dataclass(frozen=True)
class Endpoints:
    zk: str          # hosts with chroot, as TASKRING_ZK
    kafka: str       # bootstrap servers, as TASKRING_KAFKA
    mysql_port: int
    database: str

    @classmethod
    def from_env(cls) -> Endpoints:
        env = os.environ
        zk = env.get("TASKRING_ZK") or f"127.0.0.1:{env.get('TASKRING_ZK_PORT', '22181')}/taskring"
        kafka = env.get("TASKRING_KAFKA") or f"127.0.0.1:{env.get('TASKRING_KAFKA_PORT', '29092')}"
        return cls(zk=zk, kafka=kafka, mysql_port=int(env.get("TASKRING_MYSQL_PORT", "23306")),
                   database=env.get("TASKRING_MYSQL_DATABASE", "taskring"))

    def node_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(TASKRING_ZK=self.zk, TASKRING_KAFKA=self.kafka, TASKRING_MYSQL_PORT=str(self.mysql_port),
                   TASKRING_MYSQL_DATABASE=self.database, TASKRING_ROUTE_THRESHOLD_MS=str(ROUTE_THRESHOLD_MS),
                   PYTHONUNBUFFERED="1")
        env.pop("TASKRING_NODE_ID", None)   # each node gets its own --node-id
        return env


def _host_port(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host or "127.0.0.1", int(port)


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_stack(ep: Endpoints) -> list[str]:
    """What of the stack does not answer (empty: all three do)."""
    problems = []
    zk_host, zk_port = _host_port(ep.zk.split("/", 1)[0].split(",")[0])
    kafka_host, kafka_port = _host_port(ep.kafka.split(",")[0])
    for name, host, port in (("ZooKeeper", zk_host, zk_port), ("Kafka", kafka_host, kafka_port),
                             ("MariaDB", "127.0.0.1", ep.mysql_port)):
        if not _port_open(host, port):
            problems.append(f"{name} does not answer on {host}:{port}")
    return problems


def live_members(zk_hosts: str) -> list[str]:
    """Dispatcher nodes registered in the chroot right now."""
    from kazoo.client import KazooClient
    from membership.paths import NODES_ROOT

    zk = KazooClient(hosts=zk_hosts, timeout=5)
    with warnings.catch_warnings():  # a fresh ZooKeeper has no chroot yet: nothing is live
        warnings.simplefilter("ignore")
        zk.start(timeout=10)
    try:
        return sorted(zk.get_children(NODES_ROOT)) if zk.exists(NODES_ROOT) else []
    finally:
        zk.stop()
        zk.close()


# ---------------------------------------------------------------- node processes


@dataclasses.dataclass
class NodeProc:
    index: int
    node_id: str
    grpc_port: int
    admin_port: int
    log_path: pathlib.Path
    proc: subprocess.Popen | None = None

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def admin(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def plan_nodes(count: int) -> tuple[list[NodeProc], str | None]:
    """Node ids, ports and logs; fixed ports unless one is taken (then free ones)."""
    grpc_base = int(os.environ.get("TASKRING_DEMO_GRPC_PORT", "7071"))
    admin_base = int(os.environ.get("TASKRING_DEMO_ADMIN_PORT", "7081"))
    logs = _stack_dir() / "logs"
    wanted = [(grpc_base + i, admin_base + i) for i in range(count)]
    taken = [p for pair in wanted for p in pair if _port_open("127.0.0.1", p)]
    note = None
    if taken or len({p for pair in wanted for p in pair}) != 2 * count:
        note = f"ports {', '.join(map(str, taken))} are taken: using free ports instead"
        wanted = [(_free_port(), _free_port()) for _ in range(count)]
    return [NodeProc(i + 1, f"demo-node-{i + 1}", g, a, logs / f"demo-node-{i + 1}.log")
            for i, (g, a) in enumerate(wanted)], note


def start_node(node: NodeProc, env: dict[str, str], single: bool) -> None:
    node.log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "dispatcher.cli", "node", "--node-id", node.node_id,
           "--grpc-port", str(node.grpc_port), "--admin-port", str(node.admin_port)]
    if single:
        cmd.append("--single")
    with open(node.log_path, "w") as log:
        log.write(f"=== {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} "
                  f"taskring demo: {' '.join(cmd[1:])}\n")
        log.flush()
        # A session of its own: a Ctrl-C in the terminal reaches the demo, which
        # stops the nodes in order; with TASKRING_DEMO_KEEP=1 they outlive it.
        node.proc = subprocess.Popen(cmd, cwd=_repo_root(), env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _http_get(url: str, token: str | None, timeout_s: float = 2.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def tail(path: pathlib.Path, lines: int = 30) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except OSError:
        return "(no log)\n"


def wait_ready(nodes: list[NodeProc], token: str | None, timeout_s: float) -> str | None:
    """None when every node answers /readyz 200; else what went wrong."""
    deadline = time.monotonic() + timeout_s
    pending = {n.node_id: n for n in nodes}
    last: dict[str, str] = {}
    while pending:
        for node_id, node in list(pending.items()):
            if not node.alive():
                return f"{node_id} exited with code {node.proc.returncode} before it was ready"
            try:
                code, body = _http_get(node.admin + "/readyz", token)
            except OSError as exc:
                last[node_id] = f"{type(exc).__name__}: {exc}"
                continue
            if code == 200:
                del pending[node_id]
            else:
                last[node_id] = body.decode(errors="replace").strip()
        if pending and time.monotonic() > deadline:
            return "; ".join(f"{nid} not ready after {timeout_s:.0f}s ({last.get(nid, 'no answer')})"
                             for nid in pending)
        if pending:
            time.sleep(0.2)
    return None


def ring_problems(ring: dict, expected_members: set[str]) -> list[str]:
    """Why this node's view of the ring is not settled (empty: settled)."""
    problems = []
    members = set(ring.get("members", {}))
    if members != expected_members:
        problems.append(f"members {sorted(members)} (expected {sorted(expected_members)})")
    unsettled = [s for s in ring["slots"] if s["actual_owner"] is None or s["desired_owner"] != s["actual_owner"]]
    if unsettled:
        problems.append(f"{len(unsettled)} slots not owned by their desired owner: "
                        + ", ".join(f"{s['slot']} ({s['desired_owner']} wanted, {s['actual_owner']} has)"
                                    for s in unsettled[:6]) + (" ..." if len(unsettled) > 6 else ""))
    return problems


def wait_settled(nodes: list[NodeProc], token: str | None, timeout_s: float) -> tuple[bool, dict[str, object]]:
    """Every node sees all members, and every slot's actual owner is its desired owner,
    with the same desired map on every node. Returns (settled, last view per node)."""
    from dispatcher.admin.ring_cli import fetch_ring

    expected = {n.node_id for n in nodes}
    deadline = time.monotonic() + timeout_s
    views: dict[str, object] = {}
    while True:
        problems = []
        for node in nodes:
            if not node.alive():
                views[node.node_id] = f"process exited with code {node.proc.returncode}"
                problems.append(f"{node.node_id} exited")
                continue
            try:
                ring = fetch_ring(node.admin, token)
            except (OSError, ValueError) as exc:
                views[node.node_id] = f"{type(exc).__name__}: {exc}"
                problems.append(f"{node.node_id}: /ring failed")
                continue
            views[node.node_id] = ring
            problems += [f"{node.node_id}: {p}" for p in ring_problems(ring, expected)]
        rings = [v for v in views.values() if isinstance(v, dict)]
        if not problems and len(rings) == len(nodes):
            desired = [{s["slot"]: s["desired_owner"] for s in r["slots"]} for r in rings]
            if all(d == desired[0] for d in desired):
                return True, views
            problems.append("nodes disagree on the desired owners")
        if time.monotonic() > deadline or any(not n.alive() for n in nodes):
            for p in problems:
                say(f"demo:   {p}")
            return False, views
        time.sleep(0.25)


def stop_nodes(nodes: list[NodeProc], timeout_s: float = 30.0) -> list[str]:
    """SIGTERM every node, wait for each with a deadline, SIGKILL as a last resort.
    Returns the problems (a node that had to be killed or exited non-zero)."""
    problems = []
    t0 = time.monotonic()
    running = [n for n in nodes if n.alive()]
    for n in nodes:
        if n.proc is not None and not n.alive():
            problems.append(f"{n.node_id} had already exited with code {n.proc.returncode}; log: {n.log_path}")
    for n in running:
        try:
            n.proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = t0 + timeout_s
    codes = []
    for n in running:
        try:
            code = n.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            problems.append(f"{n.node_id} (pid {n.proc.pid}) did not exit within {timeout_s:.0f}s of SIGTERM: "
                            f"SIGKILL; log: {n.log_path}")
            n.proc.kill()
            code = n.proc.wait(timeout=10)
        else:
            if code != 0:
                problems.append(f"{n.node_id} exited with code {code} after SIGTERM; log: {n.log_path}")
        codes.append(code)
    if running:
        say(f"demo: stopped {len(running)} node{'s' if len(running) > 1 else ''} with SIGTERM in "
            f"{time.monotonic() - t0:.1f}s (exit codes {', '.join(map(str, codes))})")
    return problems


# ---------------------------------------------------------------- the work


class Handlers:
    """The demo's handlers; they count calls per task to compare with the server's attempts."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _count(self, ctx) -> None:
        with self._lock:
            self.calls[ctx.task_id] += 1

    def register(self, executor) -> None:
        from taskring import NonRetryableError, RetryableError

        @executor.handler("send_email")
        def send_email(ctx) -> None:
            self._count(ctx)
            time.sleep(0.02)  # pretend to talk to a mail server

        @executor.handler("send_sms")
        def send_sms(ctx) -> None:
            self._count(ctx)

        @executor.handler("ship_order")
        def ship_order(ctx) -> None:
            self._count(ctx)

        @executor.handler("charge_card")
        def charge_card(ctx) -> None:
            self._count(ctx)
            if ctx.attempt <= 2:
                raise RetryableError(f"payment gateway busy (attempt {ctx.attempt})")

        @executor.handler("reconcile")
        def reconcile(ctx) -> None:
            self._count(ctx)
            raise RuntimeError(f"ledger {ctx.payload.get('ledger')} does not balance")

        @executor.handler("validate_order")
        def validate_order(ctx) -> None:
            self._count(ctx)
            raise NonRetryableError(f"order {ctx.payload.get('order')} has no items")


@dataclasses.dataclass
class Planned:
    spec: object            # taskring.TaskSpec
    via: int                # index of the node it is submitted through
    expect_state: str
    expect_attempts: int
    cancel: bool = False
    task_id: str = ""
    due_at: dt.datetime | None = None
    info: object = None     # taskring.TaskInfo, once looked up


def plan_tasks(node_count: int, run: str) -> list[Planned]:
    from taskring import RetryPolicy, TaskSpec

    short_retries = RetryPolicy.tiered(0.5, 1)

    def spec(task_type: str, payload: dict, **kw) -> TaskSpec:
        return TaskSpec(NAMESPACE, task_type, {**payload, "run": run}, trace_id=f"demo-{run}", **kw)

    other = [2, 3] if node_count >= 3 else [min(2, node_count)] * 2
    return [
        # through node 1, in one SubmitBatch
        Planned(spec("send_email", {"to": "ana@example.com"}), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "ben@example.com"}), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "cho@example.com"}, delay=3), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "dev@example.com"}, delay=15), 1, "succeeded", 1),
        Planned(spec("charge_card", {"order": 1001, "cents": 4200}, priority="high",
                     max_retries=3, retry_policy=short_retries), 1, "succeeded", 3),
        Planned(spec("charge_card", {"order": 1002, "cents": 990}, delay=15,
                     max_retries=3, retry_policy=short_retries), 1, "succeeded", 3),
        Planned(spec("reconcile", {"ledger": "2026-11"}, max_retries=2, retry_policy=short_retries),
                1, "dead_lettered", 3),
        Planned(spec("validate_order", {"order": 1003}, max_retries=5), 1, "dead_lettered", 1),
        Planned(spec("send_email", {"to": "eve@example.com"}, delay=3), 1, "cancelled", 0, cancel=True),
        Planned(spec("send_email", {"to": "fay@example.com"}, delay=15), 1, "cancelled", 0, cancel=True),
        # one at a time through the other nodes: any node accepts any task
        Planned(spec("ship_order", {"order": 1004}), other[0], "succeeded", 1),
        Planned(spec("send_sms", {"to": "+6590000001"}, delay=3), other[0], "succeeded", 1),
        Planned(spec("send_sms", {"to": "+6590000002"}), other[1], "succeeded", 1),
        Planned(spec("ship_order", {"order": 1005}, delay=15), other[1], "succeeded", 1),
    ]


def submit_all(planned: list[Planned], clients: dict[int, object]) -> None:
    first = [p for p in planned if p.via == 1]
    results = clients[1].submit_batch([p.spec for p in first])
    for p, r in zip(first, results):
        p.task_id, p.due_at = r.task_id, r.due_at
    for p in planned:
        if p.via != 1:
            s = p.spec
            r = clients[p.via].submit(s.namespace, s.task_type, s.payload, delay=s.delay, trace_id=s.trace_id)
            p.task_id, p.due_at = r.task_id, r.due_at
    for p in planned:
        if p.cancel:
            clients[1].cancel(p.task_id)


def _ms(t: dt.datetime) -> int:
    return round(t.timestamp() * 1000)


def path_of(info) -> str:
    """The path the task was routed on at submit, from its first `queued` event."""
    for e in info.history:
        if e.state.value == "queued" and e.attempt == 0:
            return e.detail or "?"
    return "?"


def attempt_starts(p: Planned) -> list[tuple[int, int, int]]:
    """(attempt, due ms, started ms) per attempt that ran. The first attempt is due at
    the submit's due_at; a retry is due at its `queued` event (recorded at min(due, now))."""
    due: dict[int, int] = {1: _ms(p.due_at)} if p.due_at else {}
    started: dict[int, int] = {}
    for e in p.info.history:
        if e.state.value == "queued" and e.attempt > 1:
            due[e.attempt] = _ms(e.at)
        elif e.state.value == "running":
            started[e.attempt] = _ms(e.at)
    return [(a, due[a], started[a]) for a in sorted(started) if a in due]


def history_text(info) -> str:
    parts = []
    for e in info.history:
        name = e.state.value
        parts.append(f"{name}#{e.attempt}" if e.attempt and name != "accepted" else name)
    return " > ".join(parts)


def ran_on(info) -> str:
    nodes = []
    for e in info.history:
        if e.state.value == "dispatched" and e.node not in nodes:
            nodes.append(e.node)
    return ",".join(n.removeprefix("demo-") for n in nodes) or "-"


def judge(p: Planned, calls: int) -> tuple[list[str], list[str]]:
    """(problems, notes) for one finished task."""
    problems, notes = [], []
    info = p.info
    if info.state.value != p.expect_state or info.attempts != p.expect_attempts:
        problems.append(f"expected {p.expect_state} after {p.expect_attempts} attempt(s), "
                        f"got {info.state.value} after {info.attempts}")
    for attempt, due_ms, started_ms in attempt_starts(p):
        if started_ms < due_ms:
            problems.append(f"attempt {attempt} started {due_ms - started_ms} ms before it was due")
    if calls != info.attempts:
        notes.append(f"the handler ran {calls} time(s) for {info.attempts} recorded attempt(s)")
    return problems, notes


def print_table(planned: list[Planned], handlers: Handlers) -> tuple[list[str], list[str]]:
    header = (f"{'#':>2}  {'task type':<14} {'via':<6} {'path':<5} {'slot':>4} {'state':<13} {'att':>3}  "
              f"{'ran on':<13} {'late ms (per attempt)':<22} task id")
    say(header)
    say("-" * len(header))
    problems, notes = [], []
    for i, p in enumerate(planned, 1):
        info = p.info
        lateness = ", ".join(str(started - due) for _a, due, started in attempt_starts(p)) or "-"
        bad, note = judge(p, handlers.calls.get(p.task_id, 0))
        problems += [f"task {i} ({info.task_type} {p.task_id}): {b}" for b in bad]
        notes += [f"task {i} ({info.task_type} {p.task_id}): {n}" for n in note]
        mark = "  <-- UNEXPECTED" if bad else ""
        say(f"{i:>2}  {info.task_type:<14} {'node' + str(p.via):<6} {path_of(info):<5} {info.slot:>4} {info.state.value:<13} "
            f"{info.attempts:>3}  {ran_on(info):<13} {lateness:<22} {p.task_id}{mark}")
        say(f"    history: {history_text(info)}")
        if info.last_error:
            say(f"    last error: {info.last_error.splitlines()[0][:110]}")
    return problems, notes


def wait_terminal(planned: list[Planned], client, nodes: list[NodeProc], timeout_s: float) -> bool:
    t0 = time.monotonic()
    last_line, last_print = "", 0.0
    while True:
        for p in planned:
            if p.info is None or not p.info.state.is_terminal:
                p.info = client.get(p.task_id)
        counts = Counter(p.info.state.value for p in planned)
        order = ["succeeded", "dead_lettered", "cancelled", "queued", "retry_wait", "dispatched", "running",
                 "accepted", "failed"]
        line = ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
        now = time.monotonic()
        done = all(p.info.state.is_terminal for p in planned)
        if done or line != last_line or now - last_print >= 5:
            say(f"demo: +{now - t0:5.1f}s  {line}")
            last_line, last_print = line, now
        if done:
            return True
        dead = [n.node_id for n in nodes if not n.alive()]
        if dead:
            say(f"demo: node process(es) exited during the run: {', '.join(dead)}")
        if now - t0 > timeout_s:
            say(f"demo: not every task finished within {timeout_s:.0f}s")
            return False
        time.sleep(0.5)


def _quiet_libraries() -> None:
    """The demo's own output is the show; library INFO chatter goes unless asked for."""
    if "TASKRING_LOG_LEVEL" not in os.environ:
        for name in ("kazoo", "taskring", "membership"):
            logging.getLogger(name).setLevel(logging.WARNING)
        # The poison task's traceback is expected; it is shown in the table instead.
        logging.getLogger("taskring.executor").setLevel(logging.ERROR)


# ---------------------------------------------------------------- main


class Demo:
    def __init__(self, nodes: int, single: bool, keep: bool):
        self.single = single
        self.keep = keep
        self.token = os.environ.get("TASKRING_ADMIN_TOKEN") or None
        self.settle_timeout = float(os.environ.get("TASKRING_DEMO_SETTLE_TIMEOUT", "60"))
        self.task_timeout = float(os.environ.get("TASKRING_DEMO_TIMEOUT", "90"))
        self.ep = Endpoints.from_env()
        self.run_tag = dt.datetime.now(dt.timezone.utc).strftime("%H%M%S")
        self.node_count = nodes
        self.plan: list[NodeProc] = []
        self.executor = None
        self.clients: dict[int, object] = {}
        self.pids_file = _stack_dir() / "demo-nodes.pids"

    # -- before anything starts

    def preflight(self) -> bool:
        problems = check_stack(self.ep)
        if problems:
            for p in problems:
                say(f"demo: {p}")
            say("demo: the local stack is not up: bash deploy/local/stack.sh up")
            return False
        try:
            others = live_members(self.ep.zk)
        except Exception as exc:
            say(f"demo: cannot read the live nodes in ZooKeeper {self.ep.zk}: {type(exc).__name__}: {exc}")
            return False
        if others:
            say(f"demo: dispatcher nodes are already live in {self.ep.zk}: {', '.join(others)}")
            if self.pids_file.exists():
                say(f"demo: a kept demo cluster? stop it: kill -TERM $(cat {self.pids_file})")
            say("demo: the demo runs its own cluster and needs the ring to itself; stop those nodes first")
            return False
        return True

    # -- the run; returns the exit code

    def run(self) -> int:
        plan, note = plan_nodes(self.node_count)
        self.plan = plan
        mode = "one --single node" if self.single else f"a {len(plan)}-node cluster"
        say(f"demo: starting {mode}; route threshold {ROUTE_THRESHOLD_MS} ms (due later: MySQL path,"
            f" sooner: Kafka path)")
        say(f"demo: ZooKeeper {self.ep.zk}, Kafka {self.ep.kafka}, MariaDB 127.0.0.1:{self.ep.mysql_port}"
            f" database {self.ep.database}")
        if note:
            say(f"demo: {note}")
        t_start = time.monotonic()
        env = self.ep.node_env()
        for n in plan:
            start_node(n, env, self.single)
            say(f"demo:   {n.node_id}  pid {n.proc.pid:<7} grpc {n.grpc}  admin {n.admin}/  log {n.log_path}")
        self.pids_file.write_text(" ".join(str(n.proc.pid) for n in plan) + "\n")

        why = wait_ready(plan, self.token, timeout_s=60)
        if why:
            say(f"demo: FAILED: {why}")
            self._dump_logs(30)
            return 1
        say(f"demo: all nodes ready after {time.monotonic() - t_start:.1f}s; waiting for the ring to settle")

        t_settle = time.monotonic()
        settled, views = wait_settled(plan, self.token, self.settle_timeout)
        if not settled:
            from dispatcher.admin.ring_cli import format_ring
            say(f"demo: FAILED: the ring did not settle within {self.settle_timeout:g}s")
            for node_id, view in views.items():
                say(f"--- /ring of {node_id}")
                say(format_ring(view) if isinstance(view, dict) else str(view))
            self._dump_logs(40)
            if not self.single:
                say("demo: to run on one node instead: TASKRING_DEMO_SINGLE=1 .venv/bin/taskring demo")
            return 1
        owners = Counter(s["actual_owner"] for s in next(iter(views.values()))["slots"])
        say(f"demo: ring settled in {time.monotonic() - t_settle:.1f}s: "
            + ", ".join(f"{k} owns {v} slot{'s' if v != 1 else ''}" for k, v in sorted(owners.items())))

        from taskring import Client, Executor

        handlers = Handlers()
        self.executor = Executor(NAMESPACE, zk_hosts=self.ep.zk, host="127.0.0.1", port=0,
                                 instance_id=f"demo-executor-{os.getpid()}")
        handlers.register(self.executor)
        self.executor.start()
        say(f"demo: executor for namespace {NAMESPACE!r} ({', '.join(self.executor.task_types)}) at "
            f"{self.executor.address}, registered in ZooKeeper")
        time.sleep(0.5)  # let the nodes' watches see the executor before the first task is due

        self.clients = {n.index: Client(n.grpc) for n in plan}
        planned = plan_tasks(len(plan), self.run_tag)
        t_submit = time.monotonic()
        submit_all(planned, self.clients)
        via = Counter(p.via for p in planned)
        say(f"demo: submitted {len(planned)} tasks in {1000 * (time.monotonic() - t_submit):.0f} ms ("
            + ", ".join(f"{v} via {plan[k - 1].node_id}" for k, v in sorted(via.items()))
            + f"); cancelled {sum(p.cancel for p in planned)} of them before they were due")

        failures: list[str] = []
        finished = wait_terminal(planned, self.clients[1], plan, self.task_timeout)
        say()
        problems, notes = print_table(planned, handlers)
        failures += problems
        if not finished:
            failures.append("not every task reached a terminal state")

        say()
        from dispatcher.admin.ring_cli import fetch_ring, format_ring
        try:
            say(format_ring(fetch_ring(plan[0].admin, self.token)))
        except (OSError, ValueError) as exc:
            failures.append(f"/ring of {plan[0].node_id} failed: {exc}")
        dead = [n.node_id for n in plan if not n.alive()]
        if dead:
            failures.append(f"node process(es) exited during the run: {', '.join(dead)}")

        say()
        for n in notes:
            say(f"demo: note: {n}")
        for f in failures:
            say(f"demo: PROBLEM: {f}")
        counts = Counter(p.info.state.value for p in planned)
        parts = [f"{counts[s]} {s.replace('_', '-')}" for s in _TERMINAL if counts[s]]
        parts += [f"{v} still {k}" for k, v in counts.items() if k not in _TERMINAL]
        late = [started - due for p in planned for _a, due, started in attempt_starts(p)]
        late_text = f"; start lateness max {max(late)} ms" if late else ""
        say(f"demo: {len(planned)} tasks on {len(plan)} node{'s' if len(plan) > 1 else ''}: {', '.join(parts)}"
            f"{late_text}; {'all as expected' if not failures else 'NOT as expected'}")
        return 1 if failures else 0

    def _dump_logs(self, lines: int) -> None:
        for n in self.plan:
            if n.proc is not None:
                say(f"--- last lines of {n.log_path}")
                sys.stdout.write(tail(n.log_path, lines))

    # -- afterwards, whatever happened; returns an exit code for what went wrong here

    def cleanup(self, rc: int) -> int:
        for c in self.clients.values():
            c.close()
        if self.executor is not None:
            self.executor.stop(grace_s=5)
        if self.keep and rc == 0 and self.plan and all(n.alive() for n in self.plan):
            pids = " ".join(str(n.proc.pid) for n in self.plan)
            admin = self.plan[0].admin
            say("demo: TASKRING_DEMO_KEEP=1: the nodes keep running (the executor stopped with this process)")
            say(f"demo:   ring:  .venv/bin/taskring ring --admin {admin}"
                + ("" if self.token else f"   (or open {admin}/ in a browser)"))
            say(f"demo:   logs:  {self.plan[0].log_path.parent}/demo-node-*.log")
            say(f"demo:   stop:  kill -TERM {pids}   (the PIDs are also in {self.pids_file})")
            return 0
        problems = stop_nodes(self.plan)
        for p in problems:
            say(f"demo: PROBLEM: {p}")
        self.pids_file.unlink(missing_ok=True)
        return 1 if problems else 0


def run_demo(nodes: int = 3) -> int:
    single = _env_flag("TASKRING_DEMO_SINGLE")
    if single:
        nodes = 1
    if nodes < 1:
        say("demo: --nodes must be at least 1")
        return 2
    _quiet_libraries()
    if threading.current_thread() is threading.main_thread():
        # `kill`/`timeout` send SIGTERM: unwind through the cleanup below, which
        # stops the nodes (they run in sessions of their own and would outlive us).
        def on_sigterm(signum, frame):
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, on_sigterm)
    demo = Demo(nodes, single=single, keep=_env_flag("TASKRING_DEMO_KEEP"))
    if not demo.preflight():
        return 1
    rc = 1
    try:
        rc = demo.run()
    except KeyboardInterrupt:
        say("demo: interrupted")
        rc = 130
    except Exception as exc:
        say(f"demo: FAILED: {type(exc).__name__}: {exc}")
        demo._dump_logs(20)
        rc = 1
    finally:
        cleanup_rc = demo.cleanup(rc)
    if rc == 0 and cleanup_rc != 0:
        say("demo: the nodes did not all stop cleanly: NOT as expected")
    return rc or cleanup_rc
