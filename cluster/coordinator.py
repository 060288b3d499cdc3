"""Who owns what, in a cluster: the ring says who should own a slot, a claim says
who does, and an epoch fences everyone else.

Design note
-----------
Znodes (under the cluster's chroot):

    /nodes/<node_id>      ephemeral, one per live node (membership.NodeRegistry)
    /owners/<slot>        ephemeral, the actual owner of a slot: {"node", "epoch"}

Every node runs the same reconcile step whenever membership, the owner znodes
or its session change (and once a second regardless):

    desired = ring(live members)                      cluster/ring.py, pure
    for a slot I own whose desired owner is another live node:
        revoke: stop intake, let in-flight attempts finish, commit the Kafka
        watermark, give heap rows back (store.release_slot), delete the znode
    for a slot desired mine that nobody claims:
        create /owners/<slot> (ephemeral; NodeExists = someone else was first),
        then bump the slot's epoch in MySQL (store.claim_slot) and start it

Cooperative handoff falls out of the znode: the new owner cannot claim until the
old owner has revoked and deleted it, so a slot never has two willing owners. A
crashed owner's znode vanishes with its session (session timeout plus a tick),
and the claim that follows bumps the epoch, so anything the crashed or frozen
process still tries to write for the slot is refused by the store (see
dispatcher/store/mysql.py).

Session states (membership/session.py):

    SUSPENDED  the connection dropped; the session may still be alive, or not.
               Hold at once: take no new work, finish what is in flight. If the
               suspension outlasts the session timeout, the server has expired
               the session and others may own our slots: drop them all, writing
               nothing more.
    CONNECTED  (same session) resume; ownership did not change.
    LOST / new session  our znodes are gone: we own nothing until we claim again.

The server expires a silent session only after the full timeout, while kazoo
reports SUSPENDED after missing pings (about two thirds of it), so a node cut
off from ZooKeeper stops acting before anyone else can claim its slots.
"""
from __future__ import annotations

import asyncio
import collections
import logging

from cluster.interface import Clock, Move, SlotListener, SlotRecords
from cluster.ring import desired_owners
from membership.claims import SlotClaims
from membership.interface import SessionEvent, SessionState, describe_session
from membership.nodes import NodeRegistry
from membership.session import ZkSession

log = logging.getLogger(__name__)

_RECONCILE_EVERY_S = 1.0
_MOVES_KEPT = 200


async def _all(coroutines) -> None:
    """Run per-slot steps concurrently (a handoff of N slots costs one slot's time,
    not N); one slot's failure is logged and does not stop the others."""
    for result in await asyncio.gather(*coroutines, return_exceptions=True):
        if isinstance(result, Exception):
            log.error("slot step failed", exc_info=result)


class ClusterOwnership:
    """The ownership protocol above, for one node. node_info is what the node
    advertises in its /nodes znode (its gRPC address and admin port)."""

    def __init__(self, *, node_id: str, slot_count: int, session: ZkSession, records: SlotRecords,
                 listener: SlotListener, clock: Clock, node_info: dict):
        self._session = session
        self._records = records
        self._listener = listener
        self._clock = clock
        self._node_id = node_id
        self._slot_count = slot_count
        self._registry = NodeRegistry(session, node_id, node_info)
        self._claim_board = SlotClaims(session, node_id)
        self._owned: dict[int, int] = {}          # slot -> epoch
        self._members: dict[str, dict] = {}
        self._claims: dict[int, dict] = {}        # slot -> owner znode data (any node)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kick = asyncio.Event()  # binds to the loop on first use
        self._task: asyncio.Task | None = None
        self._generation_seen = 0
        self._stopping = False
        self.moves: collections.deque[Move] = collections.deque(maxlen=_MOVES_KEPT)

    # ---- lifecycle ----

    async def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._session.add_listener(self._on_session)
        await asyncio.to_thread(self._claim_board.start, self._kick_threadsafe)
        self._registry.add_members_listener(self._on_members)
        await asyncio.to_thread(self._registry.start)
        self._members = self._registry.members()
        self._generation_seen = self._session.session_generation
        self._task = asyncio.create_task(self._run(), name="ownership")

    async def stop(self) -> None:
        """Leave the ring first (others recompute), then hand every slot off cleanly."""
        if self._task is None or self._stopping:
            return
        self._stopping = True
        await asyncio.to_thread(self._registry.stop)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await _all(self._revoke(slot, clean=True) for slot in list(self._owned))
        self._session.remove_listener(self._on_session)
        await asyncio.to_thread(self._claim_board.stop)

    def slot_lost(self, slot: int) -> None:
        """The store refused our epoch: someone claimed the slot after us."""
        if self._owned.pop(slot, None) is not None:
            self._moved(slot, "lost")
            self._delete_claim_soon(slot)

    def owned(self) -> dict[int, int]:
        return dict(self._owned)

    # ---- events from kazoo's side (never block; hop onto the loop) ----

    def _kick_threadsafe(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._kick.set)

    def _on_members(self, members: dict[str, dict]) -> None:
        self._members = dict(members)
        self._kick_threadsafe()

    def _on_session(self, event: SessionEvent) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._session_changed, event)

    def _session_changed(self, event: SessionEvent) -> None:
        if event.new_state == SessionState.SUSPENDED:
            log.warning("zookeeper suspended: holding all work")
            self._listener.hold(True)
        elif event.new_state == SessionState.CONNECTED:
            self._listener.hold(False)
        self._kick.set()

    # ---- the reconcile loop ----

    async def _run(self) -> None:
        while True:
            # Clear before reconciling: a kick that arrives while we reconcile
            # (say, an owner znode deleted mid-pass) must cause another pass.
            self._kick.clear()
            try:
                await self._reconcile()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._session.state != SessionState.CONNECTED or not self._session.has_lease():
                    # The connection is down or in doubt: a normal, retried event, not a fault of ours.
                    log.warning("ownership reconcile interrupted (zookeeper session %s: %s); retrying when it is back",
                                self._session.state, _brief(exc))
                else:
                    log.exception("ownership reconcile failed; retrying")
            try:
                await asyncio.wait_for(self._kick.wait(), _RECONCILE_EVERY_S)
            except TimeoutError:
                pass

    async def _reconcile(self) -> None:
        state = self._session.state
        if state == SessionState.SUSPENDED:
            # The timeout the server granted, not the one we asked for.
            timeout_s = self._session.session_timeout_ms / 1000
            if self._owned and self._session.suspended_for_s() >= timeout_s:
                log.warning("zookeeper suspended for over the session timeout: giving up %d slots",
                            len(self._owned))
                await self._drop_all()
            return
        if state != SessionState.CONNECTED:
            if self._owned:
                await self._drop_all()
            return
        if self._session.session_generation != self._generation_seen:
            # A new session: every claim we made died with the old one.
            self._generation_seen = self._session.session_generation
            await self._drop_all()
        self._listener.hold(False)
        self._claims = await asyncio.to_thread(self._claim_board.read_all)
        for slot, claim in list(self._claims.items()):
            if claim.get("node") == self._node_id and slot not in self._owned:
                # Ours but given up (e.g. a long SUSPENDED that the session survived):
                # delete it so the slot can be claimed afresh under a new epoch.
                await asyncio.to_thread(self._delete_claim, slot)
                self._claims.pop(slot)
        members = self._registry.members()
        self._members = members
        if self._node_id not in members:
            return  # not registered (yet): own nothing new
        desired = desired_owners(members, self._slot_count)
        # Revoke first: slots we hold that the ring gives to another live node.
        await _all(self._revoke(slot, clean=True) for slot in sorted(self._owned)
                   if desired.get(slot) != self._node_id)
        # Then claim what is ours and free.
        await _all(self._claim(slot) for slot in range(self._slot_count)
                   if desired.get(slot) == self._node_id and slot not in self._owned and slot not in self._claims)

    async def _claim(self, slot: int) -> None:
        if not await asyncio.to_thread(self._claim_board.create, slot, {"node": self._node_id, "epoch": None}):
            return
        try:
            epoch = await asyncio.to_thread(self._records.claim_slot, slot, self._node_id, self._clock.now())
        except Exception:
            log.exception("slot %d: epoch bump failed; releasing the claim", slot)
            await asyncio.to_thread(self._delete_claim, slot)
            return
        await asyncio.to_thread(self._claim_board.update, slot, {"node": self._node_id, "epoch": epoch})
        self._owned[slot] = epoch
        self._moved(slot, "assigned")
        log.info("slot %d: claimed under epoch %d", slot, epoch)
        await self._listener.slot_assigned(slot, epoch)

    async def _revoke(self, slot: int, *, clean: bool) -> None:
        if self._owned.pop(slot, None) is None:
            return
        await self._listener.slot_revoked(slot, clean=clean)
        self._moved(slot, "revoked" if clean else "lost")
        if clean:
            await asyncio.to_thread(self._delete_claim, slot)
        log.info("slot %d: %s", slot, "handed off" if clean else "dropped")

    async def _drop_all(self) -> None:
        await _all(self._revoke(slot, clean=False) for slot in list(self._owned))

    def _delete_claim(self, slot: int) -> None:
        try:
            self._claim_board.delete_own(slot)
        except Exception as exc:
            # An ephemeral claim goes with our session anyway; after a freeze past the
            # session it is already gone.
            log.warning("slot %d: could not delete our claim (%s); it goes when our session ends", slot, _brief(exc))

    def _moved(self, slot: int, kind: str) -> None:
        self.moves.append((self._clock.now_ms() / 1000, slot, kind))

    def _delete_claim_soon(self, slot: int) -> None:
        if self._loop is not None:
            self._loop.create_task(asyncio.to_thread(self._delete_claim, slot))

    # ---- observation (admin view) ----

    def snapshot(self) -> dict:
        desired = desired_owners(self._members, self._slot_count) if self._members else {}
        return {
            "node": self._node_id,
            "session": describe_session(self._session.state, self._session.has_lease()),
            "members": self._members,
            "desired": desired,
            "claims": dict(self._claims),
            "owned": dict(self._owned),
        }


def _brief(exc: BaseException) -> str:
    """An exception in one line: its type and its text, if any."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
