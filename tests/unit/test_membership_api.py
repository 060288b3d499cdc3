"""The public names of membership, pinned: removing or renaming one is a decision."""
from __future__ import annotations

import membership

PUBLIC = {
    "DuplicateNodeId", "ExecutorDirectory", "ExecutorDirectoryProtocol", "ExecutorInstance",
    "MembershipError", "MemoryExecutorDirectory", "MemoryMembership", "MemoryNodeRegistry",
    "MemorySession", "NodeRegistry", "NodeRegistryProtocol", "NotStarted", "SessionEvent",
    "SessionProtocol", "SessionState", "SlotClaims", "ZkConnectTimeout", "ZkSession", "ZkUnavailable",
}


def test_public_names_are_pinned():
    assert set(membership.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(membership, name) is not None


def test_errors_form_one_tree():
    for name in ("DuplicateNodeId", "NotStarted", "ZkConnectTimeout", "ZkUnavailable"):
        assert issubclass(getattr(membership, name), membership.MembershipError)


def test_twins_have_the_surface_of_the_real_ones():
    session = membership.MemorySession()
    pairs = [
        (membership.ZkSession, session),
        (membership.NodeRegistry,
         membership.MemoryNodeRegistry(session, "n1", {}, hub=membership.MemoryMembership())),
        (membership.ExecutorDirectory, membership.MemoryExecutorDirectory(session)),
    ]
    for real, twin in pairs:
        public = {n for n in dir(real) if not n.startswith("_")}
        missing = public - set(dir(twin))
        assert not missing, f"{type(twin).__name__} lacks {sorted(missing)}"
