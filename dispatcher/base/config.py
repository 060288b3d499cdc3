"""Node configuration: frozen dataclasses, units in the names, validated on construction.

The environment is read in exactly one place, `NodeConfig.from_env`.
"""
from __future__ import annotations

import dataclasses
import os
import re
import socket
from collections.abc import Mapping

PRIORITY_TOPICS = {1: "low", 2: "normal", 3: "high"}


def positive(obj: object, *names: str) -> None:
    """Refuse a config or params object whose named fields are not > 0, naming the field."""
    for name in names:
        if getattr(obj, name) <= 0:
            raise ValueError(f"{type(obj).__name__}.{name} must be > 0, got {getattr(obj, name)!r}")


@dataclasses.dataclass(frozen=True)
class MySQLConfig:
    host: str = "127.0.0.1"
    port: int = 23306
    user: str = "root"
    password: str = dataclasses.field(default="", repr=False)  # never printed
    database: str = "taskring"
    pool_size: int = 8
    """Most connections (and transactions at once) of one node's store."""
    idle_transaction_timeout_s: int = 5
    """MariaDB ends a connection whose transaction has waited this long for its next
    statement. Ours take milliseconds between statements, so an idle one belongs to
    a node frozen or cut off mid-transaction: without this its row locks would keep
    the slot's new owner from claiming the slot for as long as the node stays
    frozen (every write of a slot locks its ownership row)."""
    lock_wait_timeout_s: int = 10
    """innodb_lock_wait_timeout of our sessions (the server's default is 50 s)."""
    io_timeout_s: int = 30
    """Socket read and write timeouts: a store that stops answering (a silent network
    cut) fails the call instead of holding a pooled connection for good. Longer
    than a lock wait, so a statement waiting on a lock is not cut short."""

    def __post_init__(self) -> None:
        positive(self, "port", "pool_size", "idle_transaction_timeout_s", "lock_wait_timeout_s", "io_timeout_s")


def parse_mysql_shards(text: str, base: MySQLConfig) -> tuple[MySQLConfig, ...]:
    """`host:port/database,...` (TASKRING_MYSQL_SHARDS): the shards after shard 0, with the
    user, password and limits of `base` (one account for every shard)."""
    shards = []
    for i, item in enumerate(part.strip() for part in text.split(",") if part.strip()):
        address, _, database = item.partition("/")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not database:
            raise ValueError(f"TASKRING_MYSQL_SHARDS: item {i + 1} {item!r} is not host:port/database")
        shards.append(dataclasses.replace(base, host=host, port=int(port), database=database))
    return tuple(shards)


def parse_slot_shards(text: str, slot_count: int) -> tuple[int, ...]:
    """`first-last:shard,...` (TASKRING_SLOT_SHARDS, e.g. `0-7:0,8-15:1`; `5:1` for one slot)
    -> the shard of every slot, index = slot. Every slot must be named exactly once."""
    shard_of: dict[int, int] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?:(\d+)", item)
        if m is None:
            raise ValueError(f"TASKRING_SLOT_SHARDS: {item!r} is not first-last:shard")
        first, last, shard = int(m[1]), int(m[2] if m[2] is not None else m[1]), int(m[3])
        for slot in range(first, last + 1):
            if slot in shard_of:
                raise ValueError(f"TASKRING_SLOT_SHARDS: slot {slot} is named twice")
            shard_of[slot] = shard
    if sorted(shard_of) != list(range(slot_count)):
        missing = sorted(set(range(slot_count)) - set(shard_of))
        extra = sorted(set(shard_of) - set(range(slot_count)))
        raise ValueError(f"TASKRING_SLOT_SHARDS: must name each slot 0..{slot_count - 1} once"
                         f" (missing {missing}, beyond the slot count {extra})")
    return tuple(shard_of[s] for s in range(slot_count))


def format_slot_shards(shard_of_slot: tuple[int, ...]) -> str:
    """The inverse of parse_slot_shards, with runs of slots collapsed: `0-7:0,8-15:1`."""
    runs: list[str] = []
    start = 0
    for slot in range(1, len(shard_of_slot) + 1):
        if slot == len(shard_of_slot) or shard_of_slot[slot] != shard_of_slot[start]:
            span = f"{start}" if slot - 1 == start else f"{start}-{slot - 1}"
            runs.append(f"{span}:{shard_of_slot[start]}")
            start = slot
    return ",".join(runs)


@dataclasses.dataclass(frozen=True)
class KafkaConfig:
    bootstrap_servers: str = "127.0.0.1:29092"
    topic_prefix: str = "taskring.tasks"
    """Topics are `<prefix>.<priority>` for priority in low, normal, high."""
    linger_ms: int = 0
    """How long the producer waits to fill a batch (TASKRING_KAFKA_LINGER_MS). 0: a Submit is
    acknowledged once Kafka has its message, so any wait here is the caller's latency (5 ms
    was half of a single Submit's 10 ms). Under load librdkafka batches anyway, with what
    queues while its requests are in flight: bench_node at 0 against 5 accepted 12.2K/s
    against 10.4K/s, and answered one Submit in 4.9 ms p50 against 10.4."""
    fetch_wait_max_ms: int = 50
    """How long the broker may hold a fetch that found nothing new (TASKRING_KAFKA_FETCH_WAIT_MS);
    data arriving meanwhile answers the fetch at once."""

    def topic_for(self, priority: int) -> str:
        return f"{self.topic_prefix}.{PRIORITY_TOPICS[priority]}"

    def topics(self) -> list[str]:
        return [self.topic_for(p) for p in sorted(PRIORITY_TOPICS, reverse=True)]


@dataclasses.dataclass(frozen=True)
class ZooKeeperConfig:
    hosts: str = "127.0.0.1:22181/taskring"
    """Hosts with the cluster's chroot."""
    session_timeout_ms: int = 6000

    def __post_init__(self) -> None:
        positive(self, "session_timeout_ms")

    @property
    def slot_lease_ms(self) -> int:
        """A slot's lease in the store (cluster/coordinator.py, "Leases"): two thirds of
        the session timeout, so that a crashed owner's leases have run out by the time
        its session expires and the next owner claims (no wait added to a takeover)."""
        return self.session_timeout_ms * 2 // 3


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    """TLS of the gRPC API and the admin endpoint: PEM files, read at start (secrets live in
    files or the environment, never in the repo)."""

    cert_file: str
    """The server's certificate chain (TASKRING_TLS_CERT_FILE)."""
    key_file: str = dataclasses.field(repr=False)
    """Its private key (TASKRING_TLS_KEY_FILE)."""
    client_ca_file: str | None = None
    """Set: mutual TLS, every gRPC client must show a certificate this CA signed, and so must
    every admin caller but the probes (TASKRING_TLS_CLIENT_CA_FILE)."""

    def __post_init__(self) -> None:
        for name in ("cert_file", "key_file"):
            if not getattr(self, name):
                raise ValueError(f"TlsConfig.{name} must not be empty")
        if self.client_ca_file == "":
            raise ValueError("TlsConfig.client_ca_file must not be empty (None: no client certificates)")


def _int_env(env, var: str, default: int) -> int:
    """The integer in `var`, or `default` when unset; a value that is no integer is refused naming it."""
    text = env.get(var)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{var}: {text!r} is not a whole number") from None


def _float_env(env, var: str) -> float:
    """The number in `var` (set); a value that is no number is refused naming it."""
    text = env[var]
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{var}: {text!r} is not a number") from None


def parse_tls(cert: str | None, key: str | None, ca: str | None) -> TlsConfig | None:
    """TASKRING_TLS_CERT_FILE and TASKRING_TLS_KEY_FILE together (or neither: no TLS);
    TASKRING_TLS_CLIENT_CA_FILE only with them. Empty counts as unset."""
    cert, key, ca = cert or None, key or None, ca or None
    if cert is None and key is None:
        if ca is not None:
            raise ValueError("TASKRING_TLS_CLIENT_CA_FILE: needs TASKRING_TLS_CERT_FILE and TASKRING_TLS_KEY_FILE"
                             " (mutual TLS is TLS first)")
        return None
    if cert is None or key is None:
        missing = "TASKRING_TLS_CERT_FILE" if cert is None else "TASKRING_TLS_KEY_FILE"
        raise ValueError(f"{missing}: is required with the other of TASKRING_TLS_CERT_FILE/KEY_FILE")
    return TlsConfig(cert_file=cert, key_file=key, client_ca_file=ca)


@dataclasses.dataclass(frozen=True)
class ExecutorTlsConfig:
    """How a node dials the executors (the ExecutorService inside each business service):
    over TLS, trusting one CA, and showing a client certificate when the executors ask for
    mutual TLS. PEM files, read at start."""

    ca_file: str
    """The CA the executors' certificates must chain to (TASKRING_EXECUTOR_CA_FILE)."""
    client_cert_file: str | None = None
    """The node's client certificate, for executors that require mutual TLS
    (TASKRING_EXECUTOR_CLIENT_CERT_FILE)."""
    client_key_file: str | None = dataclasses.field(default=None, repr=False)
    """Its private key (TASKRING_EXECUTOR_CLIENT_KEY_FILE)."""
    server_name: str | None = None
    """The name to verify in every executor's certificate instead of the host it registered
    (TASKRING_EXECUTOR_SERVER_NAME): for certificates that name a service, not a pod's IP."""

    def __post_init__(self) -> None:
        if not self.ca_file:
            raise ValueError("ExecutorTlsConfig.ca_file must not be empty")
        for name in ("client_cert_file", "client_key_file", "server_name"):
            if getattr(self, name) == "":
                raise ValueError(f"ExecutorTlsConfig.{name} must not be empty (None: unset)")
        if (self.client_cert_file is None) != (self.client_key_file is None):
            raise ValueError("ExecutorTlsConfig: client_cert_file and client_key_file go together")


def parse_executor_tls(env: Mapping[str, str]) -> ExecutorTlsConfig | None:
    """TASKRING_EXECUTOR_CA_FILE turns TLS to the executors on; the client certificate and
    key (mutual TLS) and the server name only with it. Empty counts as unset."""
    ca, cert, key, name = (env.get(f"TASKRING_EXECUTOR_{v}") or None
                           for v in ("CA_FILE", "CLIENT_CERT_FILE", "CLIENT_KEY_FILE", "SERVER_NAME"))
    if ca is None:
        for value, var in ((cert, "CLIENT_CERT_FILE"), (key, "CLIENT_KEY_FILE"), (name, "SERVER_NAME")):
            if value is not None:
                raise ValueError(f"TASKRING_EXECUTOR_{var}: needs TASKRING_EXECUTOR_CA_FILE (TLS to the executors"
                                 " is on only with the CA that signed their certificates)")
        return None
    if (cert is None) != (key is None):
        missing = "TASKRING_EXECUTOR_CLIENT_CERT_FILE" if cert is None else "TASKRING_EXECUTOR_CLIENT_KEY_FILE"
        raise ValueError(f"{missing}: is required with the other of TASKRING_EXECUTOR_CLIENT_CERT_FILE/KEY_FILE")
    return ExecutorTlsConfig(ca_file=ca, client_cert_file=cert, client_key_file=key, server_name=name)


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    node_id: str = dataclasses.field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    grpc_host: str = "127.0.0.1"
    """Where the gRPC API and the admin endpoint listen (TASKRING_BIND_HOST); 0.0.0.0 in a pod."""
    grpc_port: int = 7070
    admin_port: int = 7080
    admin_token: str | None = dataclasses.field(default=None, repr=False)
    """An operator's token for the admin endpoint, named "admin" (TASKRING_ADMIN_TOKEN)."""
    tokens_file: str | None = None
    """The tokens of the task API and the admin endpoint (TASKRING_TOKENS_FILE,
    dispatcher/auth/tokens.py); None: the task API is open (local use only)."""
    tokens_reload_ms: int = 5_000
    """How often the tokens file is checked for a change and read again (TASKRING_TOKENS_RELOAD_MS)."""
    policies_reload_ms: int = 5_000
    """How often the policies file is checked for a change and read again (TASKRING_POLICIES_RELOAD_MS)."""
    traces: str = ""
    """Where the spans of traced tasks go (TASKRING_TRACES): "" (off), "console" or "otlp" (base/tracing.py)."""
    tls: TlsConfig | None = None
    """TLS of the gRPC API and the admin endpoint; None: plain text."""
    executor_tls: ExecutorTlsConfig | None = None
    """TLS to the executors the node delivers to; None: plain text."""
    slot_count: int = 64
    """P: the Kafka partition count of every task topic; fixed at cluster creation. 64 by default:
    the ring spreads 16 over three nodes 3/7/6, 64 far more evenly (taskring ring prints the balance)."""
    route_threshold_ms: int = 600_000
    """Due within this goes through Kafka, later through MySQL. It also bounds how
    far back a new owner replays a partition (the watermark cannot pass a task
    waiting in the heap)."""
    heap_capacity: int = 200_000
    heap_decoded_capacity: int = 50_000
    """Past this many tasks in the heap, a Kafka-path task that waits is held as its
    envelope's bytes (about 680 bytes a task instead of 1,700) and decoded at dispatch."""
    poll_interval_ms: int = 250
    poll_lookahead_ms: int = 2_000
    """The poller claims rows due within this, so they sit in the heap before due."""
    poll_batch: int = 500
    dispatch_batch: int = 1_000
    """Most due tasks popped at once (TASKRING_DISPATCH_BATCH): one begin_dispatch, and one
    message (or Execute call) per executor and task type. Measured alternately against 200
    (bench_node.py, three pairs): 9-31% more tasks/s end to end, 10-21% less node CPU and
    15-29% less MariaDB CPU a task, pickup at a moderate rate no worse; 2,000 did worse than
    1,000 (a batch then fills an executor's default max_in_flight and batches stop overlapping)."""
    enqueued_grace_ms: int = 5_000
    """A Kafka-routed row still `enqueued` this long after its due time is swept
    into the MySQL path: the safety net for a produce lost to a crash of the node
    that accepted it. A healthy owner dispatches within milliseconds of the due
    time, and sweeping a row whose message does exist is harmless (the message is
    skipped at dispatch), so the grace can be short."""
    offset_commit_interval_ms: int = 500
    recovery_grace_ms: int = 15_000
    """The guard against stuck tasks: a `dispatched` row whose outcome has not come
    back within its timeout plus this is recovered by its slot's owner as a failed
    attempt (retried under its policy), and a `claimed` row this long past due that
    the owner does not hold is given back to the poller. Longer than the executor
    call's own margin (5 s), so a slow but live call is never recovered."""
    outcome_retry_max_delay_ms: int = 2_000
    """Recording an outcome the store refused is retried with a backoff up to this,
    for as long as the node owns the task's slot."""
    recovery_interval_ms: int = 5_000
    """How often the owner looks for such rows in each slot it owns."""
    recovery_batch: int = 500
    """Most rows one recovery pass of one slot reads."""
    graph_check_ms: int = 30_000
    """How often the home owner of a graph looks at it (engine/graph_watch.py): done, stuck, lost releases."""
    graph_stuck_after_ms: int = 600_000
    """A graph with tasks waiting, none running, none due and none changed this long is stuck."""
    sweep_interval_ms: int = 2_000
    """How often the sweeper looks for `enqueued` rows past their grace (at most every
    enqueued_grace_ms / 2)."""
    sweep_batch: int = 1_000
    """Most rows one sweep of one slot moves to the MySQL path."""
    no_executor_retry_ms: int = 1_000
    """A due task with no executor registered for its type waits this long (no attempt
    spent) before it is looked at again."""
    store_retry_ms: int = 500
    """A batch whose begin_dispatch failed (the store unreachable) goes back to the heap
    for this long."""
    handoff_drain_timeout_ms: int = 30_000
    """A clean handoff waits this long for the slot's in-flight attempts to finish before
    it commits and lets the slot go (the rest are recovered by the next owner)."""
    intake_command_timeout_ms: int = 10_000
    """How long the engine waits for the Kafka intake thread to apply an assignment change."""
    dispatch_idle_wait_ms: int = 50
    """The dispatch loop's longest wait for new work when nothing is due sooner."""
    max_batches_in_flight: int = 4
    """Dispatch batches (each one Execute call per executor) awaiting their outcomes at once."""
    admission_max_wait_ms: int = 10_000
    """Submits are refused (RESOURCE_EXHAUSTED) while the oldest due task in this node's
    heap has waited longer than this (dispatcher/api/admission.py)."""
    admission_max_unread_count: int = 500_000
    """... or while its owned Kafka partitions hold more unread messages than this."""
    floor_share_low: float = 0.1
    """The least share of dispatches low-priority tasks get while any wait, however much higher
    work is due (TASKRING_FLOOR_SHARE_LOW); 0: strict priority, low may starve."""
    floor_share_normal: float = 0.2
    """The same floor for normal-priority tasks under high ones (TASKRING_FLOOR_SHARE_NORMAL)."""
    high_reserve_share: float = 0.0
    """The share of each executor's capacity that only high-priority tasks may take
    (TASKRING_HIGH_RESERVE_SHARE): normal and low work never fills the last of it, so a high
    task finds a place at once however saturated the executors are. 0: none kept."""
    outcome_batch: int = 2_000
    """Most outcome writes in one store transaction (TASKRING_OUTCOME_BATCH): outcomes that arrive while one is
    being recorded go together into the next (dispatcher/engine/outcome_batcher.py)."""
    executor_unreachable_cooldown_ms: int = 5_000
    """An executor whose connection failed gets no deliveries for this long."""
    executor_streams: bool = True
    """Deliver through one Work stream per executor (dispatcher/engine/executor_stream.py), or,
    False (TASKRING_EXECUTOR_STREAMS=0), one Execute call per batch and task type as
    before. Executors without Work get calls either way."""
    max_submit_batch: int = 1000
    cron_tick_ms: int = 500
    """How often the owner of a slot plans its cron rules (dispatcher/cron/materializer.py)."""
    cron_lead_ms: int = 60_000
    """Fires of a rule whose overlap is "allow" are written this far ahead, in chunks of half
    of it: a midnight fire of many rules is a trickle over the minute before, not a spike."""
    cron_missed_after_ms: int = 30_000
    """A fire time this far in the past without its task was missed (every node down, or the
    rule's owner gone that long): the rule's catch-up policy decides whether it still runs."""
    retry_policies_file: str | None = None
    """JSON of the server's default retry policy and per task type defaults
    (dispatcher/policy/retry.py parse_retry_policies); None: built-in defaults."""
    mysql: MySQLConfig = dataclasses.field(default_factory=MySQLConfig)
    """The task store, or its shard 0 when it is split over several servers."""
    mysql_shards: tuple[MySQLConfig, ...] = ()
    """Shards 1.. of the task store (TASKRING_MYSQL_SHARDS), each a MariaDB server holding
    the rows of the slots `slot_shards` gives it (dispatcher/store/sharded.py)."""
    slot_shards: tuple[int, ...] = ()
    """The shard of each slot, index = slot (TASKRING_SLOT_SHARDS); empty: contiguous
    ranges of equal size. Every node of a cluster must have the same map: each shard
    records the map it belongs to and a node with another one is refused at start."""
    kafka: KafkaConfig = dataclasses.field(default_factory=KafkaConfig)
    zookeeper: ZooKeeperConfig = dataclasses.field(default_factory=ZooKeeperConfig)
    cluster: bool = True
    """False: a single node owns every slot without ZooKeeper claims."""

    def __post_init__(self) -> None:
        if self.traces not in ("", "console", "otlp"):
            raise ValueError(f"TASKRING_TRACES: {self.traces!r} is not one of console, otlp (or empty: off)")
        positive(self, "slot_count", "route_threshold_ms", "tokens_reload_ms", "policies_reload_ms", "heap_capacity",
                  "poll_interval_ms", "poll_batch", "dispatch_batch", "offset_commit_interval_ms", "max_submit_batch",
                  "recovery_grace_ms", "recovery_interval_ms", "outcome_retry_max_delay_ms", "recovery_batch",
                  "sweep_interval_ms", "sweep_batch", "graph_check_ms", "graph_stuck_after_ms", "no_executor_retry_ms",
                  "store_retry_ms",
                  "handoff_drain_timeout_ms", "intake_command_timeout_ms", "dispatch_idle_wait_ms",
                  "max_batches_in_flight", "executor_unreachable_cooldown_ms", "enqueued_grace_ms",
                  "outcome_batch", "admission_max_wait_ms", "admission_max_unread_count",
                  "heap_decoded_capacity", "cron_tick_ms", "cron_lead_ms", "cron_missed_after_ms")
        for name in ("floor_share_low", "floor_share_normal", "high_reserve_share"):
            share = getattr(self, name)
            if not 0 <= share < 1:
                raise ValueError(f"NodeConfig.{name} must be a share in [0, 1), got {share!r}")
        if self.floor_share_low + self.floor_share_normal >= 1:
            raise ValueError("NodeConfig.floor_share_low + floor_share_normal must be below 1 (high would get"
                             f" nothing), got {self.floor_share_low} + {self.floor_share_normal}")
        if self.poll_lookahead_ms < 0:  # 0 is fine: poll only what is due now
            raise ValueError(f"NodeConfig.poll_lookahead_ms must be >= 0, got {self.poll_lookahead_ms!r}")
        if not self.node_id:
            raise ValueError("NodeConfig.node_id must not be empty")
        shards = len(self.store_shards)
        if self.slot_shards:
            if len(self.slot_shards) != self.slot_count:
                raise ValueError(f"NodeConfig.slot_shards must give a shard for each of the {self.slot_count}"
                                 f" slots, got {len(self.slot_shards)}")
            if any(not 0 <= s < shards for s in self.slot_shards):
                raise ValueError(f"NodeConfig.slot_shards names a shard outside 0..{shards - 1}")
        if shards > self.slot_count:
            raise ValueError(f"NodeConfig: {shards} store shards for {self.slot_count} slots")
        unused = set(range(shards)) - set(self.shard_of_slot)
        if unused:
            raise ValueError(f"NodeConfig.slot_shards gives no slot to shard(s) {sorted(unused)}")

    @property
    def store_shards(self) -> tuple[MySQLConfig, ...]:
        """Every shard of the task store, shard 0 first."""
        return (self.mysql, *self.mysql_shards)

    @property
    def shard_of_slot(self) -> tuple[int, ...]:
        """The shard of each slot, index = slot: `slot_shards`, or contiguous ranges."""
        if self.slot_shards:
            return self.slot_shards
        shards = len(self.store_shards)
        return tuple(slot * shards // self.slot_count for slot in range(self.slot_count))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides) -> NodeConfig:
        """Build from TASKRING_* variables; explicit overrides win."""
        env = os.environ if environ is None else environ
        # The defaults are the dataclasses' own, written once (the local stack's endpoints).
        m, k, z = MySQLConfig(), KafkaConfig(), ZooKeeperConfig()
        mysql = MySQLConfig(
            host=env.get("TASKRING_MYSQL_HOST", m.host),
            port=_int_env(env, "TASKRING_MYSQL_PORT", m.port),
            user=env.get("TASKRING_MYSQL_USER", m.user),
            password=env.get("TASKRING_MYSQL_PASSWORD", m.password),
            database=env.get("TASKRING_MYSQL_DATABASE", m.database),
        )
        kafka = KafkaConfig(
            bootstrap_servers=env.get("TASKRING_KAFKA", k.bootstrap_servers),
            topic_prefix=env.get("TASKRING_TOPIC_PREFIX", k.topic_prefix),
            linger_ms=_int_env(env, "TASKRING_KAFKA_LINGER_MS", k.linger_ms),
            fetch_wait_max_ms=_int_env(env, "TASKRING_KAFKA_FETCH_WAIT_MS", k.fetch_wait_max_ms),
        )
        zookeeper = ZooKeeperConfig(
            hosts=env.get("TASKRING_ZK", z.hosts),
            session_timeout_ms=_int_env(env, "TASKRING_ZK_SESSION_TIMEOUT_MS", z.session_timeout_ms),
        )
        values: dict = dict(mysql=mysql, kafka=kafka, zookeeper=zookeeper)
        if env.get("TASKRING_MYSQL_SHARDS"):
            values["mysql_shards"] = parse_mysql_shards(env["TASKRING_MYSQL_SHARDS"], mysql)
        if "TASKRING_BIND_HOST" in env:
            values["grpc_host"] = env["TASKRING_BIND_HOST"]
        if "TASKRING_NODE_ID" in env:
            values["node_id"] = env["TASKRING_NODE_ID"]
        if "TASKRING_TRACES" in env:
            values["traces"] = env["TASKRING_TRACES"].strip().lower()
        if "TASKRING_RETRY_POLICIES" in env:
            values["retry_policies_file"] = env["TASKRING_RETRY_POLICIES"]
        if "TASKRING_ADMIN_TOKEN" in env:
            values["admin_token"] = env["TASKRING_ADMIN_TOKEN"]
        if env.get("TASKRING_TOKENS_FILE"):
            values["tokens_file"] = env["TASKRING_TOKENS_FILE"]
        values["tls"] = parse_tls(env.get("TASKRING_TLS_CERT_FILE"), env.get("TASKRING_TLS_KEY_FILE"),
                                  env.get("TASKRING_TLS_CLIENT_CA_FILE"))
        values["executor_tls"] = parse_executor_tls(env)
        for name, var in (("grpc_port", "TASKRING_GRPC_PORT"), ("admin_port", "TASKRING_ADMIN_PORT"),
                          ("slot_count", "TASKRING_PARTITIONS"), ("route_threshold_ms", "TASKRING_ROUTE_THRESHOLD_MS"),
                          ("enqueued_grace_ms", "TASKRING_ENQUEUED_GRACE_MS"),
                          ("tokens_reload_ms", "TASKRING_TOKENS_RELOAD_MS"),
                          ("policies_reload_ms", "TASKRING_POLICIES_RELOAD_MS"),
                          ("recovery_grace_ms", "TASKRING_RECOVERY_GRACE_MS"),
                          ("recovery_interval_ms", "TASKRING_RECOVERY_INTERVAL_MS"),
                          ("heap_capacity", "TASKRING_HEAP_CAPACITY"),
                          ("admission_max_wait_ms", "TASKRING_ADMISSION_MAX_WAIT_MS"),
                          ("admission_max_unread_count", "TASKRING_ADMISSION_MAX_UNREAD"),
                          ("cron_tick_ms", "TASKRING_CRON_TICK_MS"), ("cron_lead_ms", "TASKRING_CRON_LEAD_MS"),
                          ("cron_missed_after_ms", "TASKRING_CRON_MISSED_AFTER_MS"),
                          ("dispatch_batch", "TASKRING_DISPATCH_BATCH"), ("outcome_batch", "TASKRING_OUTCOME_BATCH"),
                          ("graph_check_ms", "TASKRING_GRAPH_CHECK_MS"),
                          ("graph_stuck_after_ms", "TASKRING_GRAPH_STUCK_AFTER_MS")):
            if var in env:
                values[name] = _int_env(env, var, 0)
        for name, var in (("floor_share_low", "TASKRING_FLOOR_SHARE_LOW"),
                          ("floor_share_normal", "TASKRING_FLOOR_SHARE_NORMAL"),
                          ("high_reserve_share", "TASKRING_HIGH_RESERVE_SHARE")):
            if var in env:
                values[name] = _float_env(env, var)
        if "TASKRING_EXECUTOR_STREAMS" in env:
            flag = env["TASKRING_EXECUTOR_STREAMS"].strip().lower()
            if flag not in ("0", "1", "true", "false"):
                raise ValueError(f"TASKRING_EXECUTOR_STREAMS: must be 1 or 0 (true or false), got {flag!r}")
            values["executor_streams"] = flag in ("1", "true")
        if env.get("TASKRING_SLOT_SHARDS"):
            values["slot_shards"] = parse_slot_shards(env["TASKRING_SLOT_SHARDS"],
                                                      int(values.get("slot_count", cls.slot_count)))
        values.update(overrides)
        return cls(**values)
