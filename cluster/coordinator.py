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

Leases (dispatcher/store/migrations/012_slot_leases.sql). ZooKeeper says who should own
a slot; the store says who does, until when. A claim leases the slot to its claimer for
`lease_ms` (two thirds of the session timeout, by the store's clock), and the owner
renews every slot it holds in one statement per store shard, `_RENEWALS_PER_LEASE` times
a lease. The owner dispatches only while its lease holds by its own monotonic clock,
counted from before the renewal was sent and only LEASE_FRACTION of it, so a frozen or
cut-off owner stops before the store lets anyone else claim. A claim is refused while
another node's lease is live, and marks the slot wanted: the owner's next renewal says
so, and it hands the slot over cleanly (release clears the lease). So:

    kill -9 / freeze   renewals stop; the lease lapses within lease_ms, before the
                       session expires, and the next owner claims as before
    ZooKeeper down     nothing can change hands (claims need ZooKeeper), and every
                       owner keeps dispatching under its store leases
    cut off from ZooKeeper alone
                       the others claim after its session expires, are refused, and
                       mark the slots wanted; its renewal says WANTED; it hands over

Session states (membership/session.py):

    SUSPENDED  the connection dropped; the session may still be alive, or not.
               Carry on under the store leases: if the server expires the session
               and others claim our slots, the renewals say so.
    CONNECTED  (same session) resume; ownership did not change.
    LOST / new session  our znodes are gone, our leases are not: keep the slots we
               still hold, put their claims back in the new session (same epoch),
               and hand over any that another node has claimed meanwhile.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable

from cluster.interface import LOST, WANTED, Clock, Move, SlotLeased, SlotListener, SlotRecords
from cluster.ring import desired_owners
from membership.claims import SlotClaims
from membership.interface import SessionEvent, SessionState
from membership.nodes import NodeRegistry
from membership.session import ZkSession

log = logging.getLogger(__name__)

_RECONCILE_EVERY_S = 1.0
_RENEWALS_PER_LEASE = 4
LEASE_FRACTION = 0.75
"""The share of a store lease this node counts on, from before the renewal was sent: the
rest covers the store's clock running faster than ours, and the statement's own time."""
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
                 listener: SlotListener, clock: Clock, node_info: dict, lease_ms: int,
                 monotonic: Callable[[], float] = time.monotonic):
        self._session = session
        self._lease_ms = lease_ms
        self._monotonic = monotonic
        self._records = records
        self._listener = listener
        self._clock = clock
        self._node_id = node_id
        self._slot_count = slot_count
        self._registry = NodeRegistry(session, node_id, node_info)
        self._claim_board = SlotClaims(session, node_id)
        self._owned: dict[int, int] = {}          # slot -> epoch
        self._revoking: dict[int, int] = {}       # slot -> epoch, while a clean handoff finishes
        self._lease_deadline: dict[int, float] = {}   # slot -> monotonic time our lease is good until
        self._members: dict[str, dict] = {}
        self._claims: dict[int, dict] = {}        # slot -> owner znode data (any node)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kick = asyncio.Event()  # binds to the loop on first use
        self._task: asyncio.Task | None = None
        self._renewer: asyncio.Task | None = None
        self._handoffs: set[asyncio.Task] = set()
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
        self._task = asyncio.create_task(self._run(), name="ownership")
        self._renewer = asyncio.create_task(self._renew_leases(), name="slot-leases")

    async def stop(self) -> None:
        """Leave the ring first (others recompute), then hand every slot off cleanly."""
        if self._task is None or self._stopping:
            return
        self._stopping = True
        await asyncio.to_thread(self._registry.stop)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        # The leases stay renewed while the handoffs below finish; then nothing is left.
        await _all(self._revoke(slot, clean=True) for slot in list(self._owned))
        await asyncio.gather(*self._handoffs, return_exceptions=True)
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
        self._session.remove_listener(self._on_session)
        await asyncio.to_thread(self._claim_board.stop)

    def slot_lost(self, slot: int) -> None:
        """The store refused our epoch: someone claimed the slot after us."""
        if self._owned.pop(slot, None) is not None:
            self._lease_deadline.pop(slot, None)
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
        if event.new_state in (SessionState.SUSPENDED, SessionState.LOST) and self._owned:
            log.warning("zookeeper session %s: dispatching on under the store leases of %d slots",
                        event.new_state, len(self._owned))
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
        if state == SessionState.STOPPED:
            if self._owned:
                await self._drop_all()
            return
        if state != SessionState.CONNECTED:
            return   # SUSPENDED or LOST: the store leases guard what we hold; wait for a session
        self._listener.hold(False)
        self._claims = await asyncio.to_thread(self._claim_board.read_all)
        for slot, claim in list(self._claims.items()):
            if claim.get("node") == self._node_id and slot not in self._owned:
                # Ours but given up (e.g. a long SUSPENDED that the session survived):
                # delete it so the slot can be claimed afresh under a new epoch.
                await asyncio.to_thread(self._delete_claim, slot)
                self._claims.pop(slot)
        # A new session lost our claims, not our slots: put each claim back (same epoch),
        # or hand the slot over to the node that claimed it meanwhile.
        await _all(self._reclaim(slot, epoch) for slot, epoch in sorted(self._owned.items())
                   if self._claims.get(slot, {}).get("node") != self._node_id)
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
        sent_at = self._monotonic()
        try:
            epoch = await asyncio.to_thread(self._records.claim_slot, slot, self._node_id, self._clock.now(),
                                            self._lease_ms)
        except SlotLeased as leased:
            # Its last owner still holds it in the store (cut off from ZooKeeper, or its
            # session just expired): it now hands it over, or its lease runs out; the
            # next reconcile pass claims again.
            log.info("slot %d: %s; asked it to hand over", slot, leased)
            await asyncio.to_thread(self._delete_claim, slot)
            return
        except Exception:
            log.exception("slot %d: epoch bump failed; releasing the claim", slot)
            await asyncio.to_thread(self._delete_claim, slot)
            return
        await asyncio.to_thread(self._claim_board.update, slot, {"node": self._node_id, "epoch": epoch})
        self._lease_deadline[slot] = sent_at + self._lease_ms / 1000 * LEASE_FRACTION
        self._owned[slot] = epoch
        self._moved(slot, "assigned")
        log.info("slot %d: claimed under epoch %d", slot, epoch)
        await self._listener.slot_assigned(slot, epoch)

    async def _reclaim(self, slot: int, epoch: int) -> None:
        """Our claim on a slot we hold is gone (a new session): make it again, unless
        another node has claimed the slot meanwhile; then hand it over."""
        if self._claims.get(slot) is None and await asyncio.to_thread(
                self._claim_board.create, slot, {"node": self._node_id, "epoch": epoch}):
            self._claims[slot] = {"node": self._node_id, "epoch": epoch}
            log.info("slot %d: claim made again in the new session, epoch %d", slot, epoch)
            return
        await self._revoke(slot, clean=True)

    async def _revoke(self, slot: int, *, clean: bool) -> None:
        epoch = self._owned.pop(slot, None)
        if epoch is None:
            return
        self._lease_deadline.pop(slot, None)
        if clean:
            self._revoking[slot] = epoch   # its lease is renewed until the handoff is done
        try:
            await self._listener.slot_revoked(slot, clean=clean)
        finally:
            self._revoking.pop(slot, None)
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

    # ---- the store leases ----

    def lease_remaining_s(self) -> float:
        """Seconds this node may still dispatch what it owns: until the first of its
        slots' leases runs out by our clock (0.0 once one has). Owning nothing, it
        has nothing to guard: a whole lease."""
        if not self._owned:
            return self._lease_ms / 1000 * LEASE_FRACTION
        now = self._monotonic()
        return max(0.0, min(self._lease_deadline.get(slot, now) for slot in self._owned) - now)

    async def _renew_leases(self) -> None:
        interval_s = self._lease_ms / 1000 / _RENEWALS_PER_LEASE
        while True:
            started = self._monotonic()
            try:
                await self._renew_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("renewing the slot leases failed (%s); dispatch stops in %.1f s unless a renewal"
                            " succeeds", _brief(exc), self.lease_remaining_s())
            await asyncio.sleep(max(0.0, interval_s - (self._monotonic() - started)))

    async def _renew_once(self) -> None:
        epochs = {**self._revoking, **self._owned}
        if not epochs:
            return
        sent_at = self._monotonic()
        states = await asyncio.to_thread(self._records.renew_leases, self._node_id, epochs, self._lease_ms,
                                         self._clock.now())
        good_until = sent_at + self._lease_ms / 1000 * LEASE_FRACTION
        for slot, state in states.items():
            if self._owned.get(slot) != epochs[slot]:
                continue   # revoking, or it moved while the statement ran
            if state == LOST:
                log.warning("slot %d: our lease ran out and another node claimed it; dropping it", slot)
                await self._revoke(slot, clean=False)
                continue
            self._lease_deadline[slot] = good_until
            if state == WANTED:
                log.info("slot %d: another node claims it; handing it over", slot)
                handoff = asyncio.create_task(self._revoke(slot, clean=True), name=f"handoff-{slot}")
                self._handoffs.add(handoff)
                handoff.add_done_callback(self._handoffs.discard)

    # ---- observation (admin view) ----

    def snapshot(self) -> dict:
        desired = desired_owners(self._members, self._slot_count) if self._members else {}
        return {
            "node": self._node_id,
            "session": str(self._session.state),
            "store_lease_remaining_s": round(self.lease_remaining_s(), 3),
            "members": self._members,
            "desired": desired,
            "claims": dict(self._claims),
            "owned": dict(self._owned),
        }


def _brief(exc: BaseException) -> str:
    """An exception in one line: its type and its text, if any."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
