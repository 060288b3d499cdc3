"""SlotClaims: ephemeral claim znodes, one per slot, that say who actually owns it.

    /owners/<slot>    ephemeral, data = JSON object ({"node", "epoch"})

The ownership protocol (cluster/coordinator.py) decides when to claim, hand off
or drop a slot; this class is only the ZooKeeper side of it, so that kazoo's
client and threads stay inside membership/ like everywhere else:

- create() is the claim itself. ZooKeeper's create is atomic, so of two nodes
  racing for a free slot exactly one gets True.
- delete_own() deletes a claim only if this session made it and its data names
  this node. A claim left by an earlier session of ours, or made by another
  node, is never deleted: it vanishes with its session.
- on_change runs on a Mailbox thread of ours whenever the list of claims
  changes (kazoo's ChildrenWatch tells its event thread; we only hand over).

Every call blocks on ZooKeeper (the coordinator runs them off its event loop).
A claim's data is written in two steps (create with epoch null, then set with
the epoch the store granted), and data changes are not watched: readers that
need the epoch read it with read_all().
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable

from kazoo.exceptions import NodeExistsError, NoNodeError

from .dispatch import Mailbox
from .paths import OWNERS_ROOT, check_segment
from .session import ZkSession

log = logging.getLogger(__name__)


class SlotClaims:
    def __init__(self, session: ZkSession, node_id: str):
        self._session = session
        self._node_id = check_segment("node_id", node_id)
        self._worker = Mailbox(f"taskring-claims-{node_id}")
        self._on_change: Callable[[], None] | None = None
        self._stopped = False

    def start(self, on_change: Callable[[], None]) -> None:
        """Ensure the parent znode and watch its children (blocking)."""
        self._on_change = on_change
        self._stopped = False
        self._worker.start()
        client = self._session.client
        client.ensure_path(OWNERS_ROOT)
        client.ChildrenWatch(OWNERS_ROOT)(self._on_children)

    def stop(self) -> None:
        """End the watch (at its next event) and the callback thread."""
        self._stopped = True
        self._worker.stop()

    def _on_children(self, _children: list[str]) -> bool:
        # On kazoo's event thread: hand over and return at once.
        if not self._stopped and self._on_change is not None:
            self._worker.submit(self._on_change)
        return not self._stopped  # False ends kazoo's watch

    # -- the claims --------------------------------------------------------------

    def read_all(self) -> dict[int, dict]:
        """slot -> claim data of every claim, whoever made it ({} for unreadable data)."""
        client = self._session.client
        claims: dict[int, dict] = {}
        for child in client.get_children(OWNERS_ROOT):
            try:
                data, _stat = client.get(f"{OWNERS_ROOT}/{child}")
            except NoNodeError:
                continue  # released between the list and the read
            try:
                slot = int(child)
            except ValueError:
                log.warning("%s/%s: not a slot number; ignored", OWNERS_ROOT, child)
                continue
            claims[slot] = _parse(data)
        return claims

    def create(self, slot: int, data: dict) -> bool:
        """Claim `slot` for this node; False if anyone (us included) already holds it."""
        try:
            self._session.client.create(_path(slot), _encode(data), ephemeral=True)
        except NodeExistsError:
            return False
        return True

    def update(self, slot: int, data: dict) -> None:
        """Rewrite the data of our claim of `slot` (the epoch, once the store granted it)."""
        self._session.client.set(_path(slot), _encode(data))

    def delete_own(self, slot: int) -> None:
        """Delete our claim of `slot`: only if our current session made it and it names us."""
        client = self._session.client
        try:
            data, stat = client.get(_path(slot))
            if _parse(data).get("node") == self._node_id and stat.ephemeralOwner == self._session.session_id:
                client.delete(_path(slot), version=stat.version)
        except NoNodeError:
            pass


def _path(slot: int) -> str:
    return f"{OWNERS_ROOT}/{int(slot)}"


def _encode(data: dict) -> bytes:
    return json.dumps(data).encode()


def _parse(data: bytes | None) -> dict:
    try:
        value = json.loads(data or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
