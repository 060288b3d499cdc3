"""The counts of the dead letters' failure groups (migrations/010_dead_letter_groups.sql), kept
in the transactions that change the dead letters: dead-lettering adds, a replay or a delete
takes away. Statements only, run on the caller's cursor (the task store's and the dead-letter
store's), so both stay one transaction with the change they count."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple

from dispatcher.failures import Failure


class Counted(NamedTuple):
    namespace: str
    task_type: str
    task_id: str
    error: str | None
    failure: Failure


def add(cur, dead: Sequence[Counted], at: dt.datetime) -> None:
    """New dead letters, one group row each or one more on the row there is."""
    groups: dict[tuple[str, str, str], tuple[Counted, int]] = {}
    for d in dead:
        key = (d.namespace, d.task_type, d.failure.group)
        seen = groups.get(key)
        groups[key] = (d, (seen[1] if seen else 0) + 1)
    if not groups:
        return
    cur.executemany(
        "INSERT INTO dead_letter_groups (namespace, task_type, error_group, error_class, error_shape, dead, first_at,"
        " last_at, sample_task_id, sample_error) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON DUPLICATE KEY UPDATE dead = dead + VALUES(dead), last_at = GREATEST(last_at, VALUES(last_at)),"
        " sample_task_id = VALUES(sample_task_id), sample_error = VALUES(sample_error)",
        [(d.namespace, d.task_type, d.failure.group, d.failure.error_class, d.failure.shape, n, at, at, d.task_id,
          d.error) for d, n in groups.values()])


def remove(cur, namespace: str, task_type: str, error_group: str | None) -> None:
    """One dead letter of the group left the dead letters (replayed or deleted)."""
    cur.execute("UPDATE dead_letter_groups SET dead = dead - 1 WHERE namespace = %s AND task_type = %s"
                " AND error_group = %s AND dead > 0", (namespace, task_type, error_group or ""))
