"""Task search and the dead-letter views on a big task table: every statement the search and
the console run, timed on N rows (default 10,000,000), with its EXPLAIN.

A benchmark, not a test. It fills a private database with synthetic rows (MariaDB's SEQUENCE
engine, in chunks), then runs each query shape 20 times at the first page and at a deep
cursor, and reports p50/max and the rows EXPLAIN expects to read. The database is dropped at
the end.

    .venv/bin/python -m loadtest.search_at_scale                 # 10M tasks, 200k dead letters
    .venv/bin/python -m loadtest.search_at_scale --rows 1000000 --report-name search_at_scale_1m
"""
from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import statistics
import sys
import time
import uuid

from dispatcher.base.config import MySQLConfig
from dispatcher.store.dead_letters import DeadLetterFilter, DeadLetterStore
from dispatcher.store.mysql import TaskStore
from dispatcher.store.search import Query, SearchStore, statements
from dispatcher.store.shards import shards_of
from harness.stack import StackEndpoints
from harness.world import create_database, drop_database
from loadtest.bench import report

REPO = pathlib.Path(__file__).resolve().parents[1]
STATUSES = ("succeeded", "succeeded", "succeeded", "succeeded", "pending", "dead_lettered", "cancelled")
BASE = dt.datetime(2026, 11, 1)


def fill(store: TaskStore, rows: int, dead: int, chunk: int = 500_000) -> dict:
    """`rows` tasks over 10 namespaces x 50 types, one a millisecond from BASE; every 50th has a
    trace id shared by 5 tasks; `dead` of them dead letters over 20 failure groups."""
    t0 = time.perf_counter()
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)

        def body(cur, start=start, n=n):
            cur.execute(
                "INSERT INTO tasks (task_id, slot, namespace, task_type, priority, status, trigger_at, attempts,"
                " epoch, envelope, created_at, updated_at, trace_id)"
                " SELECT CONCAT('t-', LPAD(seq, 9, '0')), seq %% 16, CONCAT('ns', seq %% 10),"
                " CONCAT('type', seq %% 50), 2, ELT(1 + seq %% 7, %s, %s, %s, %s, %s, %s, %s),"
                " %s + INTERVAL seq * 1000 MICROSECOND, 1, 1, x'0a0474657374',"
                " %s + INTERVAL seq * 1000 MICROSECOND, %s + INTERVAL seq * 1000 MICROSECOND,"
                " IF(seq %% 50 = 0, CONCAT('trace-', seq DIV 250), NULL)"
                f" FROM seq_{start}_to_{start + n - 1}",
                (*STATUSES, BASE, BASE, BASE))
        store.run(body)
        print(f"  {start + n:,} rows ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    filled_s = time.perf_counter() - t0

    step = max(1, rows // dead)

    def dead_letters(cur):
        cur.execute(
            "INSERT INTO dead_letters (task_id, slot, namespace, task_type, envelope, attempts, last_error,"
            " error_class, error_shape, error_group, dead_lettered_at)"
            f" SELECT CONCAT('t-', LPAD(seq, 9, '0')), seq %% 16, CONCAT('ns', (seq DIV {step}) %% 10),"
            f" CONCAT('type', (seq DIV {step}) %% 50), x'0a0474657374', 3,"
            f" CONCAT('ValueError: failure ', (seq DIV {step}) %% 23, ' of order ', seq), 'ValueError',"
            f" CONCAT('failure ', (seq DIV {step}) %% 23, ' of order <n>'),"
            f" LPAD(HEX((seq DIV {step}) %% 23), 16, '0'), %s + INTERVAL seq * 1000 MICROSECOND"
            f" FROM seq_0_to_{rows - 1}_step_{step}", (BASE,))
    store.run(dead_letters)
    # Their groups' counts, as dead-lettering keeps them (migrations/010 backfills the same way).
    store.run(lambda cur: cur.execute(
        "INSERT INTO dead_letter_groups (namespace, task_type, error_group, error_class, error_shape, dead,"
        " first_at, last_at, sample_task_id, sample_error) SELECT namespace, task_type, error_group,"
        " MIN(error_class), MIN(error_shape), COUNT(*), MIN(dead_lettered_at), MAX(dead_lettered_at),"
        " MAX(task_id), MAX(last_error) FROM dead_letters GROUP BY namespace, task_type, error_group"))
    store.run(lambda cur: cur.execute("ANALYZE TABLE tasks, dead_letters"))
    return {"fill_s": round(filled_s, 1), "total_s": round(time.perf_counter() - t0, 1)}


def timed(run, times: int = 20) -> dict:
    samples = []
    for _ in range(times):
        t0 = time.perf_counter()
        found = run()
        samples.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2), "max_ms": round(max(samples), 2), "rows": len(found)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--dead", type=int, default=200_000)
    report.add_report_options(p, "search_at_scale")
    args = p.parse_args(argv)
    command = report.command_line("loadtest.search_at_scale", argv)
    stack = StackEndpoints.from_env()
    database = f"taskring_scale_{uuid.uuid4().hex[:8]}"
    create_database(stack, database)
    store = TaskStore(MySQLConfig(host=stack.host, port=stack.mysql_port, user=stack.mysql_user,
                                  password=stack.mysql_password, database=database, io_timeout_s=3600))
    store.start()
    result: dict = {"rows": args.rows, "dead_letters": args.dead, "queries": {}}
    try:
        print(f"filling {database} with {args.rows:,} tasks ...", file=sys.stderr)
        result["fill"] = fill(store, args.rows, args.dead)
        search, dl = SearchStore(shards_of(store)), DeadLetterStore(shards_of(store))
        middle = (BASE + dt.timedelta(milliseconds=args.rows // 2), "t-999999999")
        queries = {
            "trace id": Query(trace_id=f"trace-{args.rows // 500}"),
            "unique key (none held)": Query(namespace="ns1", unique_key="order:1"),
            "type + status": Query(namespace="ns3", task_type="type13", status="dead_lettered"),
            "type + status + day": Query(namespace="ns3", task_type="type13", status="succeeded",
                                         since=BASE, until=BASE + dt.timedelta(days=1)),
            "type, every status": Query(namespace="ns3", task_type="type13"),
        }
        for name, q in queries.items():
            for page, cursor in (("first page", None), ("deep cursor", middle)):
                figures = timed(lambda q=q, cursor=cursor: search.search(q, before=cursor, limit=50))
                plans = [[(s["table"], s["type"], s["key"], s["rows"]) for s in st["plan"]]
                         for st in search.plans(q, before=cursor, limit=50)]
                result["queries"][f"search: {name}, {page}"] = {**figures, "explain": plans[:2],
                                                                "statements": len(statements(q, cursor, 50))}
        dl_cases = {"dead letters, newest page": lambda: dl.page(DeadLetterFilter(), limit=50),
                    "dead letters of a group, page": lambda: dl.page(DeadLetterFilter(error_group="0" * 15 + "7"),
                                                                     limit=50),
                    "dead letters of a type, page": lambda: dl.page(DeadLetterFilter(namespace="ns3",
                                                                                     task_type="type13"), limit=50),
                    "failure groups (the counts)": lambda: dl.groups(DeadLetterFilter()),
                    "failure groups of one type (the counts)": lambda: dl.groups(DeadLetterFilter(
                        namespace="ns3", task_type="type13")),
                    "failure groups, one hour (reads that hour's dead letters)": lambda: dl.groups(DeadLetterFilter(
                        since=BASE, until=BASE + dt.timedelta(hours=1)))}
        for name, run in dl_cases.items():
            result["queries"][name] = timed(run, times=5)
    finally:
        store.stop()
        drop_database(stack, database)
    lines = [f"# Search at scale: {args.rows:,} tasks, {args.dead:,} dead letters", "",
             f"Command: `{command}`"
             f" (fill {result['fill']['total_s']} s). Times are the store call from Python (PyMySQL) to"
             " the rows decoded, 50 rows a page.", "",
             "| query | p50 ms | max ms | rows | EXPLAIN (table, type, key, rows) |",
             "| --- | ---: | ---: | ---: | --- |"]
    for name, q in result["queries"].items():
        lines.append(f"| {name} | {q['p50_ms']} | {q['max_ms']} | {q['rows']} | {q.get('explain', '')} |")
    report.print_and_publish(args, result, command, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
