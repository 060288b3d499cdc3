"""The ring as SREs see it: for every slot its desired owner, actual owner and
epoch, the task types in it, Kafka lag and MySQL pending count. Built on demand
(cached briefly) from the ownership layer, the store and Kafka's watermarks, so
every node shows the same cluster-wide picture."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from dispatcher.store.interface import TaskStoreProtocol


class RingView:
    def __init__(self, *, node_id: str, slot_count: int, topics: Sequence[str], store: TaskStoreProtocol,
                 high_watermarks: Callable[[], dict[tuple[str, int], int]],
                 ownership_snapshot: Callable[[], dict], node_status: Callable[[], dict], cache_s: float = 1.0):
        self._node_id = node_id
        self._slot_count = slot_count
        self._topics = tuple(topics)
        self._store = store
        self._high_watermarks = high_watermarks
        self._ownership_snapshot = ownership_snapshot
        self._node_status = node_status
        self._cache_s = cache_s
        self._lock = threading.Lock()
        self._cached: tuple[float, dict] | None = None

    def snapshot(self) -> dict:
        with self._lock:
            now = time.monotonic()
            if self._cached is not None and now - self._cached[0] < self._cache_s:
                return self._cached[1]
            data = self._build()
            self._cached = (now, data)
            return data

    def _build(self) -> dict:
        own = self._ownership_snapshot()
        pending = self._store.pending_by_slot()
        types = self._store.task_types_by_slot()
        committed = self._store.committed_offsets()
        epochs = self._store.slot_owners()
        try:
            highs = self._high_watermarks()
        except Exception:
            highs = {}
        slots = []
        for slot in range(self._slot_count):
            claim = own.get("claims", {}).get(slot, {})
            lag = {}
            for topic in self._topics:
                high = highs.get((topic, slot))
                if high is not None and high >= 0:
                    lag[topic.rsplit(".", 1)[-1]] = max(0, high - committed.get((topic, slot), 0))
            slots.append({
                "slot": slot,
                "desired_owner": own.get("desired", {}).get(slot),
                "actual_owner": claim.get("node"),
                "epoch": claim.get("epoch") if claim.get("epoch") is not None else epochs.get(slot, (None,))[0],
                "task_types": types.get(slot, []),
                "kafka_lag": lag,
                "kafka_lag_total": sum(lag.values()),
                "mysql_pending": pending.get(slot, 0),
            })
        return {
            "node": self._node_id,
            "zookeeper_session": own.get("session"),
            "members": own.get("members", {}),
            "owned_here": sorted(own.get("owned", {})),
            "node_status": self._node_status(),
            "slots": slots,
            "generated_at": time.time(),
        }
