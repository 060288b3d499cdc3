"""The operations side of a node in one place: over the stores of dead letters, bulk
replays, search and the audit trail (MariaDB's or their twins, dispatcher/parts.py), the
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
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_audit import AuditProtocol
from dispatcher.store.interface_dead_letters import DeadLetterStoreProtocol, Replayed
from dispatcher.store.interface_replays import ReplayStoreProtocol
from dispatcher.store.interface_search import SearchProtocol


class Operations:
    def __init__(self, *, tasks: TaskStoreProtocol, audit: AuditProtocol, dead_letters: DeadLetterStoreProtocol,
                 replays: ReplayStoreProtocol, search: SearchProtocol, limits: Limits, node: str, clock: Clock,
                 stats: TaskStats, loops: LoopWatch | None = None,
                 on_replayed: Callable[[Replayed], None] | None = None):
        self.audit = audit
        self.dead_letter_store = dead_letters
        self.dead_letters = DeadLetterOps(dead_letters=dead_letters, tasks=tasks, limits=limits,
                                          node=node, clock=clock, on_replayed=on_replayed)
        self.bulk_replays = BulkReplays(jobs=replays, dead_letters=dead_letters, clock=clock,
                                        max_retries=limits.max_retries_limit)
        self.runner = BulkReplayRunner(jobs=replays, dead_letters=dead_letters, ops=self.dead_letters,
                                       node=node, clock=clock, loops=loops)
        self.search = search
        self._routes = OpsRoutes(tasks=tasks, dead_letters=dead_letters, ops=self.dead_letters,
                                 bulk=self.bulk_replays, search=search, audit=audit, clock=clock,
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
