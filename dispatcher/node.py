"""The composition root: one dispatcher node built from its parts, in an order
you can read. Start brings parts up from the bottom (store, ZooKeeper, Kafka)
to the top (ownership, API); stop takes them down in reverse, handing slots off
cleanly before anything they need goes away."""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime as dt
import faulthandler
import gc
import inspect
import logging
import signal
from collections.abc import Sequence

import grpc

from cluster.coordinator import ClusterOwnership
from cluster.interface import Ownership
from cluster.slots import slot_of
from cluster.static import StaticOwnership
from dispatcher.admin.auth import admin_authenticator
from dispatcher.admin.console.routes import console_routes
from dispatcher.admin.graph_routes import GraphRoutes
from dispatcher.admin.ops_wiring import Operations
from dispatcher.admin.policy_routes import PolicyRoutes, live_limits
from dispatcher.admin.ring_view import RingView
from dispatcher.admin.routes import Route
from dispatcher.admin.server import AdminServer
from dispatcher.api.admission import Admission
from dispatcher.api.graphs import GraphApi
from dispatcher.api.health import GrpcHealth
from dispatcher.api.policies import PolicyApi, TypePolicies
from dispatcher.api.service import TaskApi, serve_api
from dispatcher.api.validation import Limits
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.auth.reload import ReloadingTokens
from dispatcher.auth.tls import admin_ssl_context, executor_channel_credentials, grpc_server_credentials
from dispatcher.base.clock import Clock
from dispatcher.base.clock_sync import ClockSync, SyncedClock
from dispatcher.base.config import NodeConfig
from dispatcher.base.loop_task import LoopTask, LoopWatch
from dispatcher.base.metrics import NodeMetrics
from dispatcher.base.tracing import tracing_of
from dispatcher.cron.api import CronApi
from dispatcher.cron.materializer import Materializer
from dispatcher.engine.engine import Engine
from dispatcher.engine.executor_count import ExecutorCount
from dispatcher.engine.executor_pool import ExecutorPool
from dispatcher.engine.heartbeats import HeartbeatDesk
from dispatcher.engine.task_stats import TaskStats
from dispatcher.ops.graphs import GraphOps
from dispatcher.params import api_params, engine_params, plan_params
from dispatcher.parts import NodeParts, production_parts
from dispatcher.policy.follow import PolicyChange, PolicyFollower, read_layers
from dispatcher.policy.layers import PolicyLayers
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import Replayed
from dispatcher.store.interface_graphs import Settled
from membership.session import ZkSession
from taskring.wire import pb

log = logging.getLogger(__name__)


class Node:
    def __init__(self, config: NodeConfig, *, limits: Limits | None = None, clock: Clock | None = None,
                 parts: NodeParts | None = None, more_routes: Sequence[Route] = ()):
        self.config = config
        self.metrics = NodeMetrics()
        # Every background loop reports here if it ends on its own; the liveness probe reads it.
        self.loops = LoopWatch(on_crash=lambda name: self.metrics.loop_crashes.labels(name).inc())
        # MariaDB, Kafka and ZooKeeper, or their in-memory twins (`taskring dev`): dispatcher/parts.py.
        self.parts = parts = parts or production_parts(config)
        stores = parts.store
        self.store = stores.tasks
        # The cluster's one time is the store's (dispatcher/base/clock_sync.py); a clock given
        # in (tests, `taskring dev`) is taken as it is.
        self.clock: Clock
        self.clock_sync: ClockSync | None
        if clock is None and stores.server_time_ms is not None:
            synced = SyncedClock()
            self.clock = synced
            self.clock_sync = ClockSync(synced, stores.server_time_ms, on_offset=self.metrics.clock_offset.set)
        else:
            self.clock, self.clock_sync = clock or Clock(), None
        self.session = parts.membership.session
        self.executors_directory = parts.membership.executors
        # The console's figures, counted per batch and written every few seconds.
        self.stats = TaskStats(store=stores.stats, node=config.node_id, clock=self.clock, loops=self.loops)
        self.executor_count = ExecutorCount(self.metrics.executors, self.executors_directory.known)
        self.producer = parts.log.producer
        # Read at construction, so that a CA file that is missing or not PEM stops the node
        # before it joins, naming the variable, rather than failing every delivery.
        executor_credentials = (executor_channel_credentials(config.executor_tls)
                                if config.executor_tls is not None else None)
        # The policies file now; the entries set through the API are laid over it at start.
        layers = read_layers(config.retry_policies_file, None)
        limits = self.limits = limits or _limits(config, layers)
        # Spans of traced tasks (TASKRING_TRACES): None unless an exporter is named.
        self.tracing = tracing_of(config.traces, config.node_id)
        self.graphs = stores.graphs
        self.executor_pool = ExecutorPool(self.executors_directory, config.node_id, lease_remaining_ms=self._lease_ms,
                                   now_ms=self.clock.now_ms,
                                   unreachable_cooldown_s=config.executor_unreachable_cooldown_ms / 1000,
                                   credentials=executor_credentials,
                                   server_name=config.executor_tls.server_name if config.executor_tls else None,
                                   use_streams=config.executor_streams,
                                   lease_now_s=(lambda: self.clock.now_ms() / 1000) if self.clock.movable else None,
                                   heartbeats=HeartbeatDesk(store=self.store, clock=self.clock,
                                                            slot_count=config.slot_count, metrics=self.metrics))
        self.engine = Engine(
            params=engine_params(config), store=self.store, producer=self.producer,
            intake_factory=parts.log.intake_factory,
            executors=self.executor_pool,
            metrics=self.metrics, clock=self.clock, on_slot_lost=self._slot_lost, may_send=self._may_send,
            stats=self.stats, loops=self.loops, type_limits=limits.retry_policies.limits_by_type,
            heartbeat_timeouts=limits.retry_policies.heartbeat_by_type,
            fairness=limits.retry_policies.fairness_by_type, tracing=self.tracing, graphs=self.graphs)
        self.ownership = self._build_ownership()
        self.admission = Admission(load=self.engine.load, max_wait_ms=config.admission_max_wait_ms,
                                   max_unread=config.admission_max_unread_count, clock=self.clock)
        # Access control: one tokens file for the task API and the admin endpoint, read
        # (and checked, every field) before anything starts, then followed: a changed file
        # is read again without a restart, and ends the console's sessions.
        self.tokens: ReloadingTokens | None = None
        if config.tokens_file:
            self.tokens = ReloadingTokens(
                config.tokens_file, interval_s=config.tokens_reload_ms / 1000,
                on_reload=lambda result: self.metrics.tokens_reloads.labels(result).inc(),
                on_change=lambda: log.info("tokens changed: %d console sessions ended", self.admin.sessions.clear()))
        self.auth = Authorizer(self.tokens, self.metrics)
        # Limits, rates, fair shares, heartbeat timeouts and retry policies follow their file and
        # the entries set through the API (PolicyService).
        policy_store = stores.policies
        self.policies = PolicyFollower(config.retry_policies_file, policy_store, layers, limits.retry_policies,
                                       interval_s=config.policies_reload_ms / 1000, on_change=self._policies_changed,
                                       on_reload=lambda result: self.metrics.policies_reloads.labels(result).inc())
        self._loop: asyncio.AbstractEventLoop | None = None
        self.api = TaskApi(params=api_params(config), store=self.store, producer=self.producer, metrics=self.metrics,
                           limits=limits, clock=self.clock, admission=self.admission, auth=self.auth,
                           stats=self.stats, tracing=self.tracing,
                           graph_waiting=self.graphs.waiting_for if self.graphs is not None else None)
        relay = self.engine.graph_relay
        self.graph_api = GraphApi(params=api_params(config), graphs=self.graphs,
                                  release=relay.release_graph if relay is not None else _no_release,
                                  count_ends=relay.count_ends if relay is not None else None,
                                  limits=limits, clock=self.clock, admission=self.admission, auth=self.auth)
        self.cron_store = stores.cron
        self.materializer = Materializer(params=plan_params(config), store=self.cron_store, clock=self.clock,
                                         slots=self.engine, limits=limits, stats=self.stats, loops=self.loops)
        self.cron_api = CronApi(node_id=config.node_id, slot_count=config.slot_count, store=self.cron_store,
                                limits=limits, clock=self.clock, auth=self.auth)
        self.type_policies = TypePolicies(store=policy_store, layers=lambda: self.policies.layers,
                                          apply_now=self.policies.check, clock=self.clock)
        self.policy_api = PolicyApi(self.type_policies, auth=self.auth)
        self.operations = Operations(tasks=self.store, audit=stores.audit, dead_letters=stores.dead_letters,
                                     replays=stores.replays, search=stores.search, limits=limits,
                                     node=config.node_id, clock=self.clock, on_replayed=self._replayed,
                                     stats=self.stats, loops=self.loops)
        graph_routes = [] if self.graphs is None else GraphRoutes(GraphOps(
            graphs=self.graphs, audit=self.operations.audit, node=config.node_id, clock=self.clock,
            reopened=self._graph_reopened,
            heartbeat_types=lambda: self.limits.retry_policies.heartbeat_by_type)).routes()
        self.ring_view = RingView(node_id=config.node_id, slot_count=config.slot_count, topics=config.kafka.topics(),
                                  store=self.store, high_watermarks=parts.log.high_watermarks,
                                  ownership_snapshot=self.ownership.snapshot, node_status=self._status)
        tls = config.tls
        self._grpc_credentials = grpc_server_credentials(tls) if tls is not None else None
        self.admin = AdminServer(host=config.grpc_host, port=config.admin_port, node_id=config.node_id,
                                 authenticate=admin_authenticator(self.tokens, config.admin_token),
                                 ring=self.ring_view.snapshot, ready=self._ready, alive=self._alive,
                                 registry=self.metrics.registry,
                                 # The console first, so that `/` is the console (the ring page stays at /ring.html).
                                 routes=[*console_routes(self.ring_view.snapshot, self._status),
                                         *self.operations.routes(),
                                         *graph_routes,
                                         *PolicyRoutes(self.type_policies, live_limits(
                                             self.metrics.limit_waiting, self.metrics.limit_held)).routes(),
                                         *more_routes],
                                 ssl_context=admin_ssl_context(tls) if tls is not None else None,
                                 require_client_cert=tls is not None and tls.client_ca_file is not None)
        self._grpc: grpc.aio.Server | None = None
        self.health = GrpcHealth(self._ready, ("TaskService", "CronService", "PolicyService", "GraphService"),
                                 watch=self.loops)
        self._observer = LoopTask("observe", self._observe, self.loops)
        self.grpc_port: int | None = None
        self._started = False
        self._serving = False

    def _replayed(self, replayed: Replayed) -> None:
        """A dead letter replayed (an admin request's thread): a task of a graph with dependents
        has them count it again at once (its note is swept up anyway if this node stops first)."""
        task = pb.Task.FromString(replayed.after)
        if task.graph.has_dependents:
            self._graph_reopened([(slot_of(task.namespace, task.task_type, self.config.slot_count), task.task_id)])

    def _graph_reopened(self, tasks: list[tuple[int, str]]) -> None:
        """From an admin request's thread: an operator's skip, for the graph relay at once (its
        note is swept up anyway if this node stops first)."""
        relay = self.engine.graph_relay
        if self._loop is not None and relay is not None:
            self._loop.call_soon_threadsafe(relay.reopened, tasks)

    def _policies_changed(self, change: PolicyChange) -> None:
        """From the follower's thread (or an API call's): applied on the event loop, between its turns."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._apply_policies, change)

    def _apply_policies(self, change: PolicyChange) -> None:
        self.limits = dataclasses.replace(self.limits, retry_policies=change.policies)
        for consumer in (self.api, self.graph_api, self.cron_api, self.materializer, self.operations):
            consumer.set_limits(self.limits)
        self.engine.set_policies(change.policies)
        if change.source == "file":
            # A change through the API was audited with its write, once; an edit of the file is
            # audited by each node that reads it (each applies it).
            asyncio.ensure_future(asyncio.to_thread(_audit_reload, self.operations.audit, change.changed)
                                  ).add_done_callback(_log_audit_failure)

    async def time_moved(self) -> None:
        """The clock was moved forward (`taskring dev`): cron plans up to the new now, and what
        became due (delays, backoffs, fires, heartbeat leases) goes now."""
        owned = self.engine.owned()
        if owned:
            await asyncio.to_thread(self.materializer.tick, owned)
        self.engine.time_moved()
        self.executor_pool.time_moved()

    def _build_ownership(self) -> Ownership:
        config = self.config
        if not config.cluster:
            return StaticOwnership(node_id=config.node_id, slot_count=config.slot_count, records=self.store,
                                   listener=self.engine, clock=self.clock)
        if not isinstance(self.session, ZkSession):
            raise ValueError("cluster: a cluster of nodes needs ZooKeeper; in-memory parts run one node")
        return ClusterOwnership(node_id=config.node_id, slot_count=config.slot_count, session=self.session,
                                records=self.store, listener=self.engine, clock=self.clock,
                                node_info={"grpc": f"{config.grpc_host}:{config.grpc_port}",
                                           "admin_port": config.admin_port},
                                lease_ms=config.zookeeper.slot_lease_ms)

    def _may_send(self) -> bool:
        """A clustered node acts only while the store leases of its slots hold (cluster/
        coordinator.py, "Leases"), whether or not ZooKeeper answers; a single node owns
        every slot without claims, so nothing can take them from it."""
        return not self.config.cluster or self.ownership.lease_remaining_s() > 0

    def _lease_ms(self) -> int | None:
        if not self.config.cluster:
            return None
        return int(self.ownership.lease_remaining_s() * 1000)

    def _slot_lost(self, slot: int) -> None:
        self.ownership.slot_lost(slot)

    async def _observe(self, interval_s: float = 5.0) -> None:
        """Refresh the gauges Prometheus alerts on: lag and backlog of the slots we own,
        and the executors registered per task type."""
        while True:
            try:
                self.metrics.zk_session_up.set(1 if self.session.state == "connected" else 0)
                self.executor_count.refresh()
                owned = self.engine.owned()
                self.metrics.kafka_lag.clear()
                for (topic, partition), lag in self.engine.kafka_lag().items():
                    if partition in owned:
                        self.metrics.kafka_lag.labels(topic, str(partition)).set(lag)
                pending = await asyncio.to_thread(self.store.pending_by_slot, list(owned))
                self.metrics.mysql_pending.clear()
                for slot in owned:
                    self.metrics.mysql_pending.labels(str(slot)).set(pending.get(slot, 0))
            except Exception:
                log.exception("refreshing gauges failed")
            await asyncio.sleep(interval_s)

    # ---- probes and status (called from the admin server's threads) ----

    def _status(self) -> dict:
        return {"node_id": self.config.node_id, "grpc_port": self.grpc_port, "held": self.engine.held,
                "owned_slots": sorted(self.engine.owned()), "heap_size": self.engine.heap_size(),
                "in_flight": self.engine.in_flight_count(), "serving": self._serving,
                "last_claimed_at": dict(self.engine.last_claimed_at),
                "last_consumed_at": dict(self.engine.last_consumed_at),
                "ownership_moves": list(getattr(self.ownership, "moves", []))[-200:]}

    def _alive(self) -> tuple[bool, str]:
        if not self._serving:
            return False, "not serving"
        ended = self.loops.ended()
        if ended:
            # A loop that died leaves a node that looks alive and does part of its job
            # (say, accepts tasks that nothing dispatches): restart it instead.
            return False, "loops ended unexpectedly: " + "; ".join(f"{name} ({why})"
                                                                 for name, why in sorted(ended.items()))
        return True, "serving"

    def _ready(self) -> tuple[bool, str]:
        alive, why = self._alive()
        if not alive:
            return False, why
        if not self._may_send():
            # What gates dispatch gates readiness: the store leases, not ZooKeeper.
            return False, "no store lease on its slots: not dispatching"
        if self.engine.held:
            return False, "holding: ownership in doubt"
        if self.session.state != "connected":
            # Still ready: it stores submits and dispatches the slots it holds. Nothing
            # moves between nodes until ZooKeeper is back.
            return True, f"ready; zookeeper session {self.session.state}: dispatching under the store leases"
        return True, "ready"

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            await self._start_parts()
        except BaseException:
            # Release what came up before the failure (each part's stop does nothing for
            # a part that is not up), so that a failed start leaks no threads, sockets or
            # claims, then raise the start's own error.
            await self.stop()
            raise

    async def _start_parts(self) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.store.start)
        # The entries set through the API, laid over the file before anything is dispatched or
        # accepted (the change is applied on the loop before this coroutine goes on).
        await asyncio.to_thread(self.policies.check)
        if self.clock_sync is not None:
            await asyncio.to_thread(self.clock_sync.start)
        await asyncio.to_thread(self.store.ensure_slots, self.config.slot_count)
        await asyncio.to_thread(self.session.start)
        await asyncio.to_thread(self.executors_directory.start)
        self.producer.start()
        await self.engine.start()
        await self.ownership.start()
        self.materializer.start()
        self.operations.start()
        self.stats.start()
        if self.tokens is not None:
            self.tokens.start()
        self.policies.start()
        self._observer.start()
        if self.auth.open:
            log.warning("no TASKRING_TOKENS_FILE: the task API takes calls from anyone (local use only)")
        if self.config.tls is None:
            log.info("no TASKRING_TLS_CERT_FILE: the gRPC API and the admin endpoint are plain text")
        executor_tls = self.config.executor_tls
        if executor_tls is None:
            log.info("no TASKRING_EXECUTOR_CA_FILE: calls to the executors are plain text")
        else:
            log.info("calls to the executors: TLS trusting %s; client certificate %s; name verified %s",
                     executor_tls.ca_file, executor_tls.client_cert_file or "none (no mutual TLS)",
                     executor_tls.server_name or "each executor's registered host")
        await self.health.start()
        self._grpc, self.grpc_port = await serve_api(self.api, self.config.grpc_host, self.config.grpc_port,
                                                     (self.cron_api, "CronService"),
                                                     (self.policy_api, "PolicyService"),
                                                     (self.graph_api, "GraphService"),
                                                     credentials=self._grpc_credentials,
                                                     configure=self.health.add_to)
        self.admin.start()
        self._serving = True
        await self.health.refresh()
        log.info("node %s serving on %s:%s", self.config.node_id, self.config.grpc_host, self.grpc_port)

    async def stop(self) -> None:
        """Take every part down, also after a start that failed part way (a part that is
        not up is left alone). Every step runs even if one before it fails; a failure is
        logged, and raised at the end only if the node had been serving: after a failed
        start the caller has the start's error, and stop is the clean-up."""
        if not self._started:
            return
        was_serving = self._serving
        self._started = False
        self._serving = False
        failures: list[Exception] = []

        async def step(name: str, call) -> None:
            try:
                result = call()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                log.exception("node %s: stopping %s failed", self.config.node_id, name)
                failures.append(exc)

        # First: health says NOT_SERVING, so probes and balancers stop sending work here.
        await step("grpc health", self.health.drain)
        await step("observer", self._observer.stop)
        await step("admin", self.admin.stop)
        await step("grpc", lambda: self._grpc is not None and self._grpc.stop(grace=2))
        await step("cron materializer", self.materializer.stop)
        await step("operations", self.operations.stop)
        await step("task stats", self.stats.stop)
        if self.tokens is not None:
            await step("tokens reload", lambda: asyncio.to_thread(self.tokens.stop))
        await step("policies reload", lambda: asyncio.to_thread(self.policies.stop))
        await step("ownership", self.ownership.stop)
        await step("engine", self.engine.stop)
        await step("producer", lambda: asyncio.to_thread(self.producer.stop))
        await step("executors directory", lambda: asyncio.to_thread(self.executors_directory.stop))
        await step("session", lambda: asyncio.to_thread(self.session.stop))
        await step("log watermarks", lambda: asyncio.to_thread(self.parts.log.close))
        if self.clock_sync is not None:
            await step("clock sync", lambda: asyncio.to_thread(self.clock_sync.stop))
        if self.tracing is not None:
            await step("tracing", lambda: asyncio.to_thread(self.tracing.stop))
        await step("store", lambda: asyncio.to_thread(self.store.stop))
        if failures and was_serving:
            raise failures[0]


def _audit_reload(audit, changed: list[str]) -> None:
    """The reload in the audit trail, as the manual action it is (an operator edited the file)."""
    audit.append(AuditRecord(at=dt.datetime.now(dt.UTC).replace(tzinfo=None), actor="policies file", address="",
                             action="policies.reload", target="policies", after={"changed": changed}))


def _log_audit_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the policies reload was applied but not written to the audit trail: %s", task.exception())


async def _no_release(home: int, namespace: str, graph_id: str) -> Settled:
    raise AssertionError("a node without a graph store accepts no graph")


def _limits(config: NodeConfig, layers: PolicyLayers) -> Limits:
    return Limits(max_batch=config.max_submit_batch, retry_policies=layers.policies())


async def run_node(config: NodeConfig) -> None:
    """Run until SIGTERM/SIGINT, then hand slots off and stop."""
    loop = asyncio.get_running_loop()
    # Blocking calls (PyMySQL, kazoo, Kafka assignment) run on the default executor;
    # the stock size (cores + 4) is small enough for a few slow calls to starve the rest.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="blocking"))
    node = Node(config)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await node.start()
    # Long-lived objects built at start need no more collection passes, and the hot
    # path allocates many short-lived ones: collect the young generation less often.
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)
    print(f"taskring node {config.node_id} ready: grpc {config.grpc_host}:{node.grpc_port}"
          f" admin {'https' if config.tls else 'http'}://{config.grpc_host}:{node.admin.port}/", flush=True)
    await stop.wait()
    log.info("node %s stopping", config.node_id)
    await node.stop()


def run_from_env(overrides: dict[str, object]) -> None:
    """`taskring node`: the config from TASKRING_* variables and the command line's overrides, then
    the node until it is stopped."""
    # `kill -USR1 <pid>` prints every thread's stack to the log: the first thing an
    # SRE wants from a node that looks stuck.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    asyncio.run(run_node(NodeConfig.from_env(None, **overrides)))
