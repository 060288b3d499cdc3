"""Unique keys in MySQL: a batch's new tasks take their keys, in the insert's own transaction
(dispatcher/policy/unique.py says what a key means; migrations/006_unique_keys.sql is the table).
Used by TaskStore and, shard by shard, by ShardedTaskStore."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from dispatcher.store import records as r
from dispatcher.store.sql_literals import names, sql_time


def hold_keys(cur, keyed: Sequence[r.NewTask],
              status_of: Callable[[list[tuple[str, int]]], dict[str, r.Status]]) -> dict[str, r.Held]:
    """Take the unique keys of `keyed` (new tasks, in order) in the caller's transaction;
    returns {task_id: Held} for the tasks that must not be inserted.

    The first task of a batch with a key is its candidate, later ones are held by it.
    A candidate's row is inserted if the key is new; an existing row is locked, and
    taken over when its holder no longer holds it (records.key_holds), else the
    candidate is held. `status_of([(holder, slot), ...])` reads holders' statuses
    (on another shard, for a sharded store). Keys are locked in sorted order, so two
    batches with the same keys wait for each other instead of deadlocking.
    """
    now = keyed[0].created_at
    first: dict[tuple[str, str], r.NewTask] = {}
    for t in keyed:
        first.setdefault((t.namespace, t.unique_key), t)
    candidates = sorted(first.items())
    names(t.namespace for _, t in candidates)
    escape = cur.connection.escape
    inserted = cur.execute(
        "INSERT IGNORE INTO unique_keys (namespace, unique_key, task_id, slot, held_until, taken_at) VALUES "
        + ",".join(f"('{t.namespace}',{escape(t.unique_key)},'{t.task_id}',{int(t.slot)},"
                   f"{escape(t.unique_until)},'{sql_time(t.created_at)}')" for _, t in candidates))
    if inserted == len(candidates):
        return _held_in_batch(keyed, first, {})  # every key was free: all taken now
    by_namespace: dict[str, list[str]] = {}
    for ns, unique_key in first:
        by_namespace.setdefault(ns, []).append(unique_key)
    # One index range per namespace (a thousand OR'd pairs cost the server more than the insert).
    cur.execute("SELECT namespace, unique_key, task_id, slot, held_until FROM unique_keys WHERE "
                + " OR ".join(f"(namespace = '{ns}' AND unique_key IN ({','.join(escape(k) for k in keys)}))"
                              for ns, keys in sorted(by_namespace.items()))
                + " ORDER BY namespace, unique_key FOR UPDATE")
    others = {(ns, key): (holder, slot, until) for ns, key, holder, slot, until in cur.fetchall()
              if holder != first[(ns, key)].task_id}
    statuses = status_of([(holder, slot) for holder, slot, _ in others.values()]) if others else {}
    held: dict[str, r.Held] = {}
    takeovers = []
    for pair, (holder, holder_slot, until) in others.items():
        candidate = first[pair]
        if r.key_holds(until, statuses.get(holder), now):
            held[candidate.task_id] = r.Held(holder, statuses[holder], holder_slot)
        else:
            takeovers.append((candidate.task_id, candidate.slot, candidate.unique_until, candidate.created_at,
                              pair[0], pair[1], holder))
    if takeovers:
        cur.executemany("UPDATE unique_keys SET task_id = %s, slot = %s, held_until = %s, taken_at = %s"
                        " WHERE namespace = %s AND unique_key = %s AND task_id = %s", takeovers)
    return _held_in_batch(keyed, first, held)

def _held_in_batch(keyed: Sequence[r.NewTask], first: dict[tuple[str, str], r.NewTask],
                   held: dict[str, r.Held]) -> dict[str, r.Held]:
    """`held` with the later tasks of the batch that share a key with its first one:
    held by whatever holds that first one, else by it."""
    for t in keyed:
        candidate = first[(t.namespace, t.unique_key)]
        if candidate is not t:
            held[t.task_id] = held.get(candidate.task_id) or r.Held(candidate.task_id, candidate.status,
                                                                    candidate.slot)
    return held

