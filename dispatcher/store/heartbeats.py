"""The statements of running attempts' heartbeats on MariaDB (store/mysql.py runs them in
its transactions): record a batch of heartbeats under their slots' epochs, and read the
last details of tasks about to run again. Also the wait notes of due tasks held at a limit:
the other informational columns of a live attempt.

A heartbeat locks its row and reads it before it writes, rather than a conditional UPDATE
alone: its answer depends on why a row did not match (cancelled: the handler should stop;
anything else: the attempt is lost), and the rows are few (long tasks, one beat every few
seconds each).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dispatcher.store import fenced
from dispatcher.store import records as r
from dispatcher.store.sql_literals import names


def record(cur, beats: Sequence[r.HeartbeatWrite], now: dt.datetime) -> list[r.HeartbeatResult]:
    if not beats:
        return []
    stale = fenced.stale_slots(cur, {b.slot: b.epoch for b in beats})
    cur.execute("SELECT task_id, status, attempts, epoch FROM tasks"
                f" WHERE task_id IN ({names(sorted({b.task_id for b in beats}))}) FOR UPDATE")
    rows = {task_id: (status, attempts, epoch) for task_id, status, attempts, epoch in cur.fetchall()}
    results = []
    for b in beats:
        row = rows.get(b.task_id)
        if row is not None and row[0] == r.CANCELLED:
            results.append(r.HeartbeatResult.CANCELLED)
        elif row is not None and b.slot not in stale and row == (r.DISPATCHED, b.attempt, b.epoch):
            results.append(r.HeartbeatResult.RECORDED)
        else:
            results.append(r.HeartbeatResult.LOST)
    recorded = [b for b, result in zip(beats, results, strict=True) if result is r.HeartbeatResult.RECORDED]
    if recorded:
        cur.executemany("UPDATE tasks SET heartbeat_at = %s, heartbeat_details = COALESCE(%s, heartbeat_details)"
                        " WHERE task_id = %s", [(now, b.details, b.task_id) for b in recorded])
    return results


def details(cur, task_ids: Sequence[str]) -> dict[str, str]:
    if not task_ids:
        return {}
    cur.execute(f"SELECT task_id, heartbeat_details FROM tasks WHERE task_id IN ({names(task_ids)})"
                " AND heartbeat_details IS NOT NULL")
    return dict(cur.fetchall())


def note_waiting(cur, notes: Sequence[r.WaitNote]) -> None:
    if not notes:
        return
    waiting = sorted(str(s) for s in r.NOT_HANDED_OUT)
    cur.executemany("UPDATE tasks SET wait_attempt = %s, wait_reason = %s"
                    f" WHERE task_id = %s AND status IN ({', '.join(['%s'] * len(waiting))})",
                    [(n.attempt, n.reason[:200], n.task_id, *waiting) for n in notes])


def wait_note(cur, task_id: str) -> tuple[int, str] | None:
    cur.execute("SELECT wait_attempt, wait_reason FROM tasks WHERE task_id = %s AND wait_reason IS NOT NULL",
                (task_id,))
    row = cur.fetchone()
    return None if row is None else (int(row[0]), row[1])
