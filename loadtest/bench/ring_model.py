"""The ring model: how many slots one join or leave moves, over many node-name sets.

Pure computation (cluster.ring.desired_owners), no cluster: the moved fraction of each
join N -> N+1 against the ideal 1/(N+1), for 16 and 64 slots, and how evenly the
slots spread over the nodes.
"""
from __future__ import annotations

import random
import statistics
import time
from collections import Counter, defaultdict
from typing import Any

from cluster.ring import desired_owners


def ring_model(sets_per_family: int = 100, max_nodes: int = 8, seed: int = 7) -> dict[str, Any]:
    """Moved fraction for joins N -> N+1 over many name sets, 16 and 64 slots.

    desired_owners(m, 16) is the first 16 slots of desired_owners(m, 64) (slot s is
    looked up by the key "slot-s"), so one ring per member set serves both. A
    leave N+1 -> N with the same names moves exactly the slots the join moved."""
    rng = random.Random(seed)
    families: dict[str, list[list[str]]] = {
        "random": [[f"node-{rng.getrandbits(32):08x}" for _ in range(max_nodes)] for _ in range(sets_per_family)],
        "sequential": [[f"{p}-{i}" for i in range(max_nodes)]
                       for p in (f"taskring-{rng.getrandbits(24):06x}" for _ in range(sets_per_family))],
        "n1..n8": [[f"n{i}" for i in range(1, max_nodes + 1)]],
    }
    t0 = time.perf_counter()
    stats: dict[tuple[int, int], list[float]] = defaultdict(list)       # (slots, N before) -> moved fractions
    shares: dict[tuple[int, int], list[float]] = defaultdict(list)      # (slots, N) -> largest share
    smallest: dict[tuple[int, int], list[float]] = defaultdict(list)    # (slots, N) -> smallest share (0: idle node)
    foreign = 0
    transitions = 0
    n1_to_n8: dict[str, Any] = {}
    for fam, sets in families.items():
        for names in sets:
            maps = [desired_owners(names[:k], 64) for k in range(1, max_nodes + 1)]
            for k in range(1, max_nodes + 1):
                for slots in (16, 64):
                    c = Counter(maps[k - 1][s] for s in range(slots))
                    shares[(slots, k)].append(max(c.values()) / slots)
                    smallest[(slots, k)].append(min(c.get(n, 0) for n in names[:k]) / slots)
            for k in range(1, max_nodes):
                joiner = names[k]
                for slots in (16, 64):
                    moved = [s for s in range(slots) if maps[k - 1][s] != maps[k][s]]
                    transitions += 1
                    foreign += sum(1 for s in moved if maps[k][s] != joiner)
                    stats[(slots, k)].append(len(moved) / slots)
                    if fam == "n1..n8":
                        n1_to_n8[f"{slots}:{k}->{k + 1}"] = len(moved)
    rows = []
    for (slots, k), fr in sorted(stats.items()):
        rows.append({"slots": slots, "from": k, "to": k + 1, "ideal": 1 / (k + 1), "sets": len(fr),
                     "mean": statistics.mean(fr), "min": min(fr), "max": max(fr),
                     "stdev": statistics.pstdev(fr), "joins_moving_nothing": sum(1 for f in fr if f == 0),
                     "share_of_largest_owner_after_mean": statistics.mean(shares[(slots, k + 1)]),
                     "share_of_largest_owner_after_max": max(shares[(slots, k + 1)]),
                     "share_of_smallest_owner_after_mean": statistics.mean(smallest[(slots, k + 1)]),
                     "sets_with_an_idle_node_after": sum(1 for x in smallest[(slots, k + 1)] if x == 0)})
    return {"sets": {f: len(s) for f, s in families.items()}, "rows": rows,
            "moves_to_a_node_other_than_the_joiner": foreign, "transitions": transitions,
            "n1_to_n8_moved_slots": n1_to_n8, "seconds": time.perf_counter() - t0}

