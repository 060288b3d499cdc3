"""A cluster of dispatcher processes under steady load, for the ownership tests."""
from __future__ import annotations

import random
import signal
import threading
import uuid

from cluster.slots import slot_of
from harness.clients import RoundRobinClients
from harness.executors import RecordingExecutor
from harness.processes import NodeProcess
from harness.ringcheck import settled_owners
from harness.wait import wait_until
from harness.world import World
from taskring import TaskSpec

SESSION_TIMEOUT_MS = 3000
ROUTE_THRESHOLD_MS = 1500


def spec_id(spec: TaskSpec) -> str:
    """The task_id of a spec made with one (the load generators make every spec so)."""
    assert spec.task_id is not None, "a load generator's TaskSpec has a task_id"
    return spec.task_id


class Cluster:
    def __init__(self, env: World, **node_env: str):
        self.env = env
        self.node_env = {"TASKRING_ZK_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
                         "TASKRING_ROUTE_THRESHOLD_MS": str(ROUTE_THRESHOLD_MS), **node_env}
        self.nodes: dict[str, NodeProcess] = {}

    def add(self, node_id: str, **extra_env: str) -> NodeProcess:
        # mypy matches a **dict[str, str] against every keyword parameter (single=, grpc_port=, ...);
        # these keys are environment variables (TASKRING_*), which land in NodeProcess's **extra_env.
        node = NodeProcess(self.env, node_id, **{**self.node_env, **extra_env}).start()  # type: ignore[arg-type]
        self.nodes[node_id] = node
        return node

    def live(self) -> list[NodeProcess]:
        return [n for n in self.nodes.values() if n.alive()]

    def ring(self, via: NodeProcess | None = None) -> dict:
        for node in ([via] if via else self.live()):
            try:
                return node.get("/ring")
            except Exception:
                continue
        raise AssertionError("no live node answered /ring")

    def owners(self, via: NodeProcess | None = None) -> dict[int, str | None]:
        return {s["slot"]: s["actual_owner"] for s in self.ring(via)["slots"]}

    def settled(self, members: set[str], via: NodeProcess | None = None) -> dict[int, str] | None:
        """The owner map once every slot is owned by its desired owner among `members`."""
        try:
            return settled_owners(self.ring(via), members)
        except AssertionError:
            return None

    def wait_settled(self, members: set[str], timeout_s: float = 30.0, via: NodeProcess | None = None):
        return wait_until(lambda: self.settled(members, via), timeout_s, f"the ring to settle on {sorted(members)}",
                          0.1)

    def stop_all(self) -> None:
        for node in self.live():
            node.resume()
            node.signal(signal.SIGUSR1)  # every thread's stack into its log, for post-mortems
        for node in self.nodes.values():
            node.stop(timeout_s=30)


class LoadGenerator:
    """Submits small batches at a steady rate to the nodes in `targets`, with
    client-chosen task_ids, spread over many task types (hence slots) and over
    both paths. `acked` holds every task_id a node acknowledged."""

    def __init__(self, env: World, targets: list[NodeProcess], ns: str = "tests",
                 batch: int = 10, interval_s: float = 0.02, long_delay_share: float = 0.2):
        self.env = env
        self.targets = list(targets)
        self.ns = ns
        self.batch = batch
        self.interval_s = interval_s
        self.long_delay_share = long_delay_share
        self.acked: set[str] = set()
        self.unknown: set[str] = set()
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)
        self._rng = random.Random(11)

    def slot_of_task(self) -> dict[str, int]:
        rows = self.env.sql_all("SELECT task_id, slot FROM tasks")
        return dict(rows)

    def start(self) -> LoadGenerator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _spec(self) -> TaskSpec:
        task_type = self._rng.choice(RecordingExecutor.SPREAD_TYPES)
        if self._rng.random() < self.long_delay_share:
            delay = self._rng.uniform(2.0, 3.0)          # MySQL path
        else:
            delay = self._rng.choice([0, 0, self._rng.uniform(0.1, 1.0)])  # Kafka path
        return TaskSpec(self.ns, task_type, {}, task_id=str(uuid.uuid4()), delay=delay)

    def _run(self) -> None:
        clients = RoundRobinClients(lambda: self.targets)
        try:
            while not self._stop.is_set():
                turn = clients.next()
                if turn:
                    specs = [self._spec() for _ in range(self.batch)]
                    try:
                        results = turn[1].submit_batch(specs)
                        self.acked.update(r.task_id for r in results)
                    except Exception:
                        self.errors += 1
                        self.unknown.update(spec_id(s) for s in specs)
                self._stop.wait(self.interval_s)
        finally:
            clients.close()


class ZkOwners:
    """Reads the actual owners straight from the claim znodes (/owners/<slot>),
    without the admin view's cache: for measuring how fast slots are re-owned."""

    def __init__(self, env: World):
        from kazoo.client import KazooClient
        self._zk = KazooClient(hosts=env.zk_hosts)
        self._zk.start(timeout=15)

    def owners(self) -> dict[int, str]:
        import json

        from kazoo.exceptions import NoNodeError
        out = {}
        for child in self._zk.get_children("/owners"):
            try:
                data, _ = self._zk.get(f"/owners/{child}")
            except NoNodeError:
                continue
            claim = json.loads(data or b"{}")
            if claim.get("epoch") is not None:
                out[int(child)] = claim["node"]
        return out

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()


def all_terminal(env: World) -> bool:
    counts = env.status_counts()
    return sum(v for k, v in counts.items() if k not in ("succeeded", "dead_lettered", "cancelled")) == 0


def assert_nothing_lost(env: World, load: LoadGenerator, timeout_s: float = 90.0) -> dict[str, int]:
    """Every acknowledged task exists and every stored task reaches succeeded."""
    try:
        wait_until(lambda: all_terminal(env), timeout_s, "every stored task to reach a terminal state", 0.25)
    except AssertionError as exc:
        stuck = env.sql_all("SELECT slot, status, attempts, epoch, trigger_at, COUNT(*) FROM tasks"
                        " WHERE status NOT IN ('succeeded', 'dead_lettered', 'cancelled')"
                        " GROUP BY slot, status, attempts, epoch ORDER BY slot LIMIT 20")
        raise AssertionError(f"{exc}; stuck (slot, status, attempts, epoch, trigger_at, n): {stuck};"
                             f" owners: {env.sql_all('SELECT slot, epoch, owner FROM slot_owners')}") from None
    stored = {tid: status for tid, status in env.sql_all("SELECT task_id, status FROM tasks")}
    missing = load.acked - set(stored)
    assert not missing, f"{len(missing)} acknowledged tasks were never stored"
    not_ok = {tid: s for tid, s in stored.items() if s != "succeeded"}
    assert not not_ok, f"tasks not succeeded: {list(not_ok.items())[:5]}"
    return {"acked": len(load.acked), "stored": len(stored)}


def slots_of(env: World, task_ids) -> dict[str, int]:
    if not task_ids:
        return {}
    partitions = env.partitions
    assert partitions is not None, "slots_of: the world has topics of its own (partitions set)"
    return {tid: slot_of("tests", tt, partitions) for tid, tt in env.sql_all("SELECT task_id, task_type FROM tasks")}
