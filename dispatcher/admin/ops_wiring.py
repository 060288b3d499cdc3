"""The operations side of a node, built from its task store in one place: the stores of
dead letters, bulk replays, search and the audit trail over the store's shards, the
services above them, the bulk replay runner, and the admin routes that serve them."""
from __future__ import annotations

from collections.abc import Callable

from dispatcher.admin import routes as rt
from dispatcher.admin.ops_routes import OpsRoutes
from dispatcher.api.validation import Limits
from dispatcher.base.clock import Clock
from dispatcher.base.loop_task import LoopWatch
from dispatcher.engine.task_stats import TaskStats
from dispatcher.ops.bulk_replay import BulkReplayRunner, BulkReplays
from dispatcher.ops.dead_letters import DeadLetterOps
from dispatcher.store.audit import AuditStore
from dispatcher.store.bulk_replays import BulkReplayStore
from dispatcher.store.dead_letters import DeadLetterStore
from dispatcher.store.interface_dead_letters import Replayed
from dispatcher.store.mysql import TaskStore
from dispatcher.store.search import SearchStore
from dispatcher.store.sharded import ShardedTaskStore
from dispatcher.store.shards import shards_of


class Operations:
    def __init__(self, *, store: TaskStore | ShardedTaskStore, limits: Limits, node: str, clock: Clock,
                 stats: TaskStats, loops: LoopWatch | None = None,
                 on_replayed: Callable[[Replayed], None] | None = None):
        shards = shards_of(store)
        self.audit = AuditStore(shards)
        self.dead_letter_store = DeadLetterStore(shards)
        self.dead_letters = DeadLetterOps(dead_letters=self.dead_letter_store, tasks=store, limits=limits,
                                          node=node, clock=clock, on_replayed=on_replayed)
        jobs = BulkReplayStore(shards)
        self.bulk_replays = BulkReplays(jobs=jobs, dead_letters=self.dead_letter_store, clock=clock,
                                        max_retries=limits.max_retries_limit)
        self.runner = BulkReplayRunner(jobs=jobs, dead_letters=self.dead_letter_store, ops=self.dead_letters,
                                       node=node, clock=clock, loops=loops)
        self.search = SearchStore(shards)
        self._routes = OpsRoutes(tasks=store, dead_letters=self.dead_letter_store, ops=self.dead_letters,
                                 bulk=self.bulk_replays, search=self.search, audit=self.audit, clock=clock,
                                 stats=stats)

    def set_limits(self, limits: Limits) -> None:
        """New limits (the policies changed): dead-letter edits check payloads and retries by them."""
        self.dead_letters.set_limits(limits)

    def routes(self) -> list[rt.Route]:
        return self._routes.routes()

    def start(self) -> None:
        self.runner.start()

    async def stop(self) -> None:
        await self.runner.stop()
