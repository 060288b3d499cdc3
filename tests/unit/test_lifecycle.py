"""The two tables of a task's lifecycle, checked: the history's (taskring.task.LIFECYCLE)
and the row's (dispatcher/store/records.py STATUS_TRANSITIONS), and the mappings
between the SDK's states, the wire's and the row's. That the engine and both stores
write by these tables is checked where they run: tests/conformance/world.py after
every case, tests/unit/test_engine.py after every test."""
from __future__ import annotations

import datetime as dt

import pytest

from dispatcher.store import records as r
from taskring import TaskState
from taskring.task import LIFECYCLE
from taskring.wire import STATE_FROM_PB, STATE_TO_PB, pb

NOW = dt.datetime(2030, 1, 1)


def _reachable(table, start):
    seen, todo = {start}, [start]
    while todo:
        for after in table[todo.pop()]:
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


def test_the_history_table_names_every_state_and_reaches_each_from_accepted():
    assert set(LIFECYCLE) == set(TaskState)
    assert _reachable(LIFECYCLE, TaskState.ACCEPTED) == set(TaskState)


def test_exactly_the_four_outcomes_are_terminal_and_every_other_state_can_end():
    terminal = {s for s in TaskState if s.is_terminal}
    assert terminal == {TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED, TaskState.SKIPPED}
    for state in set(TaskState) - terminal:
        assert _reachable(LIFECYCLE, state) & terminal, f"{state} can never end"
    assert all(s.successors == LIFECYCLE[s] for s in TaskState)


def test_the_row_table_names_every_status_and_every_row_can_end():
    assert set(r.STATUS_TRANSITIONS) == set(r.Status)
    assert r.TERMINAL == {r.SUCCEEDED, r.DEAD_LETTERED, r.CANCELLED, r.SKIPPED}
    for status in r.Status:
        assert _reachable(r.STATUS_TRANSITIONS, status) & r.TERMINAL, f"a {status} row can never end"
    assert r.CANCELLABLE == {r.PENDING, r.ENQUEUED, r.CLAIMED, r.WAITING}, "cancel is only for tasks not yet handed out"
    assert r.CANCELLABLE_RUNNING == r.CANCELLABLE | {r.DISPATCHED}, "...or running, for a type that heartbeats"


def test_the_row_statuses_that_end_a_task_are_the_states_that_end_it():
    assert {TaskState(s.value) for s in r.TERMINAL} == {s for s in TaskState if s.is_terminal}


@pytest.mark.parametrize("status, attempts, due_in_s, state", [
    (r.PENDING, 0, 60, TaskState.QUEUED),           # a delayed first attempt is queued, not retrying
    (r.PENDING, 1, 60, TaskState.RETRY_WAIT),
    (r.PENDING, 1, -1, TaskState.QUEUED),           # the retry fell due
    (r.ENQUEUED, 2, 5, TaskState.RETRY_WAIT),
    (r.ENQUEUED, 0, 0, TaskState.QUEUED),
    (r.CLAIMED, 3, 0, TaskState.QUEUED),
    (r.DISPATCHED, 1, 0, TaskState.DISPATCHED),
    (r.SUCCEEDED, 1, 0, TaskState.SUCCEEDED),
    (r.DEAD_LETTERED, 4, 0, TaskState.DEAD_LETTERED),
    (r.CANCELLED, 0, 0, TaskState.CANCELLED),
    (r.WAITING, 0, 0, TaskState.WAITING),
    (r.SKIPPED, 0, 0, TaskState.SKIPPED),
])
def test_a_row_shows_callers_its_lifecycle_state(status, attempts, due_in_s, state):
    assert r.api_state(status, attempts, NOW + dt.timedelta(seconds=due_in_s), NOW) == state


def test_every_row_status_maps_to_a_state_and_text_from_the_database_is_accepted():
    for status in r.Status:
        assert r.api_state(status.value, 0, NOW, NOW) in set(TaskState)
    with pytest.raises(ValueError):
        r.api_state("paused", 0, NOW, NOW)


def test_the_wire_mapping_is_one_to_one_with_the_protos_states():
    wire = {value for name, value in pb.TaskState.items() if name != "TASK_STATE_UNSPECIFIED"}
    assert set(STATE_TO_PB.values()) == wire and len(STATE_TO_PB) == len(TaskState)
    assert all(STATE_FROM_PB[STATE_TO_PB[s]] == s for s in TaskState)


@pytest.mark.parametrize("states, errors", [
    (["accepted", "queued", "dispatched", "running", "succeeded"], []),
    (["accepted", "queued", "dispatched", "running", "retry_wait", "queued", "dispatched", "failed",
      "dead_lettered"], []),
    (["accepted", "queued", "dispatched", "queued", "dispatched", "succeeded"], []),   # handed back unspent
    (["accepted", "queued", "cancelled"], []),
    (["accepted", "waiting", "queued", "dispatched", "running", "succeeded"], []),   # a task of a graph
    (["accepted", "waiting", "skipped"], []),
    (["accepted", "waiting", "dispatched"], ["event 2: 'dispatched' may not follow 'waiting'"]),
    (["queued", "dispatched"], ["starts with 'queued', not accepted"]),
    (["accepted", "queued", "succeeded"], ["event 2: 'succeeded' may not follow 'queued'"]),
    (["accepted", "queued", "dispatched", "running", "cancelled"],
     ["event 4: 'cancelled' may not follow 'running'"]),
    (["accepted", "queued", "dispatched", "succeeded", "running"],
     ["event 4: 'running' may not follow 'succeeded'"]),
])
def test_a_history_is_checked_pair_by_pair(states, errors):
    assert r.history_errors(states) == errors


def test_records_carry_the_enums_even_when_built_from_database_text():
    # The records take the database's text and convert it; their fields are annotated as the enums.
    event = r.Event("t", "running", NOW, "n1", 1)  # type: ignore[arg-type]
    assert event.state is TaskState.RUNNING
    row = r.TaskRow("t", 0, "ns", "send", 1, "claimed", NOW, 0, 1, b"", None, None, NOW, NOW)  # type: ignore[arg-type]
    assert row.status is r.Status.CLAIMED
    with pytest.raises(ValueError):
        r.Event("t", "exploded", NOW, "n1", 1)  # type: ignore[arg-type]


def test_the_lane_column_of_the_migration_is_records_lane_of():
    """The server derives `lane` from `status` (migrations/011_lanes.sql); the owner's
    queries name lanes through records.LANE_OF. The two must say the same."""
    import pathlib
    import re
    sql = (pathlib.Path(r.__file__).with_name("migrations") / "011_lanes.sql").read_text()
    case = re.search(r"CASE status (.*?) ELSE (\d) END", sql, re.S)
    assert case is not None
    named = {r.Status(status): r.Lane(int(lane)) for status, lane in re.findall(r"WHEN '(\w+)' THEN (\d)", case[1])}
    otherwise = r.Lane(int(case[2]))
    assert {s: named.get(s, otherwise) for s in r.Status} == r.LANE_OF
    # Terminal rows leave the lanes the owner reads; every live status is in one of them,
    # but for a task of a graph that waits for its parents: found through graph_nodes.
    assert {s for s, lane in r.LANE_OF.items() if lane == r.Lane.DONE} == r.TERMINAL | {r.WAITING}
