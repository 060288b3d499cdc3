"""Where membership lives in ZooKeeper: every znode path of this package, in one place.

All paths are relative to the chroot in the hosts string
("127.0.0.1:2181/taskring-prod"), so one ensemble can hold several clusters.
"""
from __future__ import annotations

NODES_ROOT = "/nodes"
"""Dispatcher nodes: /nodes/<node_id>, ephemeral, data = JSON object (node info)."""

OWNERS_ROOT = "/owners"
"""Slot claims: /owners/<slot>, ephemeral, data = JSON {"node", "epoch"} (claims.py)."""

EXECUTORS_ROOT = "/executors"
"""Executors (SDK): /executors/<namespace>/<instance_id>, ephemeral, data = JSON."""


def check_segment(field: str, value: str) -> str:
    """Return value if it can be one znode name, else raise ValueError naming the field.

    A segment must not contain "/" (it would silently nest), must not be "." or ".."
    (ZooKeeper rejects them), and must not be empty.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field}: must be a non-empty string, got {value!r}")
    if "/" in value or value in (".", "..") or "\x00" in value:
        raise ValueError(f"{field}: {value!r} is not a valid znode name")
    return value


def node_path(node_id: str) -> str:
    return f"{NODES_ROOT}/{check_segment('node_id', node_id)}"


def namespace_path(namespace: str) -> str:
    return f"{EXECUTORS_ROOT}/{check_segment('namespace', namespace)}"


def executor_path(namespace: str, instance_id: str) -> str:
    return f"{namespace_path(namespace)}/{check_segment('instance_id', instance_id)}"
