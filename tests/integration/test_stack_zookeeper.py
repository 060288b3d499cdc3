"""The real ZooKeeper does what membership relies on: an ephemeral znode lives exactly as long
as its owner's session, a watcher in another session sees it go, and the owner is told LOST."""
from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from harness import faults

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_S = 4.0  # the stack's ZooKeeper accepts 1..60 s (tickTime=500)
DEADLINE_S = 20.0


def _client(hosts: str, **kwargs) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, **kwargs)
    client.start(timeout=15)
    return client


def test_expired_session_deletes_ephemeral_node_for_watcher_and_owner_sees_lost(zk_hosts):
    clients: list[KazooClient] = []
    try:
        # Given an owner that registered an ephemeral node under /members
        owner = _client(zk_hosts)
        clients.append(owner)
        owner_states: list[KazooState] = []
        owner_lost = threading.Event()
        owner_reconnected = threading.Event()

        def on_owner_state(state: KazooState) -> None:
            owner_states.append(state)
            if state == KazooState.LOST:
                owner_lost.set()
            elif state == KazooState.CONNECTED and owner_lost.is_set():
                owner_reconnected.set()

        owner.add_listener(on_owner_state)
        owner.ensure_path("/members")
        owner.create("/members/node-1", b"owner", ephemeral=True)

        # ... and a second client, in its own session, that watches /members and the node
        watcher = _client(zk_hosts)
        clients.append(watcher)
        seen_present = threading.Event()
        seen_gone = threading.Event()
        children_history: list[list[str]] = []

        @watcher.ChildrenWatch("/members")
        def on_children(children: list[str]) -> None:
            children_history.append(sorted(children))
            if "node-1" in children:
                seen_present.set()
            elif seen_present.is_set():
                seen_gone.set()

        data_deleted = threading.Event()

        @watcher.DataWatch("/members/node-1")
        def on_data(data, stat) -> None:
            if stat is None and seen_present.is_set():
                data_deleted.set()

        assert seen_present.wait(DEADLINE_S), f"watcher never saw node-1: {children_history}"
        assert owner.exists("/members/node-1").ephemeralOwner == owner.client_id[0]

        # When the owner's session is expired by the server
        old_session_id = owner.client_id[0]
        faults.expire_session(zk_hosts, owner.client_id, SESSION_TIMEOUT_S)

        # Then the watcher sees the ephemeral node disappear
        assert seen_gone.wait(DEADLINE_S), f"watcher did not see node-1 go within {DEADLINE_S}s: {children_history}"
        assert data_deleted.wait(DEADLINE_S), "the DataWatch on node-1 did not fire a deletion"
        assert watcher.exists("/members/node-1") is None
        # ... and the owner's listener is told its session is LOST
        assert owner_lost.wait(DEADLINE_S), f"owner never saw LOST within {DEADLINE_S}s; states: {owner_states}"
        # ... and kazoo then reconnects it with a new session, which owns nothing
        assert owner_reconnected.wait(DEADLINE_S), f"owner did not reconnect after LOST; states: {owner_states}"
        assert owner.client_id[0] != old_session_id
        assert owner.exists("/members/node-1") is None
        # ... and the watcher's own session was not touched
        assert watcher.state == KazooState.CONNECTED
    finally:
        for client in clients:
            client.stop()
            client.close()
