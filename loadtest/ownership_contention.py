"""Slot ownership against a shared table: the design's central claim, side by side.

Three poller processes (each with its own MariaDB connection, configured like the
task store: READ COMMITTED, autocommit off) claim the same N pre-inserted due
rows of `tasks` (16 slots), in three modes, one after the other in one run:

  owned              each poller owns a disjoint set of slots (the ring's split for
                     node-a/b/c, cluster.ring.desired_owners) and polls each owned
                     slot by equality on idx_slot_lane_trigger, round-robin:
                     taskring's poller.
  shared-skip-locked every poller polls the whole table (status + trigger_at,
                     oldest first) with FOR UPDATE SKIP LOCKED: a naive
                     cron-and-table with the modern escape hatch.
  shared-for-update  the same without SKIP LOCKED: plain FOR UPDATE.
  owned-in-list      (only when asked for) ownership, but each poller asks for all
                     its slots at once with `slot IN (...)`: what DESIGN.md and
                     FIELD-NOTES.md warn against.

Each poll is one transaction: SELECT ... LIMIT 500 FOR [UPDATE|UPDATE SKIP LOCKED],
UPDATE those rows to 'claimed', COMMIT. Deadlocks (1213) and lock-wait timeouts
(1205) are caught, rolled back and polled again. An empty poll is followed by a
non-locking check for rows still pending in the poller's scope; the poller stops
only when there are none (an empty poll with rows left is a "false empty").
Every poller records the ids it committed; afterwards the union must be all N
rows and the pairwise intersections empty.

For each mode: claimed rows/s (N / wall time from the start barrier until the
last row was claimed), SHOW GLOBAL STATUS deltas around the run (row lock waits
and time, deadlocks, handler reads per claimed row), the same handler reads
summed over the pollers' own sessions (exact even when colleagues use the same
server, which the global figures are not), and the CPU seconds the pollers and
mariadbd spent (on 2 cores, wall x 2 is all there is).

By default the scratch table also gets a naive index `(status, trigger_at)`, in
every mode, so the shared pollers are not punished for a missing index and the
modes differ only in how they poll. `--no-naive-index` runs them on taskring's
schema alone (the shared query then scans and sorts the whole table per poll).

    .venv/bin/python -m loadtest.ownership_contention            # N=120,000, 3 pollers
    .venv/bin/python -m loadtest.ownership_contention --modes owned,shared-skip-locked --n 60000
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import multiprocessing as mp
import pathlib
import queue
import sys
import time
from typing import TYPE_CHECKING, Any

import pymysql

from cluster.ring import desired_owners

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier


from harness.stack import StackEndpoints
from loadtest.bench import report
from loadtest.bench.env import add_stack_options
from loadtest.raw_parts import (
    create_scratch_db,
    drop_db,
    due_rows,
    insert_rows,
    machine_facts,
    make_envelopes,
    mysql_connect,
    process_cpu_s,
    server_pid,
)

REPO = pathlib.Path(__file__).resolve().parents[1]

MODES = ("owned", "shared-skip-locked", "shared-for-update")
# Not run by default: ownership, but each poller asks for all its slots at once
# with an IN list, which DESIGN.md and FIELD-NOTES.md warn against.
EXTRA_MODES = ("owned-in-list",)
ALL_MODES = MODES + EXTRA_MODES
RETRYABLE = {1213: "deadlock", 1205: "lock_wait_timeout"}

_COLUMNS = """task_id, slot, namespace, task_type, priority, status, trigger_at, attempts, epoch,
           envelope, last_error, last_stack_trace, created_at, updated_at"""

# taskring: one owned slot at a time, by equality (dispatcher/store/mysql.py claim_due).
OWNED_SELECT_SQL = f"""
    SELECT {_COLUMNS}
      FROM tasks FORCE INDEX (idx_slot_lane_trigger)
     WHERE slot = %s AND lane = 1 AND trigger_at <= %s
     ORDER BY trigger_at, task_id
     LIMIT %s
       FOR UPDATE SKIP LOCKED
"""

# Ownership with an IN list over the owned slots (the optimizer picks the index).
OWNED_IN_LIST_SELECT_SQL = f"""
    SELECT {_COLUMNS}
      FROM tasks
     WHERE slot IN ({{marks}}) AND status = 'pending' AND trigger_at <= %s
     ORDER BY trigger_at, task_id
     LIMIT %s
       FOR UPDATE SKIP LOCKED
"""

# A naive cron-and-table: everyone polls everything, oldest first.
SHARED_SELECT_SQL = f"""
    SELECT {_COLUMNS}
      FROM tasks
     WHERE status = 'pending' AND trigger_at <= %s
     ORDER BY trigger_at, task_id
     LIMIT %s
       FOR UPDATE{{skip_locked}}
"""

ANY_PENDING_SQL = """
    SELECT 1 FROM tasks WHERE status = 'pending' AND trigger_at <= %s LIMIT 1
"""

ANY_PENDING_IN_SLOTS_SQL = """
    SELECT 1 FROM tasks WHERE slot IN ({marks}) AND status = 'pending' AND trigger_at <= %s LIMIT 1
"""

CLAIM_UPDATE_SQL = """
    UPDATE tasks SET status = 'claimed', epoch = %s, updated_at = %s
     WHERE task_id IN ({marks})
"""

NAIVE_INDEX_SQL = "ALTER TABLE tasks ADD KEY idx_status_trigger (status, trigger_at)"

GLOBAL_COUNTERS = ("Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_deadlocks",
                   "Handler_read_key", "Handler_read_next", "Handler_read_rnd_next",
                   "Handler_read_first", "Handler_update")
SESSION_COUNTERS = ("Handler_read_key", "Handler_read_next", "Handler_read_rnd_next",
                    "Handler_read_first", "Handler_update")


def _status(cur, scope: str, names: tuple[str, ...]) -> dict[str, int]:
    cur.execute(f"SHOW {scope} STATUS WHERE Variable_name IN ({','.join(['%s'] * len(names))})", names)
    return {name: int(value) for name, value in cur.fetchall()}


# ---------------------------------------------------------------- one poller process

def poller(name: str, mode: str, slots: list[int], db: dict[str, Any], until: dt.datetime, limit: int,
           lock_wait_timeout: int, deadline_s: float, start: Barrier, results: mp.Queue) -> None:
    conn = mysql_connect(db["host"], db["port"], db["user"], db["database"])
    cur = conn.cursor()
    cur.execute("SET SESSION innodb_lock_wait_timeout = %s", (lock_wait_timeout,))
    conn.commit()
    before = _status(cur, "SESSION", SESSION_COUNTERS)
    claimed: list[str] = []
    errors = {"deadlock": 0, "lock_wait_timeout": 0}
    polls = empty_polls = false_empty_polls = 0
    epoch = 1
    t_last_claim = None

    def claim(select_sql: str, params: tuple) -> int:
        """One poll in one transaction; the number of rows claimed (committed)."""
        nonlocal polls, t_last_claim
        polls += 1
        try:
            cur.execute(select_sql, params)
            ids = [row[0] for row in cur.fetchall()]
            if ids:
                cur.execute(CLAIM_UPDATE_SQL.format(marks=",".join(["%s"] * len(ids))), [epoch, until, *ids])
            conn.commit()
        except pymysql.err.OperationalError as exc:
            code = exc.args[0] if exc.args else None
            if code not in RETRYABLE:
                raise
            conn.rollback()
            errors[RETRYABLE[code]] += 1
            return -1
        if ids:
            claimed.extend(ids)
            t_last_claim = time.monotonic()
        return len(ids)

    def nothing_left(scope: list[int] | None) -> bool:
        """After an empty poll: is no committed row of `scope` (slots; None = all) still
        pending? A non-locking read. An empty poll with rows left is a false empty:
        what was left was locked by someone else at that moment."""
        nonlocal empty_polls, false_empty_polls
        empty_polls += 1
        if scope is None:
            cur.execute(ANY_PENDING_SQL, (until,))
        else:
            cur.execute(ANY_PENDING_IN_SLOTS_SQL.format(marks=",".join(["%s"] * len(scope))), (*scope, until))
        left = cur.fetchone() is not None
        conn.commit()
        false_empty_polls += left
        return not left

    # key (a slot, or "all") -> (SELECT, its parameters, the slots it covers; None = all)
    polls_of: dict[int | str, tuple[str, tuple[Any, ...], list[int] | None]]
    if mode == "owned":
        polls_of = {slot: (OWNED_SELECT_SQL, (slot, until, limit), [slot]) for slot in slots}
    elif mode == "owned-in-list":
        polls_of = {"all": (OWNED_IN_LIST_SELECT_SQL.format(marks=",".join(["%s"] * len(slots))),
                            (*slots, until, limit), slots)}
    else:
        skip = " SKIP LOCKED" if mode == "shared-skip-locked" else ""
        polls_of = {"all": (SHARED_SELECT_SQL.format(skip_locked=skip), (until, limit), None)}

    start.wait()
    t_start = time.monotonic()
    cpu_start = time.process_time()
    deadline = t_start + deadline_s
    finished = True
    live = list(polls_of)           # owned: one poll per owned slot, round-robin
    while live:
        if time.monotonic() > deadline:
            finished = False
            break
        for key in list(live):
            sql, params, scope = polls_of[key]
            if claim(sql, params) == 0 and nothing_left(scope):
                live.remove(key)
    t_end = time.monotonic()
    cpu_s = time.process_time() - cpu_start
    after = _status(cur, "SESSION", SESSION_COUNTERS)
    conn.close()
    results.put({
        "name": name, "slots": slots, "claimed_ids": claimed, "claimed": len(claimed),
        "polls": polls, "empty_polls": empty_polls, "false_empty_polls": false_empty_polls,
        "errors": errors, "finished": finished,
        "t_start": t_start, "t_end": t_end, "t_last_claim": t_last_claim, "cpu_s": cpu_s,
        # SHOW SESSION STATUS itself reads a few rows; negligible next to thousands of claims.
        "session": {k: after[k] - before[k] for k in SESSION_COUNTERS},
    })


# ---------------------------------------------------------------- one mode

def run_mode(mode: str, *, db: dict[str, Any], split: dict[str, list[int]], limit: int,
             lock_wait_timeout: int, deadline_s: float, all_ids: set[str]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    names = sorted(split)
    start = ctx.Barrier(len(names) + 1)
    results = ctx.Queue()
    until = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    procs = [ctx.Process(target=poller, name=f"poller-{n}",
                         args=(n, mode, split[n] if mode.startswith("owned") else [], db, until, limit,
                               lock_wait_timeout, deadline_s, start, results))
             for n in names]
    monitor = pymysql.connect(host=db["host"], port=db["port"], user=db["user"], autocommit=True)
    try:
        for p in procs:
            p.start()
        with monitor.cursor() as mcur:
            g_before = _status(mcur, "GLOBAL", GLOBAL_COUNTERS)
            mysqld_pid = server_pid(mcur)
            server_cpu_before = process_cpu_s(mysqld_pid)
            start.wait(timeout=60)       # every poller connected and ready
            t0 = time.monotonic()
            outs = []
            for _ in procs:
                try:
                    outs.append(results.get(timeout=deadline_s + 60))
                except queue.Empty:
                    raise RuntimeError(f"{mode}: a poller did not report (exit codes "
                                       f"{[p.exitcode for p in procs]})") from None
            server_cpu_after = process_cpu_s(mysqld_pid)
            g_after = _status(mcur, "GLOBAL", GLOBAL_COUNTERS)
        for p in procs:
            p.join(30)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        monitor.close()

    outs.sort(key=lambda o: o["name"])
    # Until the last row was claimed (committed); the pollers stop a little later,
    # once a poll comes back empty.
    last = [o["t_last_claim"] for o in outs if o["t_last_claim"] is not None]
    wall = (max(last) - t0) if last else float("nan")
    sets = {o["name"]: set(o["claimed_ids"]) for o in outs}
    within_dupes = sum(o["claimed"] - len(sets[o["name"]]) for o in outs)
    overlaps = {f"{a}&{b}": len(sets[a] & sets[b]) for a, b in itertools.combinations(sorted(sets), 2)}
    union = set().union(*sets.values())
    claimed = sum(o["claimed"] for o in outs)
    g = {k: g_after[k] - g_before[k] for k in GLOBAL_COUNTERS}
    s = {k: sum(o["session"][k] for o in outs) for k in SESSION_COUNTERS}
    per_row = lambda v: v / claimed if claimed else float("nan")  # noqa: E731
    return {
        "mode": mode, "claimed": claimed, "expected": len(all_ids),
        "wall_s": wall, "claimed_per_s": claimed / wall if wall > 0 else float("inf"),
        "stopped_s": max(o["t_end"] for o in outs) - t0,
        "complete": claimed >= len(all_ids),
        "pollers_cpu_s": sum(o["cpu_s"] for o in outs),
        "server_cpu_s": (server_cpu_after - server_cpu_before) if server_cpu_before is not None
        and server_cpu_after is not None else None,
        "global": g, "session": s,
        "global_reads_per_row": per_row(g["Handler_read_key"] + g["Handler_read_next"]),
        "session_reads_per_row": per_row(s["Handler_read_key"] + s["Handler_read_next"]),
        "session_rnd_next_per_row": per_row(s["Handler_read_rnd_next"]),
        "deadlocks_caught": sum(o["errors"]["deadlock"] for o in outs),
        "lock_wait_timeouts_caught": sum(o["errors"]["lock_wait_timeout"] for o in outs),
        "polls": sum(o["polls"] for o in outs), "empty_polls": sum(o["empty_polls"] for o in outs),
        "false_empty_polls": sum(o["false_empty_polls"] for o in outs),
        "pollers": [{k: o[k] for k in ("name", "slots", "claimed", "polls", "empty_polls", "false_empty_polls",
                                       "errors", "finished", "cpu_s")}
                    | {"busy_s": o["t_end"] - o["t_start"]} for o in outs],
        "check": {
            "duplicates_within_a_poller": within_dupes,
            "overlaps": overlaps,
            "union_equals_all": union == all_ids,
            "missing": len(all_ids - union),
            "foreign": len(union - all_ids),
        },
    }


def explain(cur, mode: str, slots: list[int], until: dt.datetime, limit: int) -> list[dict[str, Any]]:
    """The plan MariaDB picks for one poll of `mode` (slots: the first poller's)."""
    params: tuple[Any, ...]
    if mode == "owned":
        sql, params = OWNED_SELECT_SQL, (slots[0], until, limit)
    elif mode == "owned-in-list":
        sql, params = OWNED_IN_LIST_SELECT_SQL.format(marks=",".join(["%s"] * len(slots))), (*slots, until, limit)
    else:
        skip = " SKIP LOCKED" if mode == "shared-skip-locked" else ""
        sql, params = SHARED_SELECT_SQL.format(skip_locked=skip), (until, limit)
    cur.execute("EXPLAIN " + sql, params)
    names = [d[0] for d in cur.description]
    return [{k: v for k, v in zip(names, row) if k in ("table", "type", "key", "rows", "Extra")}
            for row in cur.fetchall()]


def reset_rows(conn: pymysql.connections.Connection, rows: list[tuple]) -> None:
    """A fresh table with every row pending again (TRUNCATE: no purge backlog left behind)."""
    with conn.cursor() as cur:
        cur.execute("TRUNCATE TABLE tasks")
    conn.commit()
    insert_rows(conn, rows)


def measure_ownership_contention(n: int = 120_000, *, pollers: int = 3, slots: int = 16, limit: int = 500,
                                 modes: tuple[str, ...] = MODES, naive_index: bool = True,
                                 payload_bytes: int = 300, lock_wait_timeout: int = 5,
                                 deadline_s: float = 25.0, host: str = StackEndpoints().host,
                                 port: int = StackEndpoints().mysql_port,
                                 user: str = StackEndpoints().mysql_user) -> dict[str, Any]:
    members = [f"node-{chr(ord('a') + i)}" for i in range(pollers)]
    owners = desired_owners(members, slots)
    split = {m: sorted(s for s, o in owners.items() if o == m) for m in members}
    rows = due_rows(make_envelopes(n, payload_bytes), slots)
    all_ids = {row[0] for row in rows}
    database = create_scratch_db(host, port, user, "taskring_bench_own")
    db = {"host": host, "port": port, "user": user, "database": database}
    result: dict[str, Any] = {
        "n": n, "pollers": pollers, "slots": slots, "limit": limit, "payload_bytes": payload_bytes,
        "naive_index": naive_index, "lock_wait_timeout_s": lock_wait_timeout, "deadline_s": deadline_s,
        "isolation": "READ-COMMITTED", "split": split,
        "machine": machine_facts(host, port, user),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "modes": [],
    }
    try:
        conn = mysql_connect(host, port, user, database)
        try:
            if naive_index:
                with conn.cursor() as cur:
                    cur.execute(NAIVE_INDEX_SQL)
            for mode in modes:
                reset_rows(conn, rows)
                with conn.cursor() as cur:
                    cur.execute("ANALYZE TABLE tasks")
                    cur.fetchall()
                    plan = explain(cur, mode, split[members[0]], dt.datetime.now(dt.UTC)
                                   .replace(tzinfo=None), limit)
                conn.commit()
                m = run_mode(mode, db=db, split=split, limit=limit, lock_wait_timeout=lock_wait_timeout,
                             deadline_s=deadline_s, all_ids=all_ids)
                with conn.cursor() as cur:
                    cur.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status")
                    m["check"]["rows_by_status"] = dict(cur.fetchall())
                conn.commit()
                m["plan"] = plan
                result["modes"].append(m)
                print(f"  {mode}: {m['claimed']:,} rows in {m['wall_s']:.2f} s", file=sys.stderr, flush=True)
        finally:
            conn.close()
    finally:
        drop_db(host, port, user, database)
    return result


# ---------------------------------------------------------------- output

def check_ok(m: dict[str, Any]) -> bool:
    c = m["check"]
    return (c["union_equals_all"] and c["duplicates_within_a_poller"] == 0
            and not any(c["overlaps"].values()) and m["complete"])


def check_text(m: dict[str, Any]) -> str:
    c = m["check"]
    ok = check_ok(m)
    overlaps = ", ".join(f"{k} {v}" for k, v in c["overlaps"].items())
    return (f"{'OK' if ok else 'FAILED'}: union == all {c['union_equals_all']} (missing {c['missing']},"
            f" foreign {c['foreign']}), overlaps {overlaps}, duplicates {c['duplicates_within_a_poller']},"
            f" rows by status {c.get('rows_by_status')}")


def format_table(result: dict[str, Any]) -> str:
    head = ("| mode | claimed | wall s (all claimed) | claimed rows/s | CPU s pollers / server |"
            " server CPU µs / row | row lock waits | row lock time ms | Innodb_deadlocks |"
            " 1213 caught | 1205 caught | read_key+read_next / row (global) | same (pollers' sessions) |"
            " read_rnd_next / row (sessions) | polls (empty / false empty) |")
    lines = [head, "| --- |" + " ---: |" * (head.count("|") - 2)]
    for m in result["modes"]:
        g = m["global"]
        name = m["mode"] if m["complete"] else f"{m['mode']} (INCOMPLETE: gave up after {result['deadline_s']:.0f} s)"
        server = "?" if m["server_cpu_s"] is None else f"{m['server_cpu_s']:.1f}"
        server_row = ("?" if m["server_cpu_s"] is None or not m["claimed"]
                      else f"{m['server_cpu_s'] / m['claimed'] * 1e6:.0f}")
        lines.append(
            f"| {name} | {m['claimed']:,} | {m['wall_s']:.2f} | {m['claimed_per_s']:,.0f} |"
            f" {m['pollers_cpu_s']:.1f} / {server} | {server_row} |"
            f" {g['Innodb_row_lock_waits']:,} | {g['Innodb_row_lock_time']:,} | {g['Innodb_deadlocks']:,} |"
            f" {m['deadlocks_caught']:,} | {m['lock_wait_timeouts_caught']:,} |"
            f" {m['global_reads_per_row']:.2f} | {m['session_reads_per_row']:.2f} |"
            f" {m['session_rnd_next_per_row']:.2f} |"
            f" {m['polls']:,} ({m['empty_polls']:,} / {m['false_empty_polls']:,}) |")
    return "\n".join(lines)


def format_details(result: dict[str, Any]) -> str:
    lines = []
    for m in result["modes"]:
        lines.append(f"- **{m['mode']}**: {check_text(m)}")
        plan = "; ".join(f"type {r.get('type')}, key {r.get('key')}, rows {r.get('rows')}, {r.get('Extra')}"
                         for r in m.get("plan", []))
        lines.append(f"  - plan (EXPLAIN of one poll): {plan}")
        for p in m["pollers"]:
            slots = f" slots {p['slots']}" if p["slots"] else ""
            lines.append(f"  - {p['name']}{slots}: {p['claimed']:,} rows, {p['polls']:,} polls"
                         f" ({p['empty_polls']:,} empty, {p['false_empty_polls']:,} of them false),"
                         f" busy {p['busy_s']:.2f} s, CPU {p['cpu_s']:.2f} s,"
                         f" deadlocks {p['errors']['deadlock']}, lock wait timeouts {p['errors']['lock_wait_timeout']}")
    return "\n".join(lines)


def default_report_name(result: dict[str, Any]) -> str:
    """ownership_contention, with a suffix when the naive index was left out (so that the
    two variants do not overwrite each other)."""
    return "ownership_contention" if result["naive_index"] else "ownership_contention_no_naive_index"


def render_report(result: dict[str, Any], command: str) -> str:
    f = result["machine"]
    split = ", ".join(f"{k} {len(v)} slots {v}" for k, v in result["split"].items())
    return "\n".join([
        "# Ownership vs. a shared table: claiming due rows with three pollers",
        "",
        f"Run {result['started_at']} with `{command}`.",
        "",
        f"{result['n']:,} due rows over {result['slots']} slots, {result['payload_bytes']}-byte envelopes,"
        f" {result['pollers']} poller processes (one connection each, {result['isolation']},"
        f" innodb_lock_wait_timeout {result['lock_wait_timeout_s']} s), LIMIT {result['limit']} per poll,"
        f" one transaction per poll. Rows re-inserted (TRUNCATE + insert) before each mode."
        f" Naive index `(status, trigger_at)` present in every mode: {'yes' if result['naive_index'] else 'no'}.",
        f"Ownership split (cluster.ring.desired_owners): {split}.",
        "",
        format_table(result),
        "",
        "Checks and per-poller figures:",
        "",
        format_details(result),
        "",
        f"Machine: nproc {f['nproc']}, MariaDB {f.get('mariadb')}, buffer pool"
        f" {f.get('innodb_buffer_pool_size', 0) // 2**20} MiB, innodb_flush_log_at_trx_commit"
        f" {f.get('innodb_flush_log_at_trx_commit')}, binlog {'on' if f.get('log_bin') else 'off'},"
        f" Python {f['python']}, load average (1 min) at start {f['loadavg_1m']:.2f}.",
        "",
        "Global counters (SHOW GLOBAL STATUS deltas) include anything else the server did during the run"
        " (colleagues share it); the session columns count only the pollers' own connections."
        " Innodb_row_lock_time is in milliseconds. How to read this: loadtest/README.md.",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=120_000, help="due rows; default 120,000")
    p.add_argument("--pollers", type=int, default=3)
    p.add_argument("--slots", type=int, default=16)
    p.add_argument("--limit", type=int, default=500, help="rows per poll")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"comma-separated, from {','.join(ALL_MODES)} (default {','.join(MODES)})")
    p.add_argument("--no-naive-index", action="store_true",
                   help="do not add (status, trigger_at): the shared pollers scan and sort the table")
    p.add_argument("--payload-bytes", type=int, default=300)
    p.add_argument("--lock-wait-timeout", type=int, default=5, help="pollers' innodb_lock_wait_timeout, s")
    p.add_argument("--deadline-s", type=float, default=25.0, help="give up a mode after this long")
    add_stack_options(p)
    report.add_report_options(p, None)
    args = p.parse_args(argv)
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = set(modes) - set(ALL_MODES)
    if unknown:
        p.error(f"unknown modes {sorted(unknown)}")
    result = measure_ownership_contention(
        args.n, pollers=args.pollers, slots=args.slots, limit=args.limit, modes=modes,
        naive_index=not args.no_naive_index, payload_bytes=args.payload_bytes,
        lock_wait_timeout=args.lock_wait_timeout, deadline_s=args.deadline_s,
        host=args.mysql_host, port=args.mysql_port, user=args.mysql_user)
    print(format_table(result))
    print()
    print(format_details(result))
    report.publish(args, result, report.command_line("loadtest.ownership_contention", argv), render_report,
                   name=args.report_name or default_report_name(result))


if __name__ == "__main__":
    main()
