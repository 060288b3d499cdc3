"""NodeConfig: every timeout and limit the engine uses is a field with its unit in its
name, checked when the config is built, and the environment's defaults are the
dataclasses' own."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dispatcher.config import KafkaConfig, MySQLConfig, NodeConfig, ZooKeeperConfig

NUMBERS = [f.name for f in dataclasses.fields(NodeConfig) if f.type in ("int", int)
           and f.name not in ("grpc_port", "admin_port")]   # ports: 0 asks the OS for a free one
POSITIVE = [name for name in NUMBERS if name != "poll_lookahead_ms"]


def test_every_number_says_its_unit_or_is_a_count():
    units = ("_ms", "_count", "_batch", "_capacity", "_in_flight")
    assert NUMBERS, "no numeric fields found"
    assert all(name.endswith(units) for name in NUMBERS), [n for n in NUMBERS if not n.endswith(units)]


@pytest.mark.parametrize("name", POSITIVE)
def test_a_number_that_is_not_positive_is_refused_naming_the_field(name):
    zero: dict[str, Any] = {name: 0}   # `name` is one of the int fields, not known statically
    with pytest.raises(ValueError, match=f"NodeConfig.{name} must be > 0, got 0"):
        NodeConfig(node_id="n1", **zero)


def test_the_poll_lookahead_may_be_zero_but_not_negative():
    assert NodeConfig(node_id="n1", poll_lookahead_ms=0).poll_lookahead_ms == 0
    with pytest.raises(ValueError, match="NodeConfig.poll_lookahead_ms must be >= 0, got -1"):
        NodeConfig(node_id="n1", poll_lookahead_ms=-1)


def test_from_env_without_variables_is_the_defaults():
    config = NodeConfig.from_env({}, node_id="n1")
    assert (config.mysql, config.kafka, config.zookeeper) == (MySQLConfig(), KafkaConfig(), ZooKeeperConfig())
