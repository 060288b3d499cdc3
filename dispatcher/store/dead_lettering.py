"""What dead-lettering writes besides the task row, and what undoes it: the entry in
`dead_letters`, grouped by failure (dispatcher/base/failures.py), and its group's count in
`dead_letter_groups` (migrations/008, 010). Statements only, run on the caller's cursor, so
they stay one transaction with the change of the task row they go with: the task store's
record_outcomes adds, a replay or a delete (dead_letters.py) takes away."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dispatcher.base.failures import Failure, classify
from dispatcher.store import records as r
from dispatcher.store.sql_literals import marks


def enter(cur, dead: Sequence[r.OutcomeWrite], now: dt.datetime) -> None:
    """Dead letters of these writes, whose task rows are already dead_lettered. A task that
    has an entry keeps it as it is (and is not counted twice)."""
    ids = [w.task_id for w in dead]
    cur.execute("SELECT t.task_id, t.namespace, t.task_type, d.task_id IS NOT NULL FROM tasks t"
                f" LEFT JOIN dead_letters d ON d.task_id = t.task_id WHERE t.task_id IN ({marks(len(ids))})", ids)
    names_of = {row[0]: (row[1], row[2]) for row in cur.fetchall() if not row[3]}
    fresh = [(w, classify(w.error, "failure")) for w in dead if w.task_id in names_of]
    if not fresh:
        return
    cur.execute(
        "INSERT IGNORE INTO dead_letters (task_id, slot, namespace, task_type, envelope, attempts,"
        " last_error, last_stack_trace, first_attempt_at, dead_lettered_at)"
        " SELECT t.task_id, t.slot, t.namespace, t.task_type, t.envelope, t.attempts, t.last_error,"
        " t.last_stack_trace, (SELECT MIN(e.at) FROM task_events e WHERE e.task_id = t.task_id"
        "  AND e.state = 'dispatched'), %s"
        f" FROM tasks t WHERE t.task_id IN ({marks(len(fresh))})", [now, *(w.task_id for w, _ in fresh)])
    cur.executemany("UPDATE dead_letters SET error_class = %s, error_shape = %s, error_group = %s"
                    " WHERE task_id = %s", [(f.error_class, f.shape, f.group, w.task_id) for w, f in fresh])
    _count(cur, [(*names_of[w.task_id], w.task_id, w.error, f) for w, f in fresh], now)


def _count(cur, dead: Sequence[tuple[str, str, str, str | None, Failure]], at: dt.datetime) -> None:
    """(namespace, task_type, task_id, error, failure) of new dead letters: one group row
    each, or that many more on the row there is."""
    groups: dict[tuple[str, str, str], tuple[tuple[str, str, str, str | None, Failure], int]] = {}
    for d in dead:
        key = (d[0], d[1], d[4].group)
        seen = groups.get(key)
        groups[key] = (d, (seen[1] if seen else 0) + 1)
    cur.executemany(
        "INSERT INTO dead_letter_groups (namespace, task_type, error_group, error_class, error_shape, dead, first_at,"
        " last_at, sample_task_id, sample_error) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON DUPLICATE KEY UPDATE dead = dead + VALUES(dead), last_at = GREATEST(last_at, VALUES(last_at)),"
        " sample_task_id = VALUES(sample_task_id), sample_error = VALUES(sample_error)",
        [(ns, tt, f.group, f.error_class, f.shape, n, at, at, task_id, error)
         for (ns, tt, task_id, error, f), n in groups.values()])


def leave(cur, namespace: str, task_type: str, error_group: str | None) -> None:
    """One dead letter of the group left the dead letters (replayed or deleted)."""
    cur.execute("UPDATE dead_letter_groups SET dead = dead - 1 WHERE namespace = %s AND task_type = %s"
                " AND error_group = %s AND dead > 0", (namespace, task_type, error_group or ""))
