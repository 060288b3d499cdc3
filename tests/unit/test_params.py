"""Each part's params are cut from NodeConfig in one place (dispatcher/params.py), carry the
config's values, and refuse a bad value naming the params class and its field."""
from __future__ import annotations

import dataclasses

import pytest

from dispatcher.base.config import KafkaConfig, NodeConfig
from dispatcher.engine.poller import PollParams
from dispatcher.params import api_params, decide_params, engine_params, plan_params

CONFIG = NodeConfig(node_id="n7", dispatch_batch=33, poll_batch=44, sweep_batch=55, recovery_batch=66,
                    outcome_batch=77, heap_capacity=8_000, route_threshold_ms=9_000, cron_lead_ms=1_234,
                    slot_count=32, kafka=KafkaConfig(topic_prefix="p"))


def test_the_params_carry_the_config_values_each_part_reads() -> None:
    engine = engine_params(CONFIG)
    assert (engine.dispatch.batch, engine.poll.batch, engine.sweep.batch, engine.recovery.batch) == (33, 44, 55, 66)
    assert (engine.completer.outcome_batch, engine.heap_capacity) == (77, 8_000)
    assert engine.topics == tuple(CONFIG.kafka.topics())
    assert engine.dispatch.node_id == engine.completer.decide.node_id == "n7"
    assert decide_params(CONFIG).route_threshold_ms == api_params(CONFIG).route_threshold_ms == 9_000
    assert api_params(CONFIG).topic_for(3) == CONFIG.kafka.topic_for(3)
    assert (api_params(CONFIG).slot_count, plan_params(CONFIG).lead_ms) == (32, 1_234)


@pytest.mark.parametrize(("params", "field", "value", "message"), [
    (engine_params(CONFIG).dispatch, "batch", 0, "DispatchParams.batch must be > 0, got 0"),
    (engine_params(CONFIG).dispatch, "node_id", "", "DispatchParams.node_id must not be empty"),
    (engine_params(CONFIG), "heap_capacity", -1, "EngineParams.heap_capacity must be > 0, got -1"),
    (engine_params(CONFIG), "topics", (), "EngineParams.topics must name at least one topic"),
    (engine_params(CONFIG).poll, "lookahead_ms", -5, "PollParams.lookahead_ms must be >= 0, got -5"),
    (engine_params(CONFIG).sweep, "grace_ms", 0, "SweepParams.grace_ms must be > 0, got 0"),
    (engine_params(CONFIG).recovery, "interval_ms", 0, "RecoveryParams.interval_ms must be > 0, got 0"),
    (engine_params(CONFIG).completer, "outcome_batch", 0, "CompleterParams.outcome_batch must be > 0, got 0"),
    (decide_params(CONFIG), "route_threshold_ms", 0, "DecideParams.route_threshold_ms must be > 0, got 0"),
    (api_params(CONFIG), "slot_count", 0, "ApiParams.slot_count must be > 0, got 0"),
    (plan_params(CONFIG), "tick_ms", 0, "PlanParams.tick_ms must be > 0, got 0"),
])
def test_a_bad_value_is_refused_naming_the_params_and_the_field(params, field, value, message) -> None:
    with pytest.raises(ValueError) as refused:
        dataclasses.replace(params, **{field: value})
    assert str(refused.value) == message


def test_a_lookahead_of_zero_is_allowed() -> None:
    assert PollParams(interval_ms=1, lookahead_ms=0, batch=1).lookahead_ms == 0
