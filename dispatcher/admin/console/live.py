"""What the console's live page shows, shaped from the ring snapshot (cached briefly by
RingView, so a console refreshing every few seconds adds no store queries of its own) and
this node's status: queue depth per path (Kafka lag is the Kafka path's backlog, MySQL
pending the MySQL path's), slots, lag and pending per slot and per node, and what this
node holds in memory."""
from __future__ import annotations


def live_view(ring: dict, status: dict) -> dict:
    slots = []
    per_node: dict[str, dict] = {str(m): _node_line(str(m)) for m in ring.get("members", {})}
    for s in ring.get("slots", []):
        owner = s.get("actual_owner")
        slots.append({"slot": s["slot"], "owner": owner, "desired_owner": s.get("desired_owner"),
                      "moving": s.get("desired_owner") != owner, "kafka_lag": s.get("kafka_lag_total", 0),
                      "kafka_lag_by_topic": s.get("kafka_lag", {}), "mysql_pending": s.get("mysql_pending", 0)})
        # A slot whose owner left the members (or none yet) still counts, under its owner's name.
        name = "(unowned)" if owner is None else str(owner)
        line = per_node.setdefault(name, _node_line(name, member=False))
        line["slots"].append(s["slot"])
        line["kafka_lag"] += s.get("kafka_lag_total", 0)
        line["mysql_pending"] += s.get("mysql_pending", 0)
    kafka = sum(s["kafka_lag"] for s in slots)
    mysql = sum(s["mysql_pending"] for s in slots)
    return {
        "node": ring.get("node"),
        "zookeeper_session": ring.get("zookeeper_session"),
        "generated_at": ring.get("generated_at"),
        "nodes": [per_node[n] for n in sorted(per_node)],
        "slots": slots,
        "totals": {"kafka_lag": kafka, "mysql_pending": mysql, "queue_depth": kafka + mysql,
                   "slots": len(slots), "moving": sum(1 for s in slots if s["moving"])},
        "this_node": {"node_id": status.get("node_id"), "heap_size": status.get("heap_size"),
                      "in_flight": status.get("in_flight"), "owned_slots": len(status.get("owned_slots", [])),
                      "serving": status.get("serving"), "held": status.get("held")},
    }


def _node_line(name: str, *, member: bool = True) -> dict:
    return {"node": name, "member": member, "slots": [], "kafka_lag": 0, "mysql_pending": 0}
