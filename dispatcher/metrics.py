"""Prometheus metrics of one node, on a registry the node owns (no process globals,
so several nodes can live in one test process)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENESS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class NodeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.submitted = Counter("taskring_tasks_submitted", "Tasks accepted by the API", ["route"], registry=r)
        self.duplicates = Counter("taskring_submit_duplicates", "Submits of an existing task_id", registry=r)
        self.unique_key_held = Counter("taskring_submit_unique_key_held",
                                       "Submits answered with the task that holds their unique key", registry=r)
        self.rejected = Counter("taskring_submit_rejected", "Submits rejected as bad input", ["field"], registry=r)
        self.overloaded = Counter("taskring_submit_overloaded", "Submits refused because the node is behind"
                                  " (RESOURCE_EXHAUSTED)", registry=r)
        self.auth_denied = Counter("taskring_auth_denied", "Task API calls refused by the access check"
                                   " (reason: no_token, unknown_token, call, namespace)", ["reason", "call"],
                                   registry=r)
        self.dispatched = Counter("taskring_tasks_dispatched", "Attempts handed to executors", registry=r)
        self.skipped = Counter("taskring_tasks_skipped", "Due tasks not dispatched (cancelled, done, re-routed)",
                               registry=r)
        self.outcomes = Counter("taskring_task_outcomes", "Finished attempts", ["kind"], registry=r)
        self.retries = Counter("taskring_task_retries", "Attempts scheduled for retry", ["route"], registry=r)
        self.dead_lettered = Counter("taskring_tasks_dead_lettered", "Tasks dead-lettered", registry=r)
        self.fenced = Counter("taskring_fenced_writes", "Writes refused because the slot's epoch moved on",
                              registry=r)
        self.not_sent = Counter("taskring_tasks_not_sent", "Dispatched attempts given back unsent: no session lease",
                                registry=r)
        self.recovered = Counter("taskring_tasks_recovered",
                                 "Non-terminal tasks nobody was acting on, recovered by their slot's owner",
                                 ["status"], registry=r)
        self.no_executor = Counter("taskring_no_executor", "Due tasks postponed: no executor registered",
                                   ["namespace"], registry=r)
        self.heap_size = Gauge("taskring_heap_size", "Tasks waiting in the ETA heap", registry=r)
        self.in_flight = Gauge("taskring_in_flight", "Attempts awaiting an executor's outcome", registry=r)
        self.owned_slots = Gauge("taskring_owned_slots", "Slots this node owns", registry=r)
        self.kafka_lag = Gauge("taskring_kafka_lag", "Messages behind the high watermark, per owned partition",
                               ["topic", "partition"], registry=r)
        self.mysql_pending = Gauge("taskring_mysql_pending", "Tasks not yet dispatched, per owned slot",
                                   ["slot"], registry=r)
        self.clock_offset = Gauge("taskring_clock_offset_seconds",
                                  "The store's clock minus this machine's, as this node corrects for it", registry=r)
        self.zk_session_up = Gauge("taskring_zookeeper_connected", "1 while the ZooKeeper session is connected",
                                   registry=r)
        self.lateness = Histogram("taskring_dispatch_lateness_seconds", "Dispatch time minus due time",
                                  ["source"], buckets=_LATENESS_BUCKETS, registry=r)
