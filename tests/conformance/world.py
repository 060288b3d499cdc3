"""What every area of the store conformance suite shares: the backend a runner provides,
the fixed times and names, the starting states built through the task store's own public
methods (`given`), and the table-driven case runner (`run_case`).

Shape of a case: starting state, action, expected state. The starting state is a list of
`Row`s, each driven to its status through the store's public methods, so the suite needs
no back door into any backend. After the action the runner checks the result, the
(status, attempts) of the rows named in `then`, and that every other row, with its
history, is exactly as it was: "writes nothing" is checked on every case, not only where
it is named.

Times are fixed (T0 + seconds), ids lower case except where case is the point.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from dispatcher.store import records as r
from dispatcher.store.records import CANCELLED, CLAIMED, DEAD_LETTERED, DISPATCHED, ENQUEUED, PENDING, SUCCEEDED
from taskring.task import TaskState

T0 = dt.datetime(2030, 1, 1, 12, 0, 0)
SLOTS = (0, 1, 2, 3)   # claimed by NODE before every case: epoch 1 each
NODE = "n1"
GIVEN_NODE = "given"
BUILD_AT = T0 - dt.timedelta(minutes=10)   # when `given` did its work
TOPIC = "tasks.normal"


def T(seconds: float = 0) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# ---------------------------------------------------------------- the backend a runner provides

DEAD_LETTER_COLUMNS = ("task_id", "slot", "namespace", "task_type", "envelope", "attempts", "last_error",
                       "last_stack_trace", "first_attempt_at", "dead_lettered_at")
"""The columns of the dead letters table that Backend.dead_letters reads."""


@dataclasses.dataclass
class Backend:
    store: Any
    """A fresh store (TaskStoreProtocol), started, with nothing in it."""
    dead_letters: Callable[[], dict[str, dict]]
    """The dead letters table as {task_id: {column: value}} (DEAD_LETTER_COLUMNS), read
    behind the stores' backs: the entry record_outcomes writes, envelope included, which
    no read of the contract returns whole."""
    cron: Any = None
    """CronStoreProtocol on `store`'s tables."""
    dead_letter_store: Any = None
    """DeadLetterStoreProtocol on `store`'s tables."""
    search: Any = None
    """SearchProtocol on `store`'s tables."""
    audit: Any = None
    """AuditProtocol on `store`'s tables."""
    replays: Any = None
    """ReplayStoreProtocol on `store`'s tables."""
    stats: Any = None
    """TaskStatsProtocol on `store`'s tables."""
    policies: Any = None
    """PolicyStoreProtocol on `store`'s tables."""


class Area:
    """The base of every area's suite: a runner overrides `backend`."""

    @pytest.fixture
    def backend(self) -> Backend:
        raise NotImplementedError("a runner overrides the backend fixture")


# ---------------------------------------------------------------- starting states

@dataclasses.dataclass(frozen=True)
class Row:
    """One task of a starting state."""

    task_id: str
    status: r.Status
    slot: int = 0
    due_s: float = 0
    """trigger_at = T(due_s)."""
    attempts: int | None = None
    """Attempts made so far; default 0, or 1 for dispatched and the terminal
    outcomes of an attempt (succeeded, dead_lettered)."""
    task_type: str = "send"
    namespace: str = "ns"
    unique_key: str = ""
    unique_ttl_s: float | None = None
    """The key is held until T(unique_ttl_s); None: while the task is live."""

    @property
    def made(self) -> int:
        if self.attempts is not None:
            return self.attempts
        return 1 if self.status in (DISPATCHED, SUCCEEDED, DEAD_LETTERED) else 0


def new_task(task_id: str, *, slot: int = 0, status: r.Status = PENDING, due_s: float = 0, namespace: str = "ns",
             task_type: str = "send", envelope: bytes | None = None, created_at: dt.datetime = BUILD_AT,
             priority: int = 2, unique_key: str = "", unique_ttl_s: float | None = None) -> r.NewTask:
    return r.NewTask(task_id=task_id, slot=slot, namespace=namespace, task_type=task_type, priority=priority,
                     status=status, trigger_at=T(due_s), envelope=envelope or f"envelope of {task_id}".encode(),
                     created_at=created_at, unique_key=unique_key,
                     unique_until=None if unique_ttl_s is None else T(unique_ttl_s))


def outcome(task_id: str, attempt: int, result: str, *, slot: int = 0, retry_status: r.Status | None = None,
            retry_at: dt.datetime | None = None, error: str | None = None, at: dt.datetime = T0,
            node: str = NODE) -> r.OutcomeWrite:
    """An OutcomeWrite with the events the engine writes for it."""
    states: list[tuple[TaskState, str | None]]
    if result == SUCCEEDED:
        states = [(TaskState.RUNNING, None), (TaskState.SUCCEEDED, None)]
    elif result == r.RETRY:
        states = [(TaskState.RUNNING, None), (TaskState.RETRY_WAIT, f"{error}; retry later")]
    else:
        states = [(TaskState.RUNNING, None), (TaskState.FAILED, error), (TaskState.DEAD_LETTERED, "gave up")]
    events = tuple(r.Event(task_id, s, at, node, attempt, d) for s, d in states)
    if result != SUCCEEDED:
        error = error or "boom"
    return r.OutcomeWrite(task_id=task_id, slot=slot, attempt=attempt, result=result, events=events,
                          retry_status=retry_status, retry_at=retry_at, error=error,
                          stack_trace=None if error is None else f"Traceback: {error}")


def kafka_claim(task_id: str, attempt: int, *, slot: int = 0, due_s: float = 0) -> r.DispatchClaim:
    return r.DispatchClaim(task_id, slot, attempt, "kafka", T(due_s))


def mysql_claim(task_id: str, attempt: int, *, slot: int = 0, due_s: float = 0) -> r.DispatchClaim:
    return r.DispatchClaim(task_id, slot, attempt, "mysql", T(due_s))


def given(store, rows: tuple[Row, ...]) -> dict[int, int]:
    """Claim SLOTS for NODE, then drive each row to its status and attempts through
    the public methods only; returns {slot: epoch}.

    Rows that must end claimed are built first, each slot's pending rows being
    then exactly those, so one claim_due per slot takes them all; every other
    row is moved by per-task calls (the Kafka path of begin_dispatch, retries,
    outcomes, cancel), which never touch a neighbour.
    """
    epochs = {s: store.claim_slot(s, NODE, BUILD_AT) for s in SLOTS}
    at = BUILD_AT

    def cycle(row: Row, final: r.Status) -> None:
        """Insert the row and make `row.made` attempts, leaving it in `final`."""
        n = row.made
        first = final if n == 0 and final in (PENDING, ENQUEUED) else ENQUEUED
        store.insert_tasks([new_task(row.task_id, slot=row.slot, status=first, due_s=row.due_s,
                                     namespace=row.namespace, task_type=row.task_type, unique_key=row.unique_key,
                                     unique_ttl_s=row.unique_ttl_s)], GIVEN_NODE)
        for attempt in range(1, n + 1):
            done, _ = store.begin_dispatch([kafka_claim(row.task_id, attempt, slot=row.slot, due_s=row.due_s)],
                                           epochs, GIVEN_NODE, at)
            assert done == {row.task_id}, f"given: {row} could not be dispatched at attempt {attempt}"
            last = attempt == n
            if last and final == DISPATCHED:
                return
            if last and final in (SUCCEEDED, DEAD_LETTERED):
                write = outcome(row.task_id, attempt, final, slot=row.slot, at=at, node=GIVEN_NODE)
            else:
                back = final if last and final in (PENDING, ENQUEUED) else ENQUEUED
                write = outcome(row.task_id, attempt, "retry", slot=row.slot, retry_status=back,
                                retry_at=T(row.due_s), error=f"attempt {attempt} failed", at=at, node=GIVEN_NODE)
            assert not store.record_outcomes([write], epochs, at)
        if final == CANCELLED:
            store.cancel(row.task_id, GIVEN_NODE, at)

    claimed = [row for row in rows if row.status == CLAIMED]
    for row in claimed:
        cycle(row, PENDING)
    for slot in sorted({row.slot for row in claimed}):
        mine = [row for row in claimed if row.slot == slot]
        ok, got = store.claim_due(slot, epochs[slot], max(T(row.due_s) for row in mine), len(mine), at)
        assert ok and {g.task_id for g in got} == {row.task_id for row in mine}, "given: claim_due"
    for row in rows:
        if row.status != CLAIMED:
            cycle(row, PENDING if row.status == PENDING else row.status)
    for row in rows:
        got, _ = store.get_task(row.task_id)
        assert (got.status, got.attempts) == (row.status, row.made), f"given: built {got}, wanted {row}"
    return epochs


# ---------------------------------------------------------------- cases

@dataclasses.dataclass
class World:
    """What an action sees: the store, the epochs `given` claimed, the backend."""

    store: Any
    epochs: dict[int, int]
    backend: Backend

    def row(self, task_id: str) -> r.TaskRow:
        return self.store.get_task(task_id)[0]

    def history(self, task_id: str) -> list[r.Event]:
        return self.store.get_task(task_id)[1]

    def states(self, task_id: str) -> list[str]:
        return [e.state for e in self.history(task_id)]


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    given: tuple[Row, ...]
    when: Callable[[World], Any]
    then: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)
    """(status, attempts) after the action; rows not named must be unchanged, history included."""
    returns: Any = ...
    """The action's result (... : not checked)."""
    raises: tuple[type[BaseException], str] | None = None
    """(error type, a text its message contains); then nothing at all may change."""
    check: Callable[[World, Any], None] | None = None
    """Further assertions, given the world and the action's result."""


def cases(*items: Case):
    return pytest.mark.parametrize("case", items, ids=[c.name for c in items])


def case_test(*items: Case) -> Callable:
    """A test method running each case of a table: `test_cancel = case_test(*CANCEL)`."""
    @cases(*items)
    def test(self, backend: Backend, case: Case) -> None:
        run_case(backend, case)
    return test


def run_case(backend: Backend, case: Case) -> None:
    store = backend.store
    # Given
    epochs = given(store, case.given)
    world = World(store, epochs, backend)
    before = {row.task_id: store.get_task(row.task_id) for row in case.given}
    owners, offsets = store.slot_owners(), store.committed_offsets()
    # When
    if case.raises is not None:
        kind, text = case.raises
        with pytest.raises(kind) as info:
            case.when(world)
        assert text in str(info.value)
        result = None
    else:
        result = case.when(world)
    # Then
    if case.returns is not ...:
        assert result == case.returns
    for task_id, expected in case.then.items():
        row = world.row(task_id)
        assert (row.status, row.attempts) == expected, f"{task_id}: {row}"
    for task_id, (row, events) in before.items():
        if task_id not in case.then:
            assert store.get_task(task_id) == (row, events), f"{task_id} changed though the case names it not"
    if case.raises is not None:
        assert store.slot_owners() == owners and store.committed_offsets() == offsets
    # Whatever the action did, it did by the tables of the lifecycle (records.py).
    for task_id, (row, _events) in before.items():
        after, history = store.get_task(task_id)
        assert after.status == row.status or after.status in r.STATUS_TRANSITIONS[row.status], \
            f"{task_id}: {row.status} -> {after.status} is not in STATUS_TRANSITIONS"
        assert r.history_errors([e.state for e in history]) == [], f"{task_id}: {history}"
        assert all(type(e.attempt) is int for e in history), f"{task_id}: attempts not int: {history}"
    if case.check is not None:
        case.check(world, result)


def equal(actual, expected) -> None:
    """For `check` lambdas, which cannot hold an assert statement."""
    assert actual == expected


def changed_updated_at(world: World, task_id: str, at: dt.datetime) -> None:
    assert world.row(task_id).updated_at == at


def dead_letter(store, epochs: dict[int, int], task_id: str, *, error: str, at: dt.datetime, slot: int = 0,
                namespace: str = "ns", task_type: str = "send", envelope: bytes | None = None) -> None:
    """A task dead-lettered at its first attempt at `at` with `error`, through the task
    store's public methods (the entry is record_outcomes')."""
    store.insert_tasks([new_task(task_id, slot=slot, status=ENQUEUED, namespace=namespace, task_type=task_type,
                                 envelope=envelope)], GIVEN_NODE)
    done, _ = store.begin_dispatch([kafka_claim(task_id, 1, slot=slot)], epochs, GIVEN_NODE, at)
    assert done == {task_id}, f"dead_letter: {task_id} could not be dispatched"
    assert not store.record_outcomes([outcome(task_id, 1, DEAD_LETTERED, slot=slot, error=error, at=at,
                                              node=GIVEN_NODE)], epochs, at)


def refused(backend: Backend, kind: type[BaseException], action: Callable[[], Any], *task_ids: str) -> str:
    """`action` raises `kind`, and the tasks named, the dead letters, the cron rules and the
    audit trail are as they were; returns the error's message."""
    def read() -> tuple:
        return ([backend.store.get_task(t) for t in task_ids], backend.dead_letters(), backend.cron.all(),
                backend.audit.records(limit=1000))
    before = read()
    with pytest.raises(kind) as info:
        action()
    assert read() == before, f"{info.value!r} wrote something"
    return str(info.value)
