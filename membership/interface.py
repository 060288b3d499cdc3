"""The contract of the membership layer, kept by the ZooKeeper implementation
(session.py, nodes.py, executors.py) and by the in-memory twins (memory.py).

The cluster and dispatcher layers should annotate against these protocols, so a
unit test can hand them a twin and a node can hand them the real thing.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class SessionState(enum.StrEnum):
    """What this process may believe about its ZooKeeper session.

    A StrEnum, so ``state == "connected"`` works as well as
    ``state is SessionState.CONNECTED``. See session.py for what each state allows.
    """

    CONNECTED = "connected"
    """Connected, with a live session: ephemerals and claims made in it stand."""
    SUSPENDED = "suspended"
    """Connection dropped; the session may or may not still exist on the server."""
    LOST = "lost"
    """The session is known to be gone, with every ephemeral it created."""
    STOPPED = "stopped"
    """Not started, or stopped: no session."""


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One change of session state, as delivered to a session listener."""

    old_state: SessionState
    new_state: SessionState
    generation: int
    """session_generation after this change (1 for the first session)."""
    at_monotonic: float
    """When the change was observed, on the session's clock (time.monotonic by default)."""
    new_session: bool = False
    """True on the event that established a new session (generation was incremented):
    everything made in the previous session (ephemerals, claims) is gone and must be
    made again."""


@dataclass(frozen=True, slots=True)
class ExecutorInstance:
    """One executor process advertising itself under /executors/<namespace>/<instance_id>."""

    instance_id: str
    address: str
    """host:port of its Execute gRPC endpoint."""
    task_types: tuple[str, ...]
    max_in_flight: int
    """How many tasks it accepts at once; the dispatcher never sends more."""


SessionListener = Callable[[SessionEvent], None]
MembersListener = Callable[[dict[str, dict]], None]
ExecutorsListener = Callable[[str, tuple[ExecutorInstance, ...]], None]


class SessionProtocol(Protocol):
    """Who we are to ZooKeeper right now. Implemented by ZkSession and MemorySession."""

    session_timeout_ms: int

    def start(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def state(self) -> SessionState: ...
    @property
    def session_id(self) -> int | None: ...
    @property
    def session_generation(self) -> int: ...
    @property
    def suspended_since(self) -> float | None: ...
    def suspended_for_s(self) -> float: ...
    def add_listener(self, callback: SessionListener) -> None: ...
    def remove_listener(self, callback: SessionListener) -> None: ...
    def wait_connected(self, timeout_s: float) -> bool: ...
    def lease_remaining_s(self) -> float: ...
    def has_lease(self) -> bool: ...


class NodeRegistryProtocol(Protocol):
    """This node's registration, and the live dispatcher nodes as this node sees them."""

    node_id: str

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def members(self) -> dict[str, dict]: ...
    def add_members_listener(self, callback: MembersListener) -> None: ...


class ExecutorDirectoryProtocol(Protocol):
    """The live executors of each namespace, looked up on the dispatch hot path."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def instances(self, namespace: str, *, wait_s: float | None = None) -> tuple[ExecutorInstance, ...]: ...
    def known(self) -> dict[str, tuple[ExecutorInstance, ...]]: ...
    def add_listener(self, callback: ExecutorsListener) -> None: ...

