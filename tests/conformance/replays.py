"""Conformance of the bulk replay jobs (dispatcher/store/interface_replays.py): audited
creation and state changes, and the runner's lease, under which alone progress is stored."""
from __future__ import annotations

from dispatcher.store.errors import JobNotFound, JobStateConflict
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter
from dispatcher.store.interface_replays import CANCELLED, DONE, PAUSED, RUNNING, Job
from tests.conformance.world import Area, Backend, T, given, refused

WHERE = DeadLetterFilter(namespace="ns", error_class="ValueError", until=T(30))


def started(backend: Backend, total: int = 7, at: float = 1) -> Job:
    given(backend.store, ())   # the slots' records: refused() reads through the task store
    return backend.replays.create(WHERE, rate_per_s=5, retries=2, total=total, record=AuditRecord(
        at=T(at), actor="ops", address="10.0.0.1", action="bulk_replay.start", target="bulk_replay:?",
        namespace="ns", reason="card fixed", after={"total": total}))


def change(backend: Backend, job_id: int, action: str, at: float = 2) -> Job:
    return backend.replays.change_state(job_id, action, AuditRecord(
        at=T(at), actor="ann", address="10.0.0.2", action=f"bulk_replay.{action}", target=f"bulk_replay:{job_id}",
        reason=action))


class ReplayConformance(Area):
    def test_a_job_is_created_running_with_its_audit_record(self, backend):
        job = started(backend)
        assert job == Job(job.id, WHERE, 5, 2, RUNNING, 7, 0, 0, None, None, "card fixed", "ops", T(1), T(1), "", None)
        assert job.cursor is None and backend.replays.get(job.id) == job
        [record] = backend.audit.records(target=f"bulk_replay:{job.id}")
        assert (record.action, record.actor, record.after) == ("bulk_replay.start", "ops", {"total": 7})
        newer = started(backend, total=3, at=2)
        assert newer.id > job.id
        assert [j.id for j in backend.replays.jobs()] == [newer.id, job.id]
        assert [j.id for j in backend.replays.jobs(limit=1)] == [newer.id]
        assert "bulk replay 999 not found" in refused(backend, JobNotFound, lambda: backend.replays.get(999))

    def test_pause_resume_and_cancel_follow_the_states_and_are_audited(self, backend):
        job = started(backend)
        assert (change(backend, job.id, "pause", 2).state, change(backend, job.id, "resume", 3).state) == (
            PAUSED, RUNNING)
        paused = change(backend, job.id, "pause", 4)
        assert (paused.state, paused.updated_at) == (PAUSED, T(4))
        assert change(backend, job.id, "cancel", 5).state == CANCELLED
        for action in ("pause", "resume", "cancel"):
            def again(action: str = action) -> Job:
                return change(backend, job.id, action, 6)
            assert "is cancelled: it cannot" in refused(backend, JobStateConflict, again)
        refused(backend, JobNotFound, lambda: change(backend, 999, "pause"))
        trail = [(rec.action, rec.before, rec.after) for rec in backend.audit.records(target=f"bulk_replay:{job.id}")]
        assert trail[:2] == [("bulk_replay.cancel", {"state": PAUSED}, {"state": CANCELLED}),
                             ("bulk_replay.pause", {"state": RUNNING}, {"state": PAUSED})]

    def test_one_node_holds_a_job_at_a_time_and_the_next_goes_on_from_its_cursor(self, backend):
        job = started(backend)
        jobs = backend.replays
        held = jobs.take_lease("n1", T(2), T(17))
        assert (held.id, held.lease_owner, held.lease_until) == (job.id, "n1", T(17))
        assert jobs.take_lease("n2", T(3), T(18)) is None           # n1's lease is live
        assert jobs.advance(job.id, "n1", cursor=(T(5), "e"), replayed=4, skipped=1, finished=False, now=T(4),
                            lease_until=T(19)) is True
        assert jobs.advance(job.id, "n2", cursor=(T(9), "z"), replayed=9, skipped=9, finished=True, now=T(4),
                            lease_until=T(19)) is False             # not n2's: nothing written
        taken = jobs.take_lease("n2", T(20), T(35))                 # n1's lease ran out
        assert (taken.lease_owner, taken.cursor, taken.replayed, taken.skipped, taken.updated_at) == (
            "n2", (T(5), "e"), 4, 1, T(4))
        assert jobs.advance(job.id, "n2", cursor=None, replayed=0, skipped=2, finished=True, now=T(21),
                            lease_until=T(36)) is True
        done = jobs.get(job.id)
        assert (done.state, done.cursor, done.skipped, done.lease_until) == (DONE, (T(5), "e"), 3, T(36))
        assert jobs.take_lease("n2", T(22), T(37)) is None          # done: nothing left to run

    def test_a_node_takes_the_oldest_running_job_and_keeps_the_one_it_holds(self, backend):
        first, second = started(backend), started(backend, at=2)
        change(backend, first.id, "pause")
        assert backend.replays.take_lease("n1", T(3), T(18)).id == second.id
        change(backend, first.id, "resume")
        assert backend.replays.take_lease("n2", T(4), T(19)).id == first.id
        assert backend.replays.take_lease("n1", T(5), T(20)).id == second.id   # renewed, its own
        paused = change(backend, second.id, "pause")
        assert backend.replays.advance(second.id, "n1", cursor=None, replayed=1, skipped=0, finished=True, now=T(6),
                                       lease_until=T(21)) is True
        assert backend.replays.get(second.id).state == paused.state == PAUSED   # only running becomes done
