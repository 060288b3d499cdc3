"""The store conformance suite (every area) against the in-memory twins; and a check that
the protocols, the MariaDB stores and the twins have not drifted apart."""
from __future__ import annotations

import inspect

import pytest

from dispatcher.store.audit import AuditStore
from dispatcher.store.bulk_replays import BulkReplayStore
from dispatcher.store.cron import CronStore
from dispatcher.store.dead_letters import DeadLetterStore
from dispatcher.store.interface import TaskStoreProtocol
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
from dispatcher.store.task_stats import TaskStatsStore
from tests.conformance import StoreConformance
from tests.conformance.backends import memory_backend

PROTOCOL_METHODS = sorted(name for name, _ in inspect.getmembers(TaskStoreProtocol, inspect.isfunction)
                          if not name.startswith("_"))


class TestMemoryStores(StoreConformance):
    @pytest.fixture
    def backend(self):
        store = MemoryTaskStore()
        store.start()
        yield memory_backend(store)
        store.stop()


def _parameters(fn) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("implementation", [TaskStore, MemoryTaskStore], ids=lambda c: c.__name__)
def test_implementations_have_the_protocols_methods_and_parameters(implementation):
    assert len(PROTOCOL_METHODS) == 30
    _keeps(implementation, TaskStoreProtocol, PROTOCOL_METHODS)


def _keeps(implementation, protocol, methods: list[str]) -> None:
    for name in methods:
        assert hasattr(implementation, name), f"{implementation.__name__} lacks {name}"
        assert _parameters(getattr(implementation, name)) == _parameters(getattr(protocol, name)), name


@pytest.mark.parametrize(("protocol", "implementations"), [
    (CronStoreProtocol, (CronStore, MemoryCronStore)),
    (DeadLetterStoreProtocol, (DeadLetterStore, MemoryDeadLetterStore)),
    (SearchProtocol, (SearchStore, MemorySearch)),
    (AuditProtocol, (AuditStore, MemoryAuditStore)),
    (ReplayStoreProtocol, (BulkReplayStore, MemoryReplayStore)),
    (TaskStatsProtocol, (TaskStatsStore, MemoryTaskStats)),
    (PolicyStoreProtocol, (PolicyStore, MemoryPolicyStore)),
], ids=lambda x: getattr(x, "__name__", ""))
def test_the_stores_beside_the_tasks_have_their_protocols_methods_and_parameters(protocol, implementations):
    methods = sorted(name for name, _ in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_"))
    assert methods
    for implementation in implementations:
        _keeps(implementation, protocol, methods)
