"""The harness's own pure parts: the one wait, the ring check on ZooKeeper's data, and the
stack's endpoints written once per language (harness/stack.py reads the node's defaults;
deploy/local/endpoints.sh must agree with them)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from cluster.ring import desired_owners
from harness.ringcheck import ring_problems, settled_owners, zk_ring_view
from harness.stack import StackEndpoints, servers_down
from harness.wait import WaitTimeout, wait_until

REPO = Path(__file__).resolve().parents[2]


def test_wait_until_returns_the_first_truthy_value_and_names_what_timed_out():
    values = iter([0, None, "", 42])
    assert wait_until(lambda: next(values), 1.0, "a value", 0.001) == 42
    with pytest.raises(WaitTimeout, match="timed out after 0.01s waiting for nothing"):
        wait_until(lambda: False, 0.01, "nothing", 0.001)


def test_the_shell_defaults_agree_with_the_python_ones():
    text = (REPO / "deploy" / "local" / "endpoints.sh").read_text()
    shell = {m[0]: int(m[1]) for m in re.findall(r'export (TASKRING_\w+)="\$\{\1:-(\d+)\}"', text)}
    defaults = StackEndpoints()
    assert shell["TASKRING_ZK_PORT"] == defaults.zk_port
    assert shell["TASKRING_KAFKA_PORT"] == defaults.kafka_port
    assert shell["TASKRING_MYSQL_PORT"] == defaults.mysql_port
    assert shell["TASKRING_MYSQL_SHARD2_PORT"] == defaults.mysql_shard2_port


def test_servers_down_names_each_server_whose_port_refuses_a_connection():
    import socket

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: a connect is refused
    up, down = listening.getsockname()[1], closed.getsockname()[1]
    try:
        ep = StackEndpoints(host="127.0.0.1", zk_port=up, kafka_port=down, mysql_port=up, mysql_shard2_port=down)
        assert servers_down(ep) == ["kafka", "mariadb2"]
        assert servers_down(StackEndpoints(host="127.0.0.1", zk_port=up, kafka_port=up, mysql_port=up,
                                           mysql_shard2_port=up)) == []
    finally:
        listening.close()
        closed.close()


def test_the_environment_overrides_the_stack_defaults():
    ep = StackEndpoints.from_env({"TASKRING_MYSQL_PORT": "3306", "TASKRING_STACK_HOST": "db"})
    assert (ep.host, ep.mysql_port, ep.zk_port) == ("db", 3306, StackEndpoints().zk_port)
    assert ep.zk_hosts == f"db:{StackEndpoints().zk_port}"


def test_a_ring_read_from_zookeeper_is_settled_only_with_every_claim_complete():
    members = {"n1", "n2"}
    desired = desired_owners(members, 4)
    claims = {slot: (node, 3, 0, 0) for slot, node in desired.items()}
    assert settled_owners(zk_ring_view(members, claims, 4), members) == desired
    # a claim without its epoch is not complete yet; a missing claim is no owner
    half = {**claims, 0: (desired[0], None, 0, 0)}
    assert ring_problems(zk_ring_view(members, half, 4), members)
    assert ring_problems(zk_ring_view(members, {s: c for s, c in claims.items() if s}, 4), members)
    # a member that has not registered yet
    assert ring_problems(zk_ring_view({"n1"}, claims, 4), members)
