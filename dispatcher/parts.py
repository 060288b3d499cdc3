"""What a node is built on, chosen in one place: its stores, its log and its membership.

A production node takes MariaDB (one server or one per shard), Kafka and ZooKeeper
(`production_parts`); `taskring dev` takes the in-memory twins of all three
(`memory_parts`), which pass the same conformance suites. The node above them
(dispatcher/node.py) is the same code either way: the choice is made here and nowhere
else, so nothing in the engine, the API or the console asks which world it is in.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from dispatcher.base.config import KafkaConfig, NodeConfig
from dispatcher.log.intake import KafkaIntake
from dispatcher.log.interface import InMessage, LogIntake, LogProducer
from dispatcher.log.kafka import PartitionReader, TaskProducer
from dispatcher.log.memory import MemoryLog, MemoryProducer, MemoryReader
from dispatcher.store.audit import AuditStore
from dispatcher.store.bulk_replays import BulkReplayStore
from dispatcher.store.cron import CronStore
from dispatcher.store.dead_letters import DeadLetterStore
from dispatcher.store.graphs import GraphStore
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_audit import AuditProtocol
from dispatcher.store.interface_cron import CronStoreProtocol
from dispatcher.store.interface_dead_letters import DeadLetterStoreProtocol
from dispatcher.store.interface_graphs import GraphStoreProtocol
from dispatcher.store.interface_policies import PolicyStoreProtocol
from dispatcher.store.interface_replays import ReplayStoreProtocol
from dispatcher.store.interface_search import SearchProtocol
from dispatcher.store.interface_stats import TaskStatsProtocol
from dispatcher.store.memory import MemoryTaskStore
from dispatcher.store.memory_cron import MemoryCronStore
from dispatcher.store.memory_dead_letters import MemoryDeadLetterStore
from dispatcher.store.memory_ops import MemoryAuditStore, MemoryReplayStore, MemorySearch, MemoryTaskStats
from dispatcher.store.memory_policies import MemoryPolicyStore
from dispatcher.store.policies import PolicyStore
from dispatcher.store.search import SearchStore
from dispatcher.store.sharded import store_of
from dispatcher.store.shards import shards_of
from dispatcher.store.task_stats import TaskStatsStore
from membership.executors import ExecutorDirectory
from membership.interface import ExecutorDirectoryProtocol
from membership.memory import MemoryExecutorDirectory, MemorySession
from membership.session import ZkSession

IntakeFactory = Callable[[Callable[[list[InMessage]], None], Callable[[], frozenset[str]]], LogIntake]
"""(deliver, closed_topics) -> the intake of the engine's partitions."""


@dataclasses.dataclass(frozen=True)
class StoreParts:
    """The task store and the stores kept beside it (in MariaDB: tables of the same shards,
    written in the tasks' transactions where they must be)."""

    tasks: TaskStoreProtocol
    cron: CronStoreProtocol
    policies: PolicyStoreProtocol
    stats: TaskStatsProtocol
    audit: AuditProtocol
    dead_letters: DeadLetterStoreProtocol
    replays: ReplayStoreProtocol
    search: SearchProtocol
    graphs: GraphStoreProtocol | None
    """None: this store keeps no graphs (the in-memory one); GraphService says so."""
    server_time_ms: Callable[[], int] | None
    """The cluster's one time (dispatcher/base/clock_sync.py), or None: one node's own clock."""


@dataclasses.dataclass(frozen=True)
class LogParts:
    producer: LogProducer
    intake_factory: IntakeFactory
    high_watermarks: Callable[[], dict[tuple[str, int], int]]
    """Each (topic, partition)'s next offset, for the ring's lag figures."""
    close: Callable[[], None]


@dataclasses.dataclass(frozen=True)
class MembershipParts:
    session: ZkSession | MemorySession
    executors: ExecutorDirectoryProtocol


@dataclasses.dataclass(frozen=True)
class NodeParts:
    store: StoreParts
    log: LogParts
    membership: MembershipParts


def production_parts(config: NodeConfig) -> NodeParts:
    """MariaDB, Kafka and ZooKeeper, as the config names them."""
    tasks = store_of(config)
    shards = shards_of(tasks)
    store = StoreParts(tasks=tasks, cron=CronStore(tasks), policies=PolicyStore(shards), stats=TaskStatsStore(shards),
                       audit=AuditStore(shards), dead_letters=DeadLetterStore(shards),
                       replays=BulkReplayStore(shards), search=SearchStore(shards),
                       graphs=GraphStore(shards, route_threshold_ms=config.route_threshold_ms),
                       server_time_ms=tasks.server_time_ms)
    watermarks = _KafkaWatermarks(config.kafka, config.node_id, config.slot_count)
    log = LogParts(
        producer=TaskProducer(config.kafka),
        intake_factory=lambda deliver, closed_topics: KafkaIntake(
            PartitionReader(config.kafka, group_id=f"taskring-{config.node_id}"), deliver, closed_topics),
        high_watermarks=watermarks.read, close=watermarks.close)
    session = ZkSession(config.zookeeper.hosts, session_timeout_ms=config.zookeeper.session_timeout_ms)
    return NodeParts(store, log, MembershipParts(session, ExecutorDirectory(session)))


def memory_parts(config: NodeConfig, executors: MemoryExecutorDirectory | None = None) -> NodeParts:
    """Everything in this process (`taskring dev`): the twins of the store, the log and membership.
    `executors`: the directory the caller registers executors in (dev's ZooKeeper front)."""
    tasks = MemoryTaskStore()
    store = StoreParts(tasks=tasks, cron=MemoryCronStore(tasks), policies=MemoryPolicyStore(tasks),
                       stats=MemoryTaskStats(tasks), audit=MemoryAuditStore(tasks),
                       dead_letters=MemoryDeadLetterStore(tasks), replays=MemoryReplayStore(tasks),
                       search=MemorySearch(tasks), graphs=None, server_time_ms=None)
    memory_log = MemoryLog(partitions=config.slot_count)

    def high_watermarks() -> dict[tuple[str, int], int]:
        return {(topic, p): memory_log.end_offset(topic, p)
                for topic in config.kafka.topics() for p in range(config.slot_count)}

    log = LogParts(producer=MemoryProducer(memory_log),
                   intake_factory=lambda deliver, closed_topics: KafkaIntake(
                       MemoryReader(memory_log), deliver, closed_topics),
                   high_watermarks=high_watermarks, close=lambda: None)
    session = MemorySession()
    return NodeParts(store, log, MembershipParts(session, executors or MemoryExecutorDirectory(session)))


class _KafkaWatermarks:
    """Kafka's high watermarks of the node's topics, through one consumer opened on first use."""

    def __init__(self, kafka: KafkaConfig, node_id: str, slot_count: int):
        self._kafka = kafka
        self._node_id = node_id
        self._slot_count = slot_count
        self._consumer: Consumer | None = None

    def read(self) -> dict[tuple[str, int], int]:
        if self._consumer is None:
            self._consumer = Consumer({"bootstrap.servers": self._kafka.bootstrap_servers,
                                       "group.id": f"taskring-admin-{self._node_id}",
                                       "enable.auto.commit": False})
        out = {}
        for topic in self._kafka.topics():
            for p in range(self._slot_count):
                try:
                    _low, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=1)
                except Exception:
                    continue
                out[(topic, p)] = high
        return out

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
