"""What the hot path's three writes cost the MySQL task store, without a node around them.

A benchmark, not a test. In a private database on the stack's MariaDB, N tasks go
through the store calls a node makes for an immediate no-op task that succeeds:
`insert_tasks` (the API's accept), `begin_dispatch` (first attempts, Kafka path) and
`record_outcomes` (successes), in batches of B, from one thread. For each call it
reports per task: wall µs, this process's CPU µs (PyMySQL and the statement building),
the MariaDB server's CPU µs (/proc of its process), and the statements and commits the
server counted (`Questions`, `Com_commit`). With --batch 1 the wall figure is what one
Submit, one dispatch and one outcome wait on the store; with a large batch it is what
a task costs at throughput.

    .venv/bin/python -m loadtest.store_cost                      # N 20,000, batches of 1,000 and of 1
    .venv/bin/python -m loadtest.store_cost --batch 100 --n 10000

Server-wide counters: run on a quiet stack. The box's other load moves CPU figures;
compare versions back to back, alternately (`git stash`), and read the statements.
"""
from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import statistics
import sys
import time
from collections.abc import Callable

from dispatcher.base.config import MySQLConfig
from dispatcher.base.ids import new_task_id
from dispatcher.store import records as r
from dispatcher.store.mysql import TaskStore
from harness.stack import StackEndpoints
from harness.world import create_database, drop_database, new_run_id
from loadtest.bench.observe import process_cpu, stack_pids
from taskring.task import TaskState

REPO = pathlib.Path(__file__).resolve().parents[1]

SLOTS = 16
NODE = "bench-store-node"
STEPS = ("insert_tasks", "begin_dispatch", "record_outcomes")


def server_counters(store: TaskStore) -> dict[str, int]:
    def body(cur):
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_commit')")
        return {name: int(value) for name, value in cur.fetchall()}
    return store.run(body)


def measure(store: TaskStore, mariadb_pid: int | None, call: Callable[[], object], tasks: int) -> dict[str, float]:
    before_server = process_cpu(mariadb_pid)
    before = server_counters(store)
    cpu0, t0 = time.process_time(), time.perf_counter()
    call()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = server_counters(store)
    after_server = process_cpu(mariadb_pid)
    server_s = (sum(after_server) - sum(before_server)) if before_server and after_server else float("nan")
    # The two counter reads are themselves one statement each (the second one counted).
    return {"wall_us": wall / tasks * 1e6, "client_cpu_us": cpu / tasks * 1e6,
            "server_cpu_us": server_s / tasks * 1e6,
            "statements": (after["Questions"] - before["Questions"] - 1) / tasks,
            "commits": (after["Com_commit"] - before["Com_commit"]) / tasks}


def one_round(store: TaskStore, mariadb_pid: int | None, n: int, batch: int,
              epochs: dict[int, int]) -> dict[str, dict[str, float]]:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    tasks = [r.NewTask(task_id=new_task_id(), slot=i % SLOTS, namespace="bench", task_type=f"noop-{i % SLOTS}",
                       priority=1, status=r.ENQUEUED, trigger_at=now, envelope=b"\x0a" * 140, created_at=now)
             for i in range(n)]
    batches = [tasks[i:i + batch] for i in range(0, n, batch)]
    claims = [[r.DispatchClaim(t.task_id, t.slot, 1, "kafka", now) for t in b] for b in batches]
    writes = [[r.OutcomeWrite(task_id=t.task_id, slot=t.slot, attempt=1, result=r.SUCCEEDED,
                              events=(r.Event(t.task_id, TaskState.RUNNING, now, NODE, 1),
                                      r.Event(t.task_id, TaskState.SUCCEEDED, now, NODE, 1)))
               for t in b] for b in batches]
    figures = {}
    figures["insert_tasks"] = measure(store, mariadb_pid, lambda: [store.insert_tasks(b, NODE) for b in batches], n)

    def dispatch() -> None:
        for c in claims:
            dispatched, stale = store.begin_dispatch(c, epochs, NODE, now)
            if len(dispatched) != len(c) or stale:
                raise SystemExit(f"begin_dispatch dispatched {len(dispatched)} of {len(c)}, stale {stale}")
    figures["begin_dispatch"] = measure(store, mariadb_pid, dispatch, n)

    def record() -> None:
        for w in writes:
            if store.record_outcomes(w, epochs, now):
                raise SystemExit("record_outcomes found a stale slot")
    figures["record_outcomes"] = measure(store, mariadb_pid, record, n)
    return figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20_000, help="tasks per round at the large batch (20,000)")
    p.add_argument("--batch", type=int, default=1_000, help="tasks per store call (1,000)")
    p.add_argument("--single-n", type=int, default=1_000,
                   help="tasks per round at a batch of 1, one call per task (1,000; 0: skip)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of each; the median is reported (3)")
    args = p.parse_args()
    stack = StackEndpoints.from_env()
    database = f"taskring_store_cost_{new_run_id(8)}"
    create_database(stack, database)
    store = TaskStore(MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                                  password=stack.mysql_password, database=database, pool_size=2))
    mariadb_pid = stack_pids().get("mariadb")
    try:
        store.start()
        store.ensure_slots(SLOTS)
        epochs = {s: store.claim_slot(s, NODE, dt.datetime.now(dt.UTC).replace(tzinfo=None))
                  for s in range(SLOTS)}
        one_round(store, mariadb_pid, min(args.n, 2_000), args.batch, epochs)   # warm-up: connections, caches
        print(f"store_cost: database {database}, {SLOTS} slots, median of {args.rounds} rounds per row")
        print(f"{'batch':>6} {'call':<16} {'wall µs':>9} {'client CPU µs':>14} {'MariaDB CPU µs':>15}"
              f" {'statements':>11} {'commits':>8}   (per task)")
        for batch, n in ((args.batch, args.n), (1, args.single_n)):
            if n <= 0:
                continue
            rounds = [one_round(store, mariadb_pid, n, batch, epochs) for _ in range(args.rounds)]
            for step in STEPS:
                med = {k: statistics.median(rd[step][k] for rd in rounds) for k in rounds[0][step]}
                print(f"{batch:>6} {step:<16} {med['wall_us']:>9.1f} {med['client_cpu_us']:>14.1f}"
                      f" {med['server_cpu_us']:>15.1f} {med['statements']:>11.3f} {med['commits']:>8.3f}")
    finally:
        store.stop()
        drop_database(stack, database)
    return 0


if __name__ == "__main__":
    sys.exit(main())
