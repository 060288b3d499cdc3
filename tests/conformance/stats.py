"""Conformance of the per-minute task counts (dispatcher/store/interface_stats.py): a row per
(minute, namespace, task type, node), replaced by a write that names it, read back by minute,
namespace and type."""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from dispatcher.store.interface_stats import BUCKETS, StatsRow
from tests.conformance.world import T0, Area

MINUTE = T0.replace(second=0)


def at(minutes: int) -> dt.datetime:
    return MINUTE + dt.timedelta(minutes=minutes)


def row(minutes: int, node: str = "n1", namespace: str = "shop", task_type: str = "charge", **counts) -> StatsRow:
    return StatsRow(at(minutes), namespace, task_type, node, **counts)


def read(backend, since: int = -60, **where) -> set[StatsRow]:
    return set(backend.stats.read(since=at(since), **where))


class StatsConformance(Area):
    def test_a_row_reads_back_as_written_buckets_and_all(self, backend):
        buckets = tuple(range(BUCKETS))
        written = row(0, submitted=5, succeeded=3, failed=1, dead_lettered=1, buckets=buckets)
        backend.stats.write([written])
        assert read(backend) == {written}

    def test_a_write_replaces_the_row_it_names_and_no_other(self, backend):
        backend.stats.write([row(0, submitted=2), row(0, node="n2", submitted=9), row(1, submitted=1)])
        backend.stats.write([row(0, submitted=7, succeeded=4)])   # cumulative: the node's count so far
        assert read(backend) == {row(0, submitted=7, succeeded=4), row(0, node="n2", submitted=9),
                                 row(1, submitted=1)}

    def test_since_is_inclusive_and_each_condition_narrows(self, backend):
        backend.stats.write([row(-2), row(0), row(0, namespace="mail", task_type="send"),
                             row(1, task_type="refund")])
        assert {r.minute for r in read(backend, since=0)} == {at(0), at(1)}
        assert read(backend, since=0, namespace="mail") == {row(0, namespace="mail", task_type="send")}
        assert read(backend, task_type="refund") == {row(1, task_type="refund")}
        assert read(backend, since=2) == set()

    def test_nothing_to_write_writes_nothing(self, backend):
        backend.stats.write([])
        assert read(backend) == set()

    def test_a_row_with_the_wrong_number_of_buckets_is_refused_naming_the_field(self, backend):
        with pytest.raises(ValueError, match="StatsRow.buckets"):
            dataclasses.replace(row(0), buckets=(1, 2))
