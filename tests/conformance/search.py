"""Conformance of task search (dispatcher/store/interface_search.py): by trace id, by unique
key, by namespace and type, paged newest first."""
from __future__ import annotations

import dataclasses

from dispatcher.store.interface_search import MAX_PAGE, Query, TaskSummary
from dispatcher.store.records import ENQUEUED, PENDING
from tests.conformance.world import NODE, T0, Area, Backend, T, given, new_task


def submitted(backend: Backend) -> None:
    """a..f created at T(1)..T(6) over slots 0..2: a, c, e traced "tr"; b holds key k1;
    a..d of ns/send, e of ns/other, f of billing/send; b and d enqueued, the others pending."""
    given(backend.store, ())
    for i, task_id in enumerate("abcdef", start=1):
        task = new_task(task_id, slot=i % 3, created_at=T(i), due_s=60, status=ENQUEUED if i in (2, 4) else PENDING,
                        namespace="billing" if task_id == "f" else "ns",
                        task_type="other" if task_id == "e" else "send", unique_key="k1" if task_id == "b" else "")
        backend.store.insert_tasks([dataclasses.replace(task, trace_id="tr" if i % 2 else "")], NODE)


def ids(found: list[TaskSummary]) -> list[str]:
    return [t.task_id for t in found]


class SearchConformance(Area):
    def test_a_summary_is_the_row_as_it_stands(self, backend):
        submitted(backend)
        [a] = backend.search.search(Query(trace_id="tr"), limit=1, before=(T(2), ""))
        assert a == TaskSummary("a", 1, "ns", "send", PENDING, 0, T(60), T(1), T(1), None)

    def test_by_trace_id_newest_first_paged_by_cursor(self, backend):
        submitted(backend)
        search = backend.search.search
        first = search(Query(trace_id="tr"), limit=2)
        assert ids(first) == ["e", "c"]
        assert ids(search(Query(trace_id="tr"), before=first[-1].cursor)) == ["a"]
        assert search(Query(trace_id="nope")) == []

    def test_a_w3c_trace_id_finds_the_traceparents_of_its_trace(self, backend):
        given(backend.store, ())
        trace = "0af7651916cd43dd8448eb211c80319c"
        for task_id, at, trace_id in (("p1", 1, f"00-{trace}-b7ad6b7169203331-01"), ("p2", 2, trace),
                                      ("p3", 3, f"00-{trace}-00f067aa0ba902b7-03"),
                                      ("other", 4, "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                                      ("near", 5, f"00-{trace}x")):
            backend.store.insert_tasks([dataclasses.replace(new_task(task_id, slot=at % 3, created_at=T(at)),
                                                            trace_id=trace_id)], NODE)
        assert ids(backend.search.search(Query(trace_id=trace))) == ["p3", "p2", "p1"]
        assert ids(backend.search.search(Query(trace_id=f"00-{trace}-b7ad6b7169203331-01"))) == ["p1"]
        assert ids(backend.search.search(Query(trace_id=trace), limit=1, before=(T(3), "p3"))) == ["p2"]

    def test_by_unique_key_the_task_that_took_it(self, backend):
        submitted(backend)
        assert ids(backend.search.search(Query(namespace="ns", unique_key="k1"))) == ["b"]
        backend.store.insert_tasks([new_task("x", slot=3, unique_key="k2")], NODE)   # any slot, any key
        assert ids(backend.search.search(Query(namespace="ns", unique_key="k2"))) == ["x"]
        assert backend.search.search(Query(namespace="billing", unique_key="k1")) == []

    def test_by_namespace_and_type_with_status_and_time_of_acceptance(self, backend):
        submitted(backend)
        search = backend.search.search
        for q, expected in ((Query(namespace="ns", task_type="send"), ["d", "c", "b", "a"]),
                            (Query(namespace="ns", task_type="send", status="enqueued"), ["d", "b"]),
                            (Query(namespace="ns", task_type="send", since=T(2), until=T(4)), ["c", "b"]),
                            (Query(namespace="billing", task_type="send"), ["f"]),
                            (Query(namespace="ns", task_type="none"), [])):
            assert ids(search(q)) == expected, q
        assert ids(search(Query(namespace="ns", task_type="send"), before=(T(3), "c"), limit=1)) == ["b"]

    def test_a_limit_is_clamped_to_one_page(self, backend):
        submitted(backend)
        assert ids(backend.search.search(Query(namespace="ns", task_type="send"), limit=0)) == ["d"]
        backend.store.insert_tasks([new_task(f"t{i:03d}", created_at=T0) for i in range(MAX_PAGE + 1)], NODE)
        assert len(backend.search.search(Query(namespace="ns", task_type="send"), limit=MAX_PAGE + 50)) == MAX_PAGE
