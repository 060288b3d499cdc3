"""The errors of the membership layer: one small tree under MembershipError.

These never cross the gRPC edge (they stop a node from starting, or are logged
by a background thread), so they are not part of dispatcher.base.errors; a node's
composition root catches MembershipError and exits with its message.
"""
from __future__ import annotations


class MembershipError(Exception):
    """Root of every error this package raises on purpose."""


class ZkConnectTimeout(MembershipError):
    """No ZooKeeper session could be established in time; names the hosts."""

    def __init__(self, hosts: str, timeout_s: float):
        self.hosts = hosts
        self.timeout_s = timeout_s
        super().__init__(
            f"could not connect to ZooKeeper at {hosts!r} within {timeout_s:g}s"
        )


class ZkUnavailable(MembershipError):
    """A ZooKeeper operation kept failing until its retry deadline; names the path."""

    def __init__(self, path: str, cause: BaseException):
        self.path = path
        self.cause = cause
        super().__init__(f"ZooKeeper operation on {path!r} failed: {cause!r}")


class DuplicateNodeId(MembershipError):
    """Another live session holds /nodes/<node_id>: two processes share one identity."""

    def __init__(self, node_id: str, owner_session_id: int, waited_s: float):
        self.node_id = node_id
        self.owner_session_id = owner_session_id
        self.waited_s = waited_s
        super().__init__(
            f"node_id {node_id!r} is registered by another live ZooKeeper session "
            f"(0x{owner_session_id:x}) that did not go away within {waited_s:.1f}s; "
            "is a second node running with the same node_id?"
        )


class NotStarted(MembershipError):
    """A component was used before start() (or after stop())."""
