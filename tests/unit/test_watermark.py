"""The commit watermark of one partition: never past unfinished work."""
from __future__ import annotations

import random

import pytest

from dispatcher.engine.watermark import OffsetTracker


def test_nothing_tracked_has_nothing_to_commit():
    assert OffsetTracker().committable() is None
    assert OffsetTracker().pending() == 0


def test_unfinished_first_offset_holds_the_watermark():
    # Given
    t = OffsetTracker()
    for o in range(5):
        t.track(o)

    # When: later offsets finish first
    t.finish(1)
    t.finish(2)
    t.finish(4)

    # Then
    assert t.committable() == 0 and t.pending() == 2

    # And when the first finishes, the watermark moves up to the next unfinished
    t.finish(0)
    assert t.committable() == 3
    t.finish(3)
    assert t.committable() == 5 and t.pending() == 0


def test_everything_finished_commits_one_past_the_last_tracked():
    t = OffsetTracker()
    t.track(7)
    t.finish(7)
    assert t.committable() == 8


def test_gaps_between_offsets_are_fine():
    # Given: offsets 11-14 never reached us (compaction, transaction markers, skipped)
    t = OffsetTracker()
    t.track(10)
    t.track(15)

    # When / Then
    t.finish(10)
    assert t.committable() == 15
    t.finish(15)
    assert t.committable() == 16


def test_finish_is_idempotent_and_ignores_unknown_offsets():
    # Given
    t = OffsetTracker()
    t.track(0)
    t.track(1)

    # When / Then
    assert t.finish(1) is True
    assert t.finish(1) is False
    assert t.finish(99) is False
    assert t.committable() == 0 and t.pending() == 1


def test_offsets_must_increase():
    t = OffsetTracker()
    t.track(5)
    with pytest.raises(ValueError):
        t.track(5)
    with pytest.raises(ValueError):
        t.track(4)


def test_reset_forgets_everything_and_sets_the_start():
    # Given
    t = OffsetTracker()
    for o in range(3):
        t.track(o)

    # When
    t.reset(100)

    # Then
    assert t.committable() is None and t.pending() == 0
    with pytest.raises(ValueError):
        t.track(99)
    assert t.finish(1) is False  # a late finish from before the reset is harmless
    t.track(100)
    assert t.committable() == 100
    with pytest.raises(ValueError):
        t.reset(-1)


def test_start_offset_in_constructor():
    with pytest.raises(ValueError):
        OffsetTracker(start_offset=10).track(9)


@pytest.mark.parametrize("seed", range(5))
def test_random_order_finishing_matches_a_brute_force_model(seed):
    # Given
    rng = random.Random(seed)
    t = OffsetTracker()
    tracked: list[int] = []
    finished: set[int] = set()
    offset = 0

    def expected():
        if not tracked:
            return None
        unfinished = [o for o in tracked if o not in finished]
        return min(unfinished) if unfinished else tracked[-1] + 1

    # When: interleaved takes (with random gaps) and finishes in random order
    for _ in range(3000):
        if rng.random() < 0.5:
            offset += rng.choice((1, 1, 1, 2, 5))
            t.track(offset)
            tracked.append(offset)
        else:
            o = rng.choice(tracked) if tracked and rng.random() < 0.9 else offset + 1000
            assert t.finish(o) == (o in tracked and o not in finished)
            if o in tracked:
                finished.add(o)

        # Then: at every step, the brute force answer
        assert t.committable() == expected()
        assert t.pending() == len(tracked) - len(finished)


def test_two_hundred_thousand_outstanding_offsets():
    # Given
    n = 200_000
    t = OffsetTracker()
    for o in range(n):
        t.track(o)
    order = list(range(n))
    random.Random(3).shuffle(order)

    # When: finished in random order, the watermark checked all along
    lowest_unfinished = 0
    finished = bytearray(n)
    for i, o in enumerate(order):
        t.finish(o)
        finished[o] = 1
        while lowest_unfinished < n and finished[lowest_unfinished]:
            lowest_unfinished += 1
        if i % 1000 == 0:
            assert t.committable() == lowest_unfinished

    # Then
    assert t.committable() == n and t.pending() == 0


def test_memory_follows_unfinished_work_not_everything_taken_in():
    # Given: one slow task at offset 0 while 100k later ones come and finish
    t = OffsetTracker()
    t.track(0)
    for o in range(1, 100_001):
        t.track(o)
        t.finish(o)

    # Then: the watermark waits, and finished offsets were compacted away
    assert t.committable() == 0 and t.pending() == 1
    assert len(t._heap) <= 200  # internal: the lazy-deletion heap was rebuilt
