"""membership: who is alive.

ZooKeeper registration of dispatcher nodes, discovery of executors, and the
session state this process may act on (see session.py for SUSPENDED vs LOST).
kazoo's threads stay inside this package (dispatch.py); everything here calls
back on threads of its own. memory.py holds in-memory twins for unit tests.
"""
from .claims import SlotClaims
from .errors import DuplicateNodeId, MembershipError, NotStarted, ZkConnectTimeout, ZkUnavailable
from .executors import ExecutorDirectory
from .interface import (
    ExecutorDirectoryProtocol,
    ExecutorInstance,
    NodeRegistryProtocol,
    SessionEvent,
    SessionProtocol,
    SessionState,
)
from .memory import MemoryExecutorDirectory, MemoryMembership, MemoryNodeRegistry, MemorySession
from .nodes import NodeRegistry
from .session import ZkSession

__all__ = [
    "DuplicateNodeId",
    "ExecutorDirectory",
    "ExecutorDirectoryProtocol",
    "ExecutorInstance",
    "MembershipError",
    "MemoryExecutorDirectory",
    "MemoryMembership",
    "MemoryNodeRegistry",
    "MemorySession",
    "NodeRegistry",
    "NodeRegistryProtocol",
    "NotStarted",
    "SessionEvent",
    "SessionProtocol",
    "SessionState",
    "SlotClaims",
    "ZkConnectTimeout",
    "ZkSession",
    "ZkUnavailable",
]
