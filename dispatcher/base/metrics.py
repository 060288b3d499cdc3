"""Prometheus metrics of one node, on a registry the node owns (no process globals,
so several nodes can live in one test process)."""
from __future__ import annotations

import bisect
import collections
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENESS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# A Submit is a MySQL write and perhaps a Kafka produce; a claim_due round is one MySQL
# transaction: milliseconds normally, seconds when the store struggles.
_CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Handlers run from milliseconds to the longest task timeouts (minutes).
_EXECUTION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


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
        self.policies_reloads = Counter("taskring_policies_reloads", "Reads of the policies file after it changed",
                                        ["result"], registry=r)
        for result in ("loaded", "failed"):   # both series from the start: a failure is a rise from 0
            self.policies_reloads.labels(result)
        self.tokens_reloads = Counter("taskring_tokens_reloads", "Reads of the tokens file after it changed"
                                      " (result: loaded, failed: the tokens in use were kept)", ["result"],
                                      registry=r)
        self.loop_crashes = Counter("taskring_loop_crashes", "Background loops that ended unexpectedly (the node"
                                    " turns unhealthy)", ["loop"], registry=r)
        self.dispatched = Counter("taskring_tasks_dispatched", "Attempts handed to executors", registry=r)
        self.skipped = Counter("taskring_tasks_skipped", "Due tasks not dispatched (cancelled, done, re-routed)",
                               registry=r)
        self.outcomes = Counter("taskring_task_outcomes", "Finished attempts", ["kind"], registry=r)
        self.retries = Counter("taskring_task_retries", "Attempts scheduled for retry", ["route"], registry=r)
        self.dead_lettered = Counter("taskring_tasks_dead_lettered", "Tasks dead-lettered", registry=r)
        self.graph_settled = Counter("taskring_graph_settled", "Tasks of graphs that left `waiting`: released to"
                                     " run, skipped or cancelled by the tasks they depend on", ["result"],
                                     registry=r)
        self.graphs_open = Gauge("taskring_graphs_open", "Graphs of this node's home slots not finished",
                                 ["namespace"], registry=r)
        self.graphs_stuck = Gauge("taskring_graphs_stuck", "Graphs of this node's home slots with tasks waiting,"
                                  " none running, none due and no change for TASKRING_GRAPH_STUCK_AFTER_MS",
                                  ["namespace"], registry=r)
        self.graph_notes_oldest = Gauge("taskring_graph_outbox_oldest_seconds", "Age of the oldest graph note of"
                                        " this node's slots not yet applied", registry=r)
        self.graph_reconciled = Counter("taskring_graph_reconciled", "Ends of tasks of graphs applied by a slot"
                                        " owner's sweep or the graph watch instead of by the node that recorded"
                                        " them (it crashed or failed to apply them)", registry=r)
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
        # Per limited task type (the key of a per-key limit is no label: cardinality).
        self.limit_waiting = Gauge("taskring_limit_waiting", "Due tasks waiting for a place under a limit",
                                   ["namespace", "task_type", "limit"], registry=r)
        self.limit_held = Gauge("taskring_limit_held",
                                "Places of a limit held: attempts running, and an earlier owner's not yet expired",
                                ["namespace", "task_type", "limit"], registry=r)
        self.limit_parked = Counter("taskring_limit_parked", "Due tasks made to wait by a limit",
                                    ["namespace", "task_type", "limit"], registry=r)
        self.heartbeats = Counter("taskring_heartbeats", "Heartbeats of running attempts, by the answer they got",
                                  ["verdict"], registry=r)
        self.heartbeat_expired = Counter("taskring_heartbeat_expired",
                                         "Attempts given up as timed out: no heartbeat within their type's timeout",
                                         registry=r)
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
        self.ownership_moves = Counter("taskring_ownership_moves", "Slots this node gained (assigned) or gave up"
                                       " (revoked: handed off; lost: dropped without a handoff)", ["move"],
                                       registry=r)
        # Labelled by task type: the dispatch path records them only for types that have a
        # registered executor, so the series are bounded by the executors' types.
        self.in_flight_by_type = Gauge("taskring_in_flight_by_type", "Attempts awaiting an executor's outcome,"
                                       " per task type", ["namespace", "task_type"], registry=r)
        self.executors = Gauge("taskring_executors", "Executor instances registered per task type (\"*\": any type),"
                               " in the namespaces this node dispatches for; 0 once a type's last one left",
                               ["namespace", "task_type"], registry=r)
        self.submit_latency = Histogram("taskring_submit_latency_seconds", "Time to handle a Submit or SubmitBatch"
                                        " call", ["method"], buckets=_CALL_BUCKETS, registry=r)
        self.poll_duration = Histogram("taskring_poll_duration_seconds", "Time of one MySQL poll (claim_due) of"
                                       " one slot", buckets=_CALL_BUCKETS, registry=r)
        self.execution_duration = Histogram("taskring_execution_duration_seconds", "Dispatch to outcome of the"
                                            " attempts executors ran, per task type", ["namespace", "task_type"],
                                            buckets=_EXECUTION_BUCKETS, registry=r)
        self.lateness = Histogram("taskring_dispatch_lateness_seconds", "Dispatch time minus due time",
                                  ["source"], buckets=_LATENESS_BUCKETS, registry=r)


def observe_many(histogram: Histogram, amount: float, count: int) -> None:
    """`count` observations of the same `amount`, for the cost of one observe(): a batch's
    tasks share their dispatch and outcome times, and the hot path records per batch, not
    per task. prometheus_client has no weighted observe, so this adds to the sum, count and
    bucket of a (labelled child) histogram as observe() does; tests/unit/test_metrics.py
    checks it against observe() so a change inside prometheus_client is caught."""
    if count <= 0:
        return
    histogram._sum.inc(amount * count)
    for i, bound in enumerate(histogram._upper_bounds):
        if amount <= bound:
            histogram._buckets[i].inc(count)
            break


def observe_values(histogram: Histogram, values: Sequence[float]) -> None:
    """observe() of each value, with one update of the sum and one of each bucket touched:
    a dispatch batch's lateness, one value per task, cost a lock and a scan of the buckets
    per task otherwise. Checked against observe() in tests/unit/test_metrics.py, as
    observe_many is."""
    if not values:
        return
    bounds = histogram._upper_bounds   # ascending, the last +Inf: a value goes in the first bound >= it
    histogram._sum.inc(sum(values))
    for i, count in collections.Counter(bisect.bisect_left(bounds, v) for v in values).items():
        histogram._buckets[i].inc(count)
