"""Statements' literals for the MySQL store's hot path.

Task ids, namespaces and task types are validated at the API edge as [A-Za-z0-9._:-]
(dispatcher/api/validation.py), so the hot path writes them into its statements as they
are: PyMySQL's escaping, value by value, cost about 12 us a row (FIELD-NOTES), a
literal about 1. Each list is checked against that alphabet in one regex pass, so a
name that did not come through validation is refused, never written.
"""
from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Sequence


def equalities(pairs: Iterable[tuple[str, object]]) -> tuple[list[str], list[object]]:
    """`column = %s` clauses and their arguments for the (column, value) pairs whose value is
    given (not "" or None): an optional filter's conditions. Columns are the caller's names."""
    given = [(column, value) for column, value in pairs if value not in ("", None)]
    return [f"{column} = %s" for column, _ in given], [value for _, value in given]


def marks(n: int) -> str:
    return ",".join(["%s"] * n)


_NAME_LIST = re.compile(r"[A-Za-z0-9._:-]+(?:','[A-Za-z0-9._:-]+)*")


def names(values: Iterable[str]) -> str:
    """`'a','b','c'`: validated names as SQL string literals, for an IN list or VALUES."""
    joined = "','".join(values)
    if not _NAME_LIST.fullmatch(joined):
        raise ValueError(f"not a list of validated names: {joined[:200]!r}")
    return f"'{joined}'"


CASE_ROWS = 100
"""Most rows one CASE statement sets: a CASE is searched row by row."""


@functools.lru_cache(maxsize=4096)
def sql_time(value: dt.datetime | None) -> str | None:
    """A DATETIME(3) literal's text: PyMySQL escapes a string at half the cost of a
    datetime, and a batch's outcomes share a few instants, formatted once each."""
    return None if value is None else value.isoformat(sep=" ", timespec="milliseconds")


def case_times(column: str, values: Sequence[tuple[str, dt.datetime | None]]) -> str:
    """`column = CASE task_id WHEN 'id' THEN 'time' ... END`, a per-row time in one UPDATE,
    all literals (the ids checked as in names)."""
    names(tid for tid, _ in values)
    whens = " ".join(f"WHEN '{tid}' THEN " + ("NULL" if at is None else f"'{sql_time(at)}'") for tid, at in values)
    return f"{column} = CASE task_id {whens} END"
