"""NodeConfig: every timeout and limit the engine uses is a field with its unit in its
name, checked when the config is built, and the environment's defaults are the
dataclasses' own."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dispatcher.base.config import KafkaConfig, MySQLConfig, NodeConfig, ZooKeeperConfig

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


def test_the_default_slot_count_is_the_one_the_local_stack_and_the_chart_make_topics_for():
    # 64, not 16: the ring spread 16 slots over the demo's three nodes 3/7/6 (deploy/local/stack.sh
    # TASKRING_PARTITIONS, the chart's `slots` and the kustomize ConfigMap say 64 too).
    assert NodeConfig.from_env({}, node_id="n1").slot_count == 64


# ---------------------------------------------------------------- the store split by slot

def test_store_shards_come_from_the_environment_with_an_even_slot_map_by_default():
    from dispatcher.base.config import format_slot_shards
    config = NodeConfig.from_env({"TASKRING_MYSQL_SHARDS": "db2:3307/tasks, db3:3308/tasks",
                                  "TASKRING_MYSQL_USER": "u", "TASKRING_PARTITIONS": "12"})
    assert [(m.host, m.port, m.database, m.user) for m in config.store_shards] == [
        ("127.0.0.1", 23306, "taskring", "u"), ("db2", 3307, "tasks", "u"), ("db3", 3308, "tasks", "u")]
    assert format_slot_shards(config.shard_of_slot) == "0-3:0,4-7:1,8-11:2"


def test_an_explicit_slot_map_is_parsed_and_printed_back_the_same():
    from dispatcher.base.config import format_slot_shards
    config = NodeConfig.from_env({"TASKRING_MYSQL_SHARDS": "db2:3307/tasks", "TASKRING_PARTITIONS": "16",
                                  "TASKRING_SLOT_SHARDS": "0-2:1,3:0,4-15:1"})
    assert config.shard_of_slot[:5] == (1, 1, 1, 0, 1)
    assert format_slot_shards(config.shard_of_slot) == "0-2:1,3:0,4-15:1"


@pytest.mark.parametrize("env, message", [
    ({"TASKRING_MYSQL_SHARDS": "db2/tasks"}, "item 1 'db2/tasks' is not host:port/database"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307"}, "is not host:port/database"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-14:0"}, r"missing \[15\]"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-15:0,15:1"}, "slot 15 is named twice"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-16:0"}, r"beyond the slot count \[16\]"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-15"}, "is not first-last:shard"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-7:0,8-15:2"}, r"outside 0..1"),
    ({"TASKRING_MYSQL_SHARDS": "db2:3307/t", "TASKRING_SLOT_SHARDS": "0-15:0"}, r"no slot to shard\(s\) \[1\]"),
    ({"TASKRING_SLOT_SHARDS": "0-15:1"}, r"outside 0..0"),
])
def test_a_bad_store_shard_setting_is_refused_naming_it(env, message):
    with pytest.raises(ValueError, match=message):
        NodeConfig.from_env({"TASKRING_PARTITIONS": "16", **env})  # the maps above are of 16 slots


def test_tls_and_tokens_settings():
    assert NodeConfig.from_env({}).tls is None and NodeConfig.from_env({}).tokens_file is None
    config = NodeConfig.from_env({"TASKRING_TLS_CERT_FILE": "s.pem", "TASKRING_TLS_KEY_FILE": "s.key",
                                  "TASKRING_TLS_CLIENT_CA_FILE": "ca.pem", "TASKRING_TOKENS_FILE": "t.json"})
    assert config.tls is not None and config.tls.client_ca_file == "ca.pem" and config.tokens_file == "t.json"
    assert "s.key" not in repr(config)
    with pytest.raises(ValueError, match="TASKRING_TLS_KEY_FILE: is required"):
        NodeConfig.from_env({"TASKRING_TLS_CERT_FILE": "s.pem"})
    with pytest.raises(ValueError, match="TASKRING_TLS_CLIENT_CA_FILE: needs"):
        NodeConfig.from_env({"TASKRING_TLS_CLIENT_CA_FILE": "ca.pem"})


def test_executor_streams_from_the_environment():
    assert NodeConfig.from_env({}, node_id="n1").executor_streams is True
    assert NodeConfig.from_env({"TASKRING_EXECUTOR_STREAMS": "0"}, node_id="n1").executor_streams is False
    assert NodeConfig.from_env({"TASKRING_EXECUTOR_STREAMS": "true"}, node_id="n1").executor_streams is True
    with pytest.raises(ValueError, match="TASKRING_EXECUTOR_STREAMS"):
        NodeConfig.from_env({"TASKRING_EXECUTOR_STREAMS": "maybe"}, node_id="n1")


def test_the_batch_sizes_come_from_the_environment():
    config = NodeConfig.from_env({"TASKRING_DISPATCH_BATCH": "50", "TASKRING_OUTCOME_BATCH": "700"}, node_id="n1")
    assert (config.dispatch_batch, config.outcome_batch) == (50, 700)
    with pytest.raises(ValueError, match="dispatch_batch"):
        NodeConfig.from_env({"TASKRING_DISPATCH_BATCH": "0"}, node_id="n1")


@pytest.mark.parametrize("var", ["TASKRING_DISPATCH_BATCH", "TASKRING_MYSQL_PORT", "TASKRING_KAFKA_LINGER_MS",
                                 "TASKRING_ZK_SESSION_TIMEOUT_MS", "TASKRING_HEAP_CAPACITY"])
def test_a_number_setting_that_is_no_number_is_refused_naming_the_variable(var):
    with pytest.raises(ValueError, match=f"{var}: '12 ms' is not a whole number"):
        NodeConfig.from_env({var: "12 ms"}, node_id="n1")


def test_the_priority_floors_come_from_the_environment_and_reach_the_engine():
    from dispatcher.params import engine_params
    from taskring.wire import pb
    config = NodeConfig.from_env({"TASKRING_FLOOR_SHARE_LOW": "0.05", "TASKRING_FLOOR_SHARE_NORMAL": "0.3"},
                                 node_id="n1")
    assert (config.floor_share_low, config.floor_share_normal) == (0.05, 0.3)
    params = engine_params(config)
    assert params.floor_shares == {pb.PRIORITY_LOW: 0.05, pb.PRIORITY_NORMAL: 0.3}
    assert params.topic_priorities == {"taskring.tasks.high": pb.PRIORITY_HIGH,
                                       "taskring.tasks.normal": pb.PRIORITY_NORMAL,
                                       "taskring.tasks.low": pb.PRIORITY_LOW}


@pytest.mark.parametrize("env, says", [
    ({"TASKRING_FLOOR_SHARE_LOW": "ten percent"}, "TASKRING_FLOOR_SHARE_LOW: 'ten percent' is not a number"),
    ({"TASKRING_FLOOR_SHARE_LOW": "1"}, r"NodeConfig.floor_share_low must be a share in \[0, 1\), got 1.0"),
    ({"TASKRING_FLOOR_SHARE_NORMAL": "-0.1"}, r"NodeConfig.floor_share_normal must be a share in \[0, 1\)"),
    ({"TASKRING_FLOOR_SHARE_LOW": "0.5", "TASKRING_FLOOR_SHARE_NORMAL": "0.5"},
     "floor_share_low \\+ floor_share_normal must be below 1"),
])
def test_a_bad_priority_floor_is_refused_naming_it(env, says):
    with pytest.raises(ValueError, match=says):
        NodeConfig.from_env(env, node_id="n1")


def test_the_share_kept_for_high_comes_from_the_environment_and_is_checked():
    from dispatcher.params import engine_params
    config = NodeConfig.from_env({"TASKRING_HIGH_RESERVE_SHARE": "0.1"}, node_id="n1")
    assert engine_params(config).dispatch.high_reserve_share == 0.1
    with pytest.raises(ValueError, match=r"NodeConfig.high_reserve_share must be a share in \[0, 1\), got 1.0"):
        NodeConfig.from_env({"TASKRING_HIGH_RESERVE_SHARE": "1"}, node_id="n1")
