"""The backends every area runs on, built the same way by each runner: the in-memory twin,
and the MariaDB stores over a TaskStore or a ShardedTaskStore."""
from __future__ import annotations

from collections.abc import Callable

from dispatcher.store.audit import AuditStore
from dispatcher.store.bulk_replays import BulkReplayStore
from dispatcher.store.cron import CronStore
from dispatcher.store.dead_letters import DeadLetterStore
from dispatcher.store.interface_audit import AuditProtocol
from dispatcher.store.interface_cron import CronStoreProtocol
from dispatcher.store.interface_dead_letters import DeadLetterStoreProtocol
from dispatcher.store.interface_policies import PolicyStoreProtocol
from dispatcher.store.interface_replays import ReplayStoreProtocol
from dispatcher.store.interface_search import SearchProtocol
from dispatcher.store.interface_stats import TaskStatsProtocol
from dispatcher.store.memory import MemoryTaskStore
from dispatcher.store.memory_cron import MemoryCronStore
from dispatcher.store.memory_dead_letters import MemoryDeadLetterStore
from dispatcher.store.memory_ops import MemoryAuditStore, MemoryReplayStore, MemorySearch, MemoryTaskStats
from dispatcher.store.memory_policies import MemoryPolicyStore
from dispatcher.store.mysql import TaskStore
from dispatcher.store.policies import PolicyStore
from dispatcher.store.search import SearchStore
from dispatcher.store.sharded import ShardedTaskStore
from dispatcher.store.shards import shards_of
from dispatcher.store.task_stats import TaskStatsStore
from tests.conformance.world import DEAD_LETTER_COLUMNS, Backend


def memory_backend(store: MemoryTaskStore) -> Backend:
    """The twins, on a started MemoryTaskStore (typed by their protocols, so that mypy
    checks that each keeps its contract)."""
    cron: CronStoreProtocol = MemoryCronStore(store)
    dead_letter_store: DeadLetterStoreProtocol = MemoryDeadLetterStore(store)
    search: SearchProtocol = MemorySearch(store)
    audit: AuditProtocol = MemoryAuditStore(store)
    replays: ReplayStoreProtocol = MemoryReplayStore(store)
    stats: TaskStatsProtocol = MemoryTaskStats(store)
    policies: PolicyStoreProtocol = MemoryPolicyStore(store)
    return Backend(store=store,
                   dead_letters=lambda: {tid: {k: row[k] for k in DEAD_LETTER_COLUMNS}
                                         for tid, row in store.dead_letter_rows().items()},
                   cron=cron, dead_letter_store=dead_letter_store, search=search, audit=audit, replays=replays,
                   stats=stats, policies=policies)


def mysql_backend(store: TaskStore | ShardedTaskStore, query: Callable[[str], list[tuple]]) -> Backend:
    """The MariaDB stores on a started store; `query` runs a SELECT on every shard and
    returns all their rows."""
    shards = shards_of(store)

    def dead_letters() -> dict[str, dict]:
        rows = query(f"SELECT {', '.join(DEAD_LETTER_COLUMNS)} FROM dead_letters")
        return {row[0]: dict(zip(DEAD_LETTER_COLUMNS, row)) for row in rows}
    return Backend(store=store, dead_letters=dead_letters, cron=CronStore(store),
                   dead_letter_store=DeadLetterStore(shards), search=SearchStore(shards), audit=AuditStore(shards),
                   replays=BulkReplayStore(shards), stats=TaskStatsStore(shards),
                   policies=PolicyStore(shards))
