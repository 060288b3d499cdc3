"""The shards of a task store, for the modules that keep their own tables beside the tasks
(cron rules, dead letters, the audit trail): a list to ask all, and the shard of a slot."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dispatcher.store.mysql import TaskStore
from dispatcher.store.sharded import ShardedTaskStore


@dataclasses.dataclass(frozen=True)
class Shards:
    all: list[TaskStore]
    of_slot: Callable[[int], TaskStore]

    @property
    def first(self) -> TaskStore:
        """Shard 0: where records about no task (a bulk replay job) live."""
        return self.all[0]


def shards_of(tasks: TaskStore | ShardedTaskStore) -> Shards:
    if isinstance(tasks, ShardedTaskStore):
        return Shards(list(tasks.shards), tasks.shard_of)
    return Shards([tasks], lambda slot: tasks)
