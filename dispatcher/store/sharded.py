"""The task store split over several MariaDB servers by slot.

Every slot lives on exactly one shard (config.NodeConfig.shard_of_slot): its task
rows, its ownership record (the epoch that fences its writes), its Kafka offsets and
its task types. Everything an owner does is about its slots, so each fenced write goes
to one shard and keeps TaskStore's guarantees as they are: the epoch check and the
write it guards stay in one transaction on one server. A write that spans slots of
several shards (one batch of outcomes, one dispatch batch) becomes one transaction per
shard; each is fenced by its own slots' epochs, which is all the contract asks.

Two calls do not know their slot and ask every shard: get_task and cancel by task id
(a task lives on one shard; the first that has it answers), and reroute_to_mysql.

insert_tasks is the one write whose atomicity spans shards: a SubmitBatch of many task
types touches many slots. Each shard's insert runs in a transaction left open until
every shard's insert has succeeded; only then are they committed, one after another.
A failure before the first commit rolls every shard back (nothing was written). A
commit that fails after another shard's commit succeeded is the one window left (the
server lost between the two commits): the committed shards' new rows are withdrawn
while no executor has been handed them, and the caller gets Unavailable; a submit
retried with the same task ids is idempotent either way. This is the price of not
running two-phase commit (XA) on the hot path, whose prepared transactions would hold
their row locks across a node crash until an operator resolved them.

The cluster's one clock (clock_sync) is shard 0's. Moving slots between shards is not
supported: every shard records the map it belongs to (ShardIdentity), and a node
started with another map is refused at start instead of looking for rows where they
are not.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import zlib
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import TypeVar

import pymysql

from dispatcher.base.config import MySQLConfig, NodeConfig, format_slot_shards
from dispatcher.base.errors import TaskNotFound, Unavailable
from dispatcher.store import records as r
from dispatcher.store.mysql import TaskStore
from dispatcher.store.unique_keys import hold_keys

T = TypeVar("T")


class ShardedTaskStore:
    """TaskStoreProtocol over one TaskStore per shard, routing every call by slot."""

    def __init__(self, shards: Sequence[MySQLConfig], shard_of_slot: Sequence[int], node: str = ""):
        if not shards:
            raise ValueError("ShardedTaskStore needs at least one shard")
        if any(not 0 <= s < len(shards) for s in shard_of_slot):
            raise ValueError(f"shard_of_slot names a shard outside 0..{len(shards) - 1}")
        self._shard_of_slot = tuple(shard_of_slot)
        slot_map = format_slot_shards(self._shard_of_slot)
        self.shards = [TaskStore(config, r.ShardIdentity(i, len(shards), slot_map), node)
                       for i, config in enumerate(shards)]

    # ---- routing ----

    def shard_of(self, slot: int) -> TaskStore:
        """The shard that holds `slot`. A slot beyond the map is a caller's bug."""
        try:
            return self.shards[self._shard_of_slot[slot]]
        except IndexError:
            raise ValueError(f"slot {slot} is not in the store's slot map (0..{len(self._shard_of_slot) - 1})"
                             ) from None

    def _slots_of(self, index: int) -> list[int]:
        return [slot for slot, shard in enumerate(self._shard_of_slot) if shard == index]

    def _by_shard(self, items: Iterable[T], slot: Callable[[T], int]) -> dict[int, list[T]]:
        groups: dict[int, list[T]] = {}
        for item in items:
            groups.setdefault(self._shard_of_slot[slot(item)], []).append(item)
        return groups

    # ---- lifecycle ----

    def start(self) -> None:
        for shard in self.shards:
            shard.start()

    def stop(self) -> None:
        for shard in self.shards:
            shard.stop()

    # ---- slot ownership ----

    def ensure_slots(self, slot_count: int) -> None:
        for index, shard in enumerate(self.shards):
            shard.ensure_slot_records(s for s in self._slots_of(index) if s < slot_count)

    def claim_slot(self, slot: int, node: str, now: dt.datetime, lease_ms: int = 0) -> int:
        return self.shard_of(slot).claim_slot(slot, node, now, lease_ms)

    def renew_leases(self, node: str, epochs: dict[int, int], lease_ms: int, now: dt.datetime) -> dict[int, str]:
        """One statement per shard that holds any of the slots."""
        out: dict[int, str] = {}
        for index, slots in self._by_shard(epochs, lambda slot: slot).items():
            out.update(self.shards[index].renew_leases(node, {s: epochs[s] for s in slots}, lease_ms, now))
        return out

    def attempts_in_doubt(self, slot: int, epoch: int, now: dt.datetime) -> list[r.InDoubt]:
        return self.shard_of(slot).attempts_in_doubt(slot, epoch, now)

    def release_slot(self, slot: int, epoch: int, now: dt.datetime) -> bool:
        return self.shard_of(slot).release_slot(slot, epoch, now)

    def slot_owners(self) -> dict[int, tuple[int, str]]:
        out: dict[int, tuple[int, str]] = {}
        for index, shard in enumerate(self.shards):
            mine = set(self._slots_of(index))
            out.update((s, owner) for s, owner in shard.slot_owners().items() if s in mine)
        return out

    # ---- the API's writes ----

    def key_shard(self, namespace: str, unique_key: str) -> int:
        """The shard that holds a unique key's row: keys are namespace-wide, so they
        cannot follow one slot; a stable hash spreads them over the shards."""
        return zlib.crc32(f"{namespace}/{unique_key}".encode()) % len(self.shards)

    def insert_tasks(self, tasks: Sequence[r.NewTask], node: str) -> dict[str, r.Status | r.Held]:
        if not tasks:
            return {}
        involved = {self._shard_of_slot[t.slot] for t in tasks}
        keyed = {self.key_shard(t.namespace, t.unique_key) for t in tasks if t.unique_key}
        involved |= keyed
        # The one-shard path has no keys: a key's holder may live on any shard, which only
        # the cross-shard path reads.
        if len(involved) == 1 and not keyed:
            # A task id is one task across every shard: ids that exist on another shard (a
            # caller reusing an id for another task type) are answered as existing there.
            only = next(iter(involved))
            elsewhere: dict[str, r.Status | r.Held] = {}
            for i, shard in enumerate(self.shards):
                if i != only:
                    elsewhere.update(shard.run(lambda cur: TaskStore.standing(cur, tasks)))
            rest = [t for t in tasks if t.task_id not in elsewhere]
            return {**elsewhere, **(self.shards[only].insert_tasks(rest, node) if rest else {})}
        for attempt in range(5):
            try:
                return self._insert_across(tasks, involved, node)
            except Unavailable as exc:  # deadlock or lock wait on one shard: all rolled back, retry
                if "rolled back" not in str(exc) or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def take_key(self, task: r.NewTask) -> r.Held | None:
        k = self.key_shard(task.namespace, task.unique_key)
        return self.shards[k].run(lambda cur: hold_keys(
            cur, [task], lambda holders: self._statuses(holders, {k: cur})).get(task.task_id))

    def _insert_across(self, tasks: Sequence[r.NewTask], involved: set[int], node: str
                       ) -> dict[str, r.Status | r.Held]:
        existing: dict[str, r.Status | r.Held] = {}
        committed: list[int] = []
        with contextlib.ExitStack() as open_transactions:
            cursors = {i: open_transactions.enter_context(self.shards[i].transaction()) for i in sorted(involved)}
            for i, shard in enumerate(self.shards):  # an id is one task across every shard
                cur = cursors.get(i)
                existing.update(TaskStore.standing(cur, tasks) if cur is not None
                                else shard.run(lambda c: TaskStore.standing(c, tasks)))
            fresh = list({t.task_id: t for t in reversed(tasks) if t.task_id not in existing}.values())[::-1]
            keyed = [t for t in fresh if t.unique_key]
            by_key_shard: dict[int, list[r.NewTask]] = {}
            for t in keyed:
                by_key_shard.setdefault(self.key_shard(t.namespace, t.unique_key), []).append(t)

            def status_of(holders: list[tuple[str, int]]) -> dict[str, r.Status]:
                return self._statuses(holders, cursors)
            for k, group in sorted(by_key_shard.items()):
                existing.update(hold_keys(cursors[k], group, status_of))
            inserted = self._by_shard([t for t in fresh if t.task_id not in existing], lambda t: t.slot)
            # Every insert writes its shards in index order. Two batches that wrote them in
            # opposite orders could each wait on the other's row locks (slot_task_types) on
            # two servers, a deadlock neither server can see.
            for i, group in sorted(inserted.items()):
                TaskStore.insert_in(cursors[i], group, node)
            try:
                for i, cur in cursors.items():
                    cur.connection.commit()
                    committed.append(i)
            except pymysql.err.Error as exc:
                withdrawn = self._withdraw(committed, inserted)
                raise Unavailable(f"mysql: a cross-shard insert committed on shard(s) {committed} but not on"
                                  f" shard {i} ({exc}); {withdrawn}") from exc
        return existing

    def _statuses(self, holders: list[tuple[str, int]], cursors: Mapping[int, object]) -> dict[str, r.Status]:
        """Statuses of unique-key holders, each read on its slot's shard (inside this insert's
        open transaction there when it has one)."""
        out: dict[str, r.Status] = {}
        for index, group in self._by_shard(holders, lambda h: h[1]).items():
            ids = [task_id for task_id, _ in group]
            cur = cursors.get(index)
            out.update(TaskStore.statuses(cur, ids) if cur is not None
                       else self.shards[index].run(lambda c, ids=ids: TaskStore.statuses(c, ids)))
        return out

    def _withdraw(self, committed: list[int], inserted: dict[int, list[r.NewTask]]) -> str:
        """Undo the committed shards' part of a failed cross-shard insert; says what it did.
        A unique key taken for a withdrawn task is free again: its holder does not exist."""
        left: list[str] = []
        for i in committed:
            try:
                self.shards[i].withdraw_inserted([t.task_id for t in inserted.get(i, [])])
            except Unavailable:
                left.append(f"shard {i}")
        if left:
            return (f"tasks of {', '.join(left)} could not be withdrawn and may run: retry with the same task ids"
                    " (submit is idempotent by task_id)")
        return "the tasks committed on the other shards were withdrawn: nothing was accepted"

    def reroute_to_mysql(self, task_ids: Sequence[str], now: dt.datetime) -> int:
        return sum(shard.reroute_to_mysql(task_ids, now) for shard in self.shards)

    def get_task(self, task_id: str) -> tuple[r.TaskRow, list[r.Event]]:
        for shard in self.shards:
            with contextlib.suppress(TaskNotFound):
                return shard.get_task(task_id)
        raise TaskNotFound(task_id)

    def cancel(self, task_id: str, node: str, now: dt.datetime,
               heartbeat_types: Container[tuple[str, str]] = ()) -> None:
        for shard in self.shards:
            try:
                return shard.cancel(task_id, node, now, heartbeat_types)
            except TaskNotFound:
                continue
        raise TaskNotFound(task_id)

    def record_heartbeats(self, beats: Sequence[r.HeartbeatWrite], now: dt.datetime) -> list[r.HeartbeatResult]:
        by_shard: dict[int, list[int]] = {}
        for i, b in enumerate(beats):
            by_shard.setdefault(self._shard_of_slot[b.slot], []).append(i)
        results: list[r.HeartbeatResult] = [r.HeartbeatResult.LOST] * len(beats)
        for shard, indexes in by_shard.items():
            for i, result in zip(indexes, self.shards[shard].record_heartbeats([beats[i] for i in indexes], now),
                                 strict=True):
                results[i] = result
        return results

    def note_waiting(self, notes: Sequence[r.WaitNote]) -> None:
        for shard, of_shard in self._by_shard(notes, lambda n: n.slot).items():
            self.shards[shard].note_waiting(of_shard)

    def wait_note(self, task_id: str) -> tuple[int, str] | None:
        for shard in self.shards:
            found = shard.wait_note(task_id)
            if found is not None:
                return found
        return None

    def heartbeat_details(self, task_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for shard in self.shards:   # a task's shard is its slot's, which the id alone does not say
            found.update(shard.heartbeat_details(task_ids))
        return found

    # ---- the owner's writes (fenced; one transaction per shard) ----

    def claim_due(self, slot: int, epoch: int, until: dt.datetime, limit: int,
                  now: dt.datetime) -> tuple[bool, list[r.TaskRow]]:
        return self.shard_of(slot).claim_due(slot, epoch, until, limit, now)

    def sweep_enqueued(self, slot: int, epoch: int, older_than: dt.datetime, limit: int, now: dt.datetime) -> int:
        return self.shard_of(slot).sweep_enqueued(slot, epoch, older_than, limit, now)

    def begin_dispatch(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                       now: dt.datetime) -> tuple[set[str], set[int]]:
        dispatched: set[str] = set()
        stale: set[int] = set()
        for index, group in self._by_shard(claims, lambda c: c.slot).items():
            ids, stale_here = self.shards[index].begin_dispatch(group, _epochs_of(group, epochs), node, now)
            dispatched |= ids
            stale |= stale_here
        return dispatched, stale

    def record_outcomes(self, writes: Sequence[r.OutcomeWrite], epochs: dict[int, int],
                        now: dt.datetime) -> set[int]:
        stale: set[int] = set()
        for index, group in self._by_shard(writes, lambda w: w.slot).items():
            stale |= self.shards[index].record_outcomes(group, _epochs_of(group, epochs), now)
        return stale

    def return_undelivered(self, claims: Sequence[r.DispatchClaim], epochs: dict[int, int], node: str,
                           now: dt.datetime) -> set[int]:
        stale: set[int] = set()
        for index, group in self._by_shard(claims, lambda c: c.slot).items():
            stale |= self.shards[index].return_undelivered(group, _epochs_of(group, epochs), node, now)
        return stale

    def stranded(self, slot: int, epoch: int, dispatched_before: dt.datetime, claimed_before: dt.datetime,
                 limit: int) -> tuple[bool, list[r.TaskRow]]:
        return self.shard_of(slot).stranded(slot, epoch, dispatched_before, claimed_before, limit)

    def unclaim(self, task_ids: Sequence[str], slot: int, epoch: int, now: dt.datetime) -> bool:
        return self.shard_of(slot).unclaim(task_ids, slot, epoch, now)

    # ---- Kafka progress: partition = slot ----

    def load_offsets(self, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for index, group in self._by_shard(pairs, lambda p: p[1]).items():
            out.update(self.shards[index].load_offsets(group))
        return out

    def commit_offsets(self, commits: Sequence[tuple[str, int, int]], epochs: dict[int, int],
                       now: dt.datetime) -> set[int]:
        stale: set[int] = set()
        for index, group in self._by_shard(commits, lambda c: c[1]).items():
            stale |= self.shards[index].commit_offsets(group, {p: epochs[p] for _, p, _ in group}, now)
        return stale

    def server_time_ms(self) -> int:
        """Shard 0's clock: the cluster's one time, whichever shard a slot is on."""
        return self.shards[0].server_time_ms()

    # ---- observation ----

    def pending_by_slot(self, slots: Iterable[int] | None = None) -> dict[int, int]:
        out: dict[int, int] = {}
        if slots is None:
            for index, shard in enumerate(self.shards):
                mine = set(self._slots_of(index))
                out.update((s, n) for s, n in shard.pending_by_slot().items() if s in mine)
            return out
        for index, group in self._by_shard(slots, lambda s: s).items():
            out.update(self.shards[index].pending_by_slot(group))
        return out

    def task_types_by_slot(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for shard in self.shards:
            for slot, types in shard.task_types_by_slot().items():
                out[slot] = sorted(set(out.get(slot, [])) | set(types))
        return out

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for shard in self.shards:
            out.update(shard.committed_offsets())
        return out


def _epochs_of(group: Sequence[r.DispatchClaim] | Sequence[r.OutcomeWrite], epochs: dict[int, int]) -> dict[int, int]:
    """The caller's epochs for the slots of one shard's part of a call (the shard checks
    exactly those; a slot the caller gave no epoch for is its bug, as on one store)."""
    return {slot: epochs[slot] for slot in {item.slot for item in group}}


def store_of(config: NodeConfig) -> TaskStore | ShardedTaskStore:
    """The node's task store: one server, or one per shard. Either way each database
    checks at start that it is the shard this node's map says it is."""
    shard_of_slot = config.shard_of_slot
    if len(config.store_shards) == 1:
        return TaskStore(config.mysql, r.ShardIdentity(0, 1, format_slot_shards(shard_of_slot)), config.node_id)
    return ShardedTaskStore(config.store_shards, shard_of_slot, config.node_id)
