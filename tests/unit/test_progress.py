"""dispatcher/engine/progress.py on the store's twin: where each owned partition may be
replayed from, committed under the slot's epoch."""
from __future__ import annotations

import asyncio

from dispatcher.base.clock import Clock
from dispatcher.engine.progress import KafkaProgress
from dispatcher.store.memory import MemoryTaskStore

TOPICS = ["t.high", "t.normal"]


def _world() -> tuple[MemoryTaskStore, KafkaProgress, int]:
    store = MemoryTaskStore()
    store.start()
    epoch = store.claim_slot(3, "n1", Clock().now())
    return store, KafkaProgress(store=store, clock=Clock()), epoch


def test_a_slot_opens_at_its_committed_watermark_and_commits_only_what_is_settled():
    store, progress, epoch = _world()
    assert asyncio.run(progress.open(3, TOPICS)) == {("t.high", 3): None, ("t.normal", 3): None}
    assert progress.take("t.normal", 3, 0) and progress.take("t.normal", 3, 1)
    assert not progress.take("t.normal", 3, 1), "an offset taken twice (a replay) is taken once"
    assert not progress.take("t.normal", 9, 0), "a partition nobody opened"
    progress.settle("t.normal", 3, 1)
    assert asyncio.run(progress.commit({3: epoch})) == set()
    assert store.committed_offsets() == {("t.normal", 3): 0}, "offset 0 is unsettled: a new owner replays from it"
    progress.settle("t.normal", 3, 0)
    assert asyncio.run(progress.commit({3: epoch})) == set()
    assert store.committed_offsets() == {("t.normal", 3): 2}
    # Reopened (the slot claimed again), it starts where the store says.
    progress.close(3, TOPICS)
    assert asyncio.run(progress.open(3, TOPICS))[("t.normal", 3)] == 2


def test_a_commit_under_a_superseded_epoch_is_refused_and_names_the_slot():
    store, progress, epoch = _world()
    asyncio.run(progress.open(3, TOPICS))
    progress.take("t.high", 3, 0)
    progress.settle("t.high", 3, 0)
    store.claim_slot(3, "n2", Clock().now())  # someone else owns it now
    assert asyncio.run(progress.commit({3: epoch})) == {3}
    assert store.committed_offsets() == {}


def test_a_slot_left_out_of_the_epochs_is_not_committed():
    store, progress, epoch = _world()
    asyncio.run(progress.open(3, TOPICS))
    progress.take("t.high", 3, 0)
    progress.settle("t.high", 3, 0)
    assert asyncio.run(progress.commit({})) == set()
    assert store.committed_offsets() == {}
    assert asyncio.run(progress.commit({3: epoch}, only_slot=3)) == set()
    assert store.committed_offsets() == {("t.high", 3): 1}
