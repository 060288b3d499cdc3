"""ZkSession and NodeRegistry without a server: validation, lifecycle edges, and a
clear error when nothing answers (a loopback port nobody listens on)."""
from __future__ import annotations

import math
import socket
import time

import pytest

from membership import NodeRegistry, NotStarted, SessionEvent, SessionState, ZkConnectTimeout, ZkSession


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kwargs,field", [
    (dict(hosts=""), "hosts"),
    (dict(hosts="127.0.0.1:1", session_timeout_ms=0), "session_timeout_ms"),
    (dict(hosts="127.0.0.1:1", session_timeout_ms=2.5), "session_timeout_ms"),
    (dict(hosts="127.0.0.1:1", connect_timeout_s=0), "connect_timeout_s"),
])
def test_config_errors_name_the_field(kwargs, field):
    hosts = kwargs.pop("hosts")
    with pytest.raises(ValueError, match=field):
        ZkSession(hosts, **kwargs)


def test_before_start_it_is_stopped_and_stop_is_a_no_op():
    s = ZkSession("127.0.0.1:1", session_timeout_ms=2000)
    s.stop()
    s.stop()
    assert s.state is SessionState.STOPPED
    assert s.session_id is None and s.session_generation == 0 and s.suspended_since is None
    assert math.isinf(s.suspended_for_s())
    assert s.session_timeout_ms == 2000 and s.negotiated_session_timeout_ms is None
    assert s.wait_connected(0.01) is False
    with pytest.raises(NotStarted):
        _ = s.client


def test_connect_timeout_names_the_hosts_and_leaves_nothing_running():
    hosts = f"127.0.0.1:{unused_port()}/taskring-unit"
    s = ZkSession(hosts, session_timeout_ms=2000, connect_timeout_s=0.5)
    seen: list[SessionEvent] = []
    s.add_listener(seen.append)
    t0 = time.monotonic()

    with pytest.raises(ZkConnectTimeout) as err:
        s.start()

    assert time.monotonic() - t0 < 5
    assert hosts in str(err.value) and "0.5s" in str(err.value)
    assert s.state is SessionState.STOPPED and seen == []
    s.stop()  # still safe
    with pytest.raises(NotStarted):
        s.start()  # single use


def test_node_registry_validates_and_needs_a_started_session():
    s = ZkSession("127.0.0.1:1")
    with pytest.raises(ValueError, match="node_id"):
        NodeRegistry(s, "", {})
    with pytest.raises(ValueError, match="node_id"):
        NodeRegistry(s, "..", {})
    with pytest.raises(ValueError, match="info"):
        NodeRegistry(s, "n1", ["not", "a", "dict"])  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(ValueError, match="info"):
        NodeRegistry(s, "n1", {"when": object()})
    r = NodeRegistry(s, "n1", {"address": "10.0.0.1:7000"})
    r.stop()  # before start
    with pytest.raises(NotStarted, match="ZkSession"):
        r.start()
    assert r.members() == {}

