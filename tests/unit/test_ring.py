"""Desired slot ownership over a consistent-hash ring (uhashring)."""
from __future__ import annotations

import itertools
from collections import Counter

import pytest

from cluster.ring import desired_owners, moved_slots

THREE = ["node-1", "node-2", "node-3"]


def test_no_members_own_nothing():
    assert desired_owners([], 64) == {}


def test_every_slot_has_an_owner_among_the_members():
    # Given / When
    owners = desired_owners(THREE, 64)

    # Then
    assert sorted(owners) == list(range(64))
    assert set(owners.values()) == set(THREE)
    assert all(n >= 8 for n in Counter(owners.values()).values())


def test_a_single_member_owns_every_slot():
    assert set(desired_owners(["only"], 16).values()) == {"only"}


def test_the_result_does_not_depend_on_member_order_or_repeats():
    # Given
    expected = desired_owners(THREE, 64)

    # When / Then
    for perm in itertools.permutations(THREE):
        assert desired_owners(perm, 64) == expected
    assert desired_owners(iter(THREE + ["node-2"]), 64) == expected


def test_pinned_placement():
    # Pinned once: if this changes (e.g. a uhashring upgrade), nodes on different
    # versions would disagree about owners. Upgrade all nodes together, then re-pin.
    owners = desired_owners(["node-a", "node-b", "node-c"], 16)
    assert [owners[s] for s in range(16)] == [
        "node-a", "node-b", "node-a", "node-a", "node-b", "node-a", "node-c", "node-b",
        "node-c", "node-c", "node-b", "node-b", "node-a", "node-c", "node-a", "node-b",
    ]


def test_adding_a_fourth_member_moves_about_a_quarter_of_the_slots_and_only_to_it():
    # Given
    before = desired_owners(THREE, 64)

    # When
    after = desired_owners(THREE + ["node-4"], 64)
    moved = moved_slots(before, after)

    # Then
    assert 0.10 * 64 <= len(moved) <= 0.45 * 64
    assert {new for _, new in moved.values()} == {"node-4"}
    assert all(before[s] == old for s, (old, _) in moved.items())


def test_removing_a_member_moves_only_its_slots():
    # Given
    before = desired_owners(THREE, 64)

    # When
    after = desired_owners(["node-1", "node-3"], 64)
    moved = moved_slots(before, after)

    # Then
    assert set(moved) == {s for s, owner in before.items() if owner == "node-2"}
    assert all(old == "node-2" and new in {"node-1", "node-3"} for old, new in moved.values())


def test_moved_slots_reports_old_and_new_owner_with_none_for_unowned():
    # Given
    before = {0: "a", 1: "b", 2: "c"}
    after = {0: "a", 1: "c", 3: "d"}

    # When / Then
    assert moved_slots(before, after) == {1: ("b", "c"), 2: ("c", None), 3: (None, "d")}
    assert moved_slots(before, dict(before)) == {}
    assert moved_slots({}, desired_owners(["x"], 2)) == {0: (None, "x"), 1: (None, "x")}


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        desired_owners(THREE, 0)
    with pytest.raises(ValueError):
        desired_owners(THREE, 8, vnodes=0)
    with pytest.raises(ValueError):
        desired_owners(["ok", ""], 8)
