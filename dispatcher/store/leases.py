"""The statements of the store's slot leases (migrations/012_slot_leases.sql; the protocol is
cluster/coordinator.py's "Leases"). Each runs inside the caller's transaction (`cur`), and
reads the server's clock (NOW(3)), never a node's. claim_slot locks slot_owners before
slot_leases, and so does release_slot: keep that order.
"""
from __future__ import annotations

from cluster.interface import LOST, RENEWED, WANTED, SlotLeased
from dispatcher.store.sql_literals import marks


def refused_claim(cur, slot: int, node: str) -> SlotLeased | None:
    """Lock the slot's lease; while another node's is live, mark the slot wanted by `node`
    and return the refusal (the caller commits the mark, then raises it)."""
    cur.execute("INSERT IGNORE INTO slot_leases (slot) VALUES (%s)", (slot,))
    cur.execute("SELECT owner, TIMESTAMPDIFF(MICROSECOND, NOW(3), lease_until) FROM slot_leases"
                " WHERE slot = %s FOR UPDATE", (slot,))
    holder, remaining_us = cur.fetchone()
    if holder in ("", node) or remaining_us is None or remaining_us <= 0:
        return None
    cur.execute("UPDATE slot_leases SET wanted_by = %s WHERE slot = %s", (node, slot))
    return SlotLeased(slot, holder, -(-remaining_us // 1000))


def grant(cur, slot: int, node: str, epoch: int, lease_ms: int) -> None:
    """The claimed slot's lease: `node`'s under `epoch` for `lease_ms`, wanted by nobody."""
    cur.execute("UPDATE slot_leases SET owner = %s, epoch = %s, wanted_by = '',"
                " lease_until = NOW(3) + INTERVAL %s MICROSECOND WHERE slot = %s",
                (node, epoch, lease_ms * 1000, slot))


def end(cur, slot: int, epoch: int) -> None:
    """A released slot's lease ends with it: whoever wants the slot may claim it at once."""
    cur.execute("UPDATE slot_leases SET owner = '', lease_until = NULL, wanted_by = ''"
                " WHERE slot = %s AND epoch = %s", (slot, epoch))


def renew(cur, node: str, epochs: dict[int, int], lease_ms: int) -> dict[int, str]:
    """Extend `node`'s leases held under `epochs`; RENEWED, WANTED or LOST for each slot."""
    slots = sorted(epochs)
    pairs = ",".join(f"({int(s)},{int(epochs[s])})" for s in slots)
    cur.execute("UPDATE slot_leases SET lease_until = NOW(3) + INTERVAL %s MICROSECOND"
                f" WHERE owner = %s AND (slot, epoch) IN ({pairs})", (lease_ms * 1000, node))
    cur.execute(f"SELECT slot, owner, epoch, wanted_by FROM slot_leases WHERE slot IN ({marks(len(slots))})", slots)
    found = {slot: (owner, epoch, wanted) for slot, owner, epoch, wanted in cur.fetchall()}
    out: dict[int, str] = {}
    for slot in slots:
        owner, epoch, wanted = found.get(slot, ("", 0, ""))
        out[slot] = LOST if (owner, epoch) != (node, epochs[slot]) else WANTED if wanted else RENEWED
    return out
