"""The contract of the graph store (store/graphs.py): the records a graph is written and read
as, and what each call promises. Tables: migrations/016_graphs.sql."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Container, Sequence
from typing import Protocol

from dispatcher.store import records as r
from dispatcher.store.graph_rules import JoinRule, OnFailure
from dispatcher.store.interface_audit import AuditRecord


@dataclasses.dataclass(frozen=True, slots=True)
class NewEdge:
    parent_id: str
    parent_key: str
    on_failure: OnFailure


@dataclasses.dataclass(frozen=True, slots=True)
class NewNode:
    """One task of a graph: its row (status WAITING) and its graph side."""

    task: r.NewTask
    key: str
    seq: int
    join_rule: JoinRule
    join_k: int
    delay_ms: int
    """The task's own delay, counted from its release."""
    parents: tuple[NewEdge, ...]
    has_dependents: bool


@dataclasses.dataclass(frozen=True, slots=True)
class NewGraph:
    namespace: str
    graph_id: str
    home_slot: int
    digest: str
    """sha256 (hex) of the request: the same id with other tasks is refused."""
    nodes: tuple[NewNode, ...]
    created_at: dt.datetime


@dataclasses.dataclass(frozen=True, slots=True)
class Released:
    """A task that left `waiting` for one of the two paths: the caller produces the
    Kafka message of one released `enqueued` (its row is swept to MySQL if none comes)."""

    task_id: str
    slot: int
    priority: int
    status: r.Status
    """ENQUEUED or PENDING."""
    trigger_at: dt.datetime
    envelope: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class AddedTasks:
    """What AddGraphTasks wrote: the tasks new in the graph, and those an earlier call had added."""

    added: int
    existed: int


@dataclasses.dataclass(frozen=True, slots=True)
class Note:
    """An outbox row: a parent that ended (kind "task", ref its task id) or a graph whose
    rows are all committed (kind "graph", ref "namespace/graph_id")."""

    id: int
    slot: int
    kind: str
    ref: str


@dataclasses.dataclass(frozen=True, slots=True)
class Settled:
    """What one apply did: the tasks released, and how many were skipped or cancelled by
    their parents (each of those with dependents left a note of its own)."""

    released: tuple[Released, ...] = ()
    skipped: int = 0
    cancelled: int = 0
    ended: tuple[tuple[int, str], ...] = ()
    """(slot, task_id) of the skipped and cancelled tasks that have dependents: each left a
    note, to be applied in turn."""
    reopened: tuple[tuple[int, str], ...] = ()
    """(slot, task_id) of the tasks re-opened (skipped -> waiting) that have dependents: each
    left a "reopen" note, to be applied in turn."""


@dataclasses.dataclass(frozen=True, slots=True)
class ParentEnd:
    """How one parent of a task ended, with its result: what the task's handler is given."""

    key: str
    task_id: str
    outcome: str
    """The edge's outcome (succeeded, failed, ignored, skipped, cancelled)."""
    result_json: str | None
    error: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class GraphCheck:
    """What the home owner's watch found of one open graph."""

    namespace: str
    graph_id: str
    finished: bool
    """Every task has ended."""
    stuck: bool
    """Tasks wait, none runs, none is due, and none changed for the threshold."""
    lost: tuple[str, ...]
    """Ended parents still unresolved on the edges of waiting tasks: releases a crash lost
    (applied again by the watch; none but after a defect)."""


@dataclasses.dataclass(frozen=True, slots=True)
class OpenGraphs:
    """A home owner's open graphs by namespace, for its gauges."""

    open: dict[str, int]
    stuck: dict[str, int]
    oldest_note_s: float
    """The age of the oldest note of its slots (0 when none)."""


@dataclasses.dataclass(frozen=True, slots=True)
class EdgeView:
    parent_key: str
    parent_id: str
    on_failure: OnFailure
    outcome: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class NodeView:
    key: str
    task_id: str
    seq: int
    slot: int
    status: r.Status
    attempts: int
    trigger_at: dt.datetime
    join_rule: JoinRule
    join_k: int
    edges: tuple[EdgeView, ...]
    reason: str | None
    last_error: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class GraphView:
    namespace: str
    graph_id: str
    complete: bool
    created_at: dt.datetime
    nodes: tuple[NodeView, ...]


class GraphStoreProtocol(Protocol):
    def insert_graph(self, graph: NewGraph, node: str, now: dt.datetime) -> bool:
        """Write the graph's rows, every task `waiting`, and mark it complete once every
        shard's rows are committed (with a "graph" note). True when written now; False when
        the graph existed whole with the same digest (nothing written). A graph left
        incomplete by an earlier call is completed. Raises GraphExists for another digest."""

    def add_tasks(self, namespace: str, graph_id: str, adder: tuple[str, int, int], nodes: Sequence[NewNode],
                  targets: Sequence[tuple[int, str, str, int]], node: str) -> AddedTasks:
        """Tasks added by a running task of the graph (`adder`: task id, slot, attempt), each
        waiting for it, and the also_before `targets` ((index, key, task id, slot), each still
        waiting) made to wait for them too (store/graph_adds.py). Idempotent by the tasks' ids.
        AdderNotRunning, NotWaiting (naming also_before[i]) or GraphCancelled otherwise."""
        ...

    def release_roots(self, namespace: str, graph_id: str, node: str, now: dt.datetime) -> Settled:
        """Release the complete graph's tasks without parents that still wait (none while
        the graph is incomplete). Repeating it releases nothing twice."""

    def apply_ends(self, parent_ids: list[str], node: str, now: dt.datetime) -> Settled:
        """Count each ended parent (by its row's status) on its dependents' unresolved edges,
        and release, skip or cancel the dependents whose join rule decides. Each edge is
        counted once however often this is called; a parent not ended counts nothing."""

    def cancel_graph(self, namespace: str, graph_id: str, mode: str, heartbeat_types: Container[tuple[str, str]],
                     reason: str, node: str, now: dt.datetime) -> tuple[int, list[str]]:
        """Cancel every task of the graph that has not ended (`mode` graceful|immediate); (how
        many were cancelled, the keys of the running ones left to finish, never retried)."""

    def apply_reopened(self, parent_ids: list[str], why: str, node: str, now: dt.datetime) -> Settled:
        """The ends of these tasks changed other than by a first end (an operator's skip, a
        replay): their dependents' edges count what they are now, a dependent its rule skipped
        that can be met again goes back to waiting, and is released if due."""

    def skip_task(self, task_id: str, reason: str, record: Callable[[str], AuditRecord], node: str,
                  now: dt.datetime) -> tuple[int, str]:
        """An operator's skip of a dead-lettered or waiting task: (its slot, status before)."""

    def forget_ends(self, ended: list[tuple[int, str]], written_before: dt.datetime, kind: str = "task") -> None:
        """Delete the notes of `kind` of these applied ends ((slot, task_id)) written up to `written_before`."""

    def forget_graph(self, home_slot: int, namespace: str, graph_id: str) -> None:
        """Delete a graph's "graph" note once its roots were released."""

    def open_graphs(self, slots: list[int], limit: int) -> list[tuple[str, str]]:
        """Complete graphs of these home slots not finished, least recently checked first."""

    def check_graph(self, namespace: str, graph_id: str, stuck_after_ms: int, now: dt.datetime) -> GraphCheck:
        """Look at one graph and record what was found (finished_at, checked_at, stuck_since)."""

    def open_counts(self, slots: list[int], now: dt.datetime) -> OpenGraphs:
        """The open and stuck graphs of these home slots by namespace, and the oldest note's age."""

    def notes(self, slots: list[int], older_than: dt.datetime, limit: int) -> list[Note]:
        """The outbox rows of these slots written before `older_than`, oldest first."""

    def delete_notes(self, notes: list[Note]) -> None:
        """Forget applied notes."""

    def parent_ends(self, child_ids: list[str]) -> dict[str, list[ParentEnd]]:
        """For each task, how the parents it was released by ended, with their results, by key."""

    def waiting_for(self, task_id: str) -> str:
        """What a waiting task of a graph waits for, in words ("" for none)."""

    def results(self, task_ids: list[str]) -> dict[str, str]:
        """The kept results of these tasks (those that have one)."""

    def graph(self, namespace: str, graph_id: str) -> GraphView:
        """The graph with every task's state and edges; GraphNotFound when there is none."""
