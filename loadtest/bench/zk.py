"""Who owns what, as ZooKeeper and a node's /ring say, polled from the benchmark.

- `ZkObserver`: polls the chroot's /nodes and /owners/<slot> every 50 ms on a session
  of its own and keeps a sample whenever something changed; its connection states
  are kept too (LOST or SUSPENDED is stack trouble, not the cluster's).
- `RingPoller`: GET /ring of one node every 50 ms (the node caches it ~1 s).
- `settled_pred`: harness/ringcheck.py's settled check, on a ZooKeeper sample.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from harness.ringcheck import ring_problems, zk_ring_view
from harness.wait import wait_until
from loadtest.bench.env import SLOTS


@dataclasses.dataclass
class ZkSample:
    t: float                                   # wall time when the poll finished
    members: dict[str, int]                    # node_id -> ctime_ms of /nodes/<id>
    owners: dict[int, tuple]                   # slot -> (node, epoch, ctime_ms, mtime_ms)


class ZkObserver(threading.Thread):
    """Polls /nodes and /owners/<slot> of the chroot every `interval_s` and keeps a
    sample whenever something changed."""

    def __init__(self, hosts: str, interval_s: float = 0.05):
        super().__init__(name="zk-observer", daemon=True)
        self.hosts = hosts
        self.interval_s = interval_s
        # the observer's own connection: LOST/SUSPENDED = stack trouble
        self.states: list[tuple[float, str]] = []
        self.samples: list[ZkSample] = []
        self.poll_ms: list[float] = []
        self.errors = 0
        self._zk: Any = None
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Connect (a session of its own), then poll in this thread until stop()."""
        from kazoo.client import KazooClient
        self._zk = KazooClient(hosts=self.hosts, timeout=10)
        self._zk.add_listener(lambda state: self.states.append((time.time(), str(state))))
        self._zk.start(timeout=15)
        self._zk.ensure_path("/owners")
        self._zk.ensure_path("/nodes")
        super().start()

    def _poll(self) -> ZkSample:
        from kazoo.exceptions import NoNodeError
        zk = self._zk
        kids = zk.get_children("/owners")
        nodes = zk.get_children("/nodes")
        a_own = [(c, zk.get_async(f"/owners/{c}")) for c in kids]
        a_nodes = [(n, zk.exists_async(f"/nodes/{n}")) for n in nodes]
        owners = {}
        for c, a in a_own:
            try:
                data, st = a.get(timeout=5)
            except NoNodeError:
                continue
            try:
                d = json.loads(data or b"{}")
            except ValueError:
                d = {}
            owners[int(c)] = (d.get("node"), d.get("epoch"), st.ctime, st.mtime)
        members = {}
        for n, a in a_nodes:
            st = a.get(timeout=5)
            if st is not None:
                members[n] = st.ctime
        return ZkSample(time.time(), members, owners)

    def run(self) -> None:
        last = None
        while not self._halt.is_set():
            t0 = time.perf_counter()
            try:
                s = self._poll()
            except Exception:
                self.errors += 1
                self._halt.wait(self.interval_s)
                continue
            self.poll_ms.append((time.perf_counter() - t0) * 1000)
            key = (s.members, s.owners)
            with self._lock:
                if key != last:                     # unchanged: keep the first-seen time
                    self.samples.append(s)
                    last = key
            self._halt.wait(max(0.0, self.interval_s - (time.perf_counter() - t0)))

    def stop(self) -> None:
        """Safe before start() and twice."""
        self._halt.set()
        if self.is_alive():
            self.join(5)
        zk, self._zk = self._zk, None
        if zk is not None:
            zk.stop()
            zk.close()

    def latest(self) -> ZkSample | None:
        with self._lock:
            return self.samples[-1] if self.samples else None

    def since(self, t: float) -> list[ZkSample]:
        """Samples from the state current at `t` on (that one stamped with its own time)."""
        with self._lock:
            out = [s for s in self.samples if s.t >= t]
            before = [s for s in self.samples if s.t < t]
        return ([before[-1]] if before else []) + out

    def wait(self, pred: Callable[[ZkSample], bool], since: float, timeout_s: float, what: str) -> ZkSample:
        """The first sample, from the state at `since` on, for which pred holds."""
        def first() -> ZkSample | None:
            return next((dataclasses.replace(s, t=max(s.t, since)) for s in self.since(since) if pred(s)), None)
        try:
            return wait_until(first, timeout_s, what, 0.02)
        except AssertionError as exc:
            raise TimeoutError(f"{exc}; latest: {self.latest()}") from None


def settled_pred(members: set[str]) -> Callable[[ZkSample], bool]:
    """harness/ringcheck.py's check, on what ZooKeeper holds."""
    def pred(s: ZkSample) -> bool:
        return not ring_problems(zk_ring_view(s.members, s.owners, SLOTS), members)
    return pred


class RingPoller(threading.Thread):
    """GET /ring of one node every 50 ms; keeps (t_received, generated_at, {slot: actual_owner})."""

    def __init__(self, admin_url: str, interval_s: float = 0.05):
        super().__init__(name="ring-poller", daemon=True)
        self.url = admin_url + "/ring"
        self.interval_s = interval_s
        self.polls: list[tuple[float, float | None, dict[int, str | None]]] = []
        self.errors = 0
        self.request_ms: list[float] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=3) as r:
                    ring = json.loads(r.read())
                self.polls.append((time.time(), ring.get("generated_at"),
                                   {s["slot"]: s["actual_owner"] for s in ring["slots"]}))
                self.request_ms.append((time.perf_counter() - t0) * 1000)
            except Exception:
                self.errors += 1
            self._halt.wait(max(0.0, self.interval_s - (time.perf_counter() - t0)))

    def stop(self) -> None:
        """Safe before start() and twice."""
        self._halt.set()
        if self.is_alive():
            self.join(5)

    def first(self, pred: Callable[[dict], bool], since: float) -> tuple[float | None, float | None]:
        """(received, generated_at) of the first poll since `since` whose owners satisfy pred."""
        for t, gen, owners in self.polls:
            if t >= since and pred(owners):
                return t, gen
        return None, None


def get_json(url: str, timeout_s: float = 3.0) -> dict:
    """GET a JSON document (a node's admin endpoint)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return json.loads(r.read())

