"""Bulk replay (dispatcher/ops/bulk_replay.py) on the store's twins: a job replays the dead
letters of its filter at its rate, one step at a time from its stored cursor, audited per
task, while one node holds it."""
from __future__ import annotations

from dispatcher.api.validation import Limits
from dispatcher.auth.identity import Identity, Role
from dispatcher.base.clock import Clock, datetime_to_ms
from dispatcher.ops.bulk_replay import BulkReplayRunner, BulkReplays
from dispatcher.ops.dead_letters import Actor, DeadLetterOps
from dispatcher.store.interface_dead_letters import DeadLetterFilter
from dispatcher.store.interface_replays import DONE, RUNNING
from dispatcher.store.memory import MemoryTaskStore
from dispatcher.store.memory_dead_letters import MemoryDeadLetterStore
from dispatcher.store.memory_ops import MemoryAuditStore, MemoryReplayStore
from dispatcher.store.records import PENDING
from taskring.wire import pb
from tests.conformance.world import T, dead_letter, given


class HeldClock(Clock):
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms


def test_a_job_replays_its_dead_letters_at_its_rate_from_its_cursor_on_one_node():
    store = MemoryTaskStore()
    epochs = given(store, ())
    for i, task_id in enumerate(("a", "b", "c"), start=1):
        envelope = pb.Task(task_id=task_id, namespace="ns", task_type="send", max_retries=0).SerializeToString()
        dead_letter(store, epochs, task_id, error="ValueError: card declined", at=T(i), envelope=envelope)
    dead_letter(store, epochs, "other", error="ValueError: card declined", at=T(4), namespace="billing")
    clock = HeldClock(datetime_to_ms(T(10)))
    dead_letters, jobs = MemoryDeadLetterStore(store), MemoryReplayStore(store)
    ops = DeadLetterOps(dead_letters=dead_letters, tasks=store, limits=Limits(), node="n1", clock=clock)
    job = BulkReplays(jobs=jobs, dead_letters=dead_letters, clock=clock, max_retries=50).start(
        DeadLetterFilter(namespace="ns"), Actor(Identity("ops", Role.OPERATOR), "10.0.0.1", "card fixed"),
        rate_per_s=2, retries=1)
    first, second = (BulkReplayRunner(jobs=jobs, dead_letters=dead_letters, ops=ops, node=node, clock=clock)
                     for node in ("n1", "n2"))
    # One step: two, oldest first; the other node does not run the job meanwhile
    assert first.step() and not second.step()
    stepped = jobs.get(job.id)
    assert (stepped.state, stepped.replayed, stepped.cursor, stepped.total) == (RUNNING, 2, (T(2), "b"), 3)
    # The next step: the last one, and the job is done
    assert first.step()
    assert (jobs.get(job.id).state, jobs.get(job.id).replayed) == (DONE, 3)
    for task_id in ("a", "b", "c"):
        row, history = store.get_task(task_id)
        assert (row.status, pb.Task.FromString(row.envelope).max_retries) == (PENDING, 2)
        assert f"(bulk replay {job.id})" in (history[-1].detail or "")
    assert store.get_task("other")[0].status == "dead_lettered"
    audit = MemoryAuditStore(store).records()
    assert sorted(rec.action for rec in audit) == ["bulk_replay.start"] + ["bulk_replay.task"] * 3
