"""The literals the MySQL store writes into its hot-path statements: only validated
names get in, and times keep their milliseconds (truncated, as DATETIME(3) does)."""
from __future__ import annotations

import datetime as dt

import pytest

from dispatcher.store.sql_literals import case_times, names, sql_time


def test_validated_names_become_one_literal_list():
    assert names(["a", "Order-1", "x.y:z_9"]) == "'a','Order-1','x.y:z_9'"


@pytest.mark.parametrize("bad", ["a'b", "a b", "", "a\\b", "a%b", "a,b", "a'); DROP TABLE tasks; --", "é"])
def test_anything_else_is_refused_before_it_reaches_a_statement(bad):
    with pytest.raises(ValueError, match="not a list of validated names"):
        names(["ok", bad])


def test_times_are_written_with_their_milliseconds():
    assert sql_time(dt.datetime(2030, 1, 2, 3, 4, 5, 678_999)) == "2030-01-02 03:04:05.678"
    assert sql_time(None) is None


def test_a_case_gives_each_row_its_own_time_or_null():
    at = dt.datetime(2030, 1, 1, 0, 0, 0, 5_000)
    assert case_times("started_at", [("a", at), ("b", None)]) == \
        "started_at = CASE task_id WHEN 'a' THEN '2030-01-01 00:00:00.005' WHEN 'b' THEN NULL END"
    with pytest.raises(ValueError):
        case_times("started_at", [("a'", at)])
