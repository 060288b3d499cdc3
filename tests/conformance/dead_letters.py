"""Conformance of the dead letters (dispatcher/store/interface_dead_letters.py): entries read
paged, counted and grouped by failure, and the operators' audited replay and delete."""
from __future__ import annotations

from dispatcher.base.errors import TaskNotFound
from dispatcher.base.failures import classify
from dispatcher.store import records as r
from dispatcher.store.errors import ChangedSinceRead, NotDeadLettered
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter, Replayed, envelope_digest
from dispatcher.store.records import DEAD_LETTERED, PENDING
from tests.conformance.world import NODE, Area, Backend, T, dead_letter, given, new_task, refused

DECLINED = classify("ValueError: card 1 declined", "failure")
TIMEOUT = classify("TimeoutError: after 30 s", "failure")


def five_dead(backend: Backend) -> dict[int, int]:
    """a..e dead-lettered at T(1)..T(5): a, b, d declined (b in billing), c and e timed out
    (e on slot 1)."""
    epochs = given(backend.store, ())
    for task_id, s, error, ns, slot in (("a", 1, "ValueError: card 1 declined", "ns", 0),
                                        ("b", 2, "ValueError: card 2 declined", "billing", 0),
                                        ("c", 3, "TimeoutError: after 30 s", "ns", 0),
                                        ("d", 4, "ValueError: card 3 declined", "ns", 0),
                                        ("e", 5, "TimeoutError: after 31 s", "ns", 1)):
        dead_letter(backend.store, epochs, task_id, error=error, at=T(s), namespace=ns, slot=slot)
    return epochs


def ids(entries: list[r.DeadLetter]) -> list[str]:
    return [d.task_id for d in entries]


def _record(action: str):
    def record(what, envelope: bytes | None = None) -> AuditRecord:
        return AuditRecord(at=T(9), actor="ops", address="10.0.0.1", action=action, target=f"task:{what.task_id}",
                           namespace=what.namespace, reason="why",
                           before=None if envelope is None else envelope.decode())
    return record


def replay(backend: Backend, task_id: str, expect_digest: str | None = None) -> Replayed:
    return backend.dead_letter_store.replay(task_id, rewrite=lambda env, attempts: env + b"!" * attempts,
                                            detail="replayed by ops: why", record=_record("dlq.replay"), node="n2",
                                            now=T(10), expect_digest=expect_digest)


class DeadLetterConformance(Area):
    # ---- reads

    def test_an_entry_is_the_task_as_it_failed_classified_by_its_failure(self, backend):
        five_dead(backend)
        entry, stack_trace = backend.dead_letter_store.get("a")
        assert entry == r.DeadLetter("a", 0, "ns", "send", 1, "ValueError: card 1 declined", "ValueError",
                                     DECLINED.shape, DECLINED.group, T(1), T(1))
        assert stack_trace == "Traceback: ValueError: card 1 declined"
        assert "'nope' not found" in refused(backend, TaskNotFound, lambda: backend.dead_letter_store.get("nope"))

    def test_pages_run_newest_first_or_oldest_first_from_a_cursor(self, backend):
        five_dead(backend)
        dlq, every = backend.dead_letter_store, DeadLetterFilter()
        first = dlq.page(every, limit=2)
        assert ids(first) == ["e", "d"]
        assert ids(dlq.page(every, limit=2, cursor=first[-1].cursor)) == ["c", "b"]
        assert ids(dlq.page(every, limit=10, cursor=(T(3), "c"), oldest_first=True)) == ["d", "e"]
        assert ids(dlq.page(every, limit=10, oldest_first=True)) == ["a", "b", "c", "d", "e"]

    def test_a_filter_names_namespace_type_error_class_group_and_time(self, backend):
        five_dead(backend)
        dlq = backend.dead_letter_store
        for where, expected in ((DeadLetterFilter(namespace="billing"), ["b"]),
                                (DeadLetterFilter(namespace="ns", error_class="ValueError"), ["d", "a"]),
                                (DeadLetterFilter(error_group=TIMEOUT.group), ["e", "c"]),
                                (DeadLetterFilter(task_type="other"), []),
                                (DeadLetterFilter(since=T(2), until=T(4)), ["c", "b"])):
            assert ids(dlq.page(where, limit=10)) == expected, where
            assert dlq.count(where) == len(expected), where

    def test_groups_count_the_entries_of_each_failure_largest_first(self, backend):
        five_dead(backend)
        dlq = backend.dead_letter_store
        counted = [(g.namespace, g.error_group, g.error_class, g.count, g.first_at, g.last_at, g.sample_task_id)
                   for g in dlq.groups(DeadLetterFilter())]
        assert counted == [("ns", DECLINED.group, "ValueError", 2, T(1), T(4), "d"),
                           ("ns", TIMEOUT.group, "TimeoutError", 2, T(3), T(5), "e"),
                           ("billing", DECLINED.group, "ValueError", 1, T(2), T(2), "b")]
        ranged = dlq.groups(DeadLetterFilter(namespace="ns", since=T(3)))
        assert [(g.error_group, g.count, g.first_at, g.last_at, g.sample_task_id) for g in ranged] == [
            (TIMEOUT.group, 2, T(3), T(5), "e"), (DECLINED.group, 1, T(4), T(4), "d")]
        assert len(dlq.groups(DeadLetterFilter(), limit=1)) == 1

    # ---- replay

    def test_a_replay_puts_the_task_back_to_pending_with_its_history_and_audit_record(self, backend):
        five_dead(backend)
        envelope = backend.store.get_task("a")[0].envelope
        assert replay(backend, "a", expect_digest=envelope_digest(envelope)) == Replayed(
            "a", "ns", envelope, envelope + b"!", 1)
        row, history = backend.store.get_task("a")
        assert (row.status, row.attempts, row.trigger_at, row.updated_at, row.envelope) == (
            PENDING, 1, T(10), T(10), envelope + b"!")
        assert (history[-1].state, history[-1].at, history[-1].node, history[-1].attempt, history[-1].detail) == (
            "retry_wait", T(10), "n2", 1, "replayed by ops: why")
        assert "a" not in backend.dead_letters()
        assert [(g.sample_task_id, g.count) for g in backend.dead_letter_store.groups(
            DeadLetterFilter(namespace="ns", error_group=DECLINED.group))] == [("d", 1)]
        [audit] = backend.audit.records(target="task:a")
        assert (audit.action, audit.actor, audit.at, audit.reason) == ("dlq.replay", "ops", T(9), "why")

    def test_a_replay_of_what_is_not_a_dead_letter_or_changed_since_read_writes_nothing(self, backend):
        five_dead(backend)
        backend.store.insert_tasks([new_task("p")], NODE)
        backend.dead_letter_store.delete("c", _record("dlq.delete"))
        assert "it is pending" in refused(backend, NotDeadLettered, lambda: replay(backend, "p"), "p")
        assert "deleted from the dead letters" in refused(backend, NotDeadLettered, lambda: replay(backend, "c"), "c")
        assert "changed since it was read" in refused(backend, ChangedSinceRead,
                                                      lambda: replay(backend, "a", "0" * 16), "a")
        refused(backend, TaskNotFound, lambda: replay(backend, "nope"))
        assert replay(backend, "a").task_id == "a"
        refused(backend, NotDeadLettered, lambda: replay(backend, "a"), "a")   # a second replay, after a crash

    # ---- delete

    def test_a_delete_removes_the_entry_and_keeps_the_task_dead_lettered(self, backend):
        five_dead(backend)
        before, (entry, _) = backend.store.get_task("a"), backend.dead_letter_store.get("a")
        assert backend.dead_letter_store.delete("a", _record("dlq.delete")) == entry
        assert backend.store.get_task("a") == before and before[0].status == DEAD_LETTERED
        assert ids(backend.dead_letter_store.page(DeadLetterFilter(namespace="ns"), limit=10)) == ["e", "d", "c"]
        [audit] = backend.audit.records(target="task:a")
        assert (audit.action, audit.before) == ("dlq.delete", "envelope of a")
        refused(backend, TaskNotFound, lambda: backend.dead_letter_store.delete("a", _record("dlq.delete")))
        assert backend.dead_letter_store.count(DeadLetterFilter(error_group=DECLINED.group)) == 2
