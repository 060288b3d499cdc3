"""NodeConfig cut into each part's params: the one module that knows both the node's whole
configuration (base/config.py, read from TASKRING_* variables) and what each part needs of it.

A part takes its own params, a frozen dataclass beside it that checks its fields when built
(asynq's `recovererParams`, River's `JobRescuerConfig.mustValidate`), and imports nothing of
NodeConfig: the outcome decision reads three settings and is given three, and a test builds a
part from the settings it exercises. node.py, the composition root, builds them here."""
from __future__ import annotations

from dispatcher.api.service import ApiParams
from dispatcher.base.config import PRIORITY_TOPICS, NodeConfig
from dispatcher.cron.materializer import PlanParams
from dispatcher.engine.completer import CompleterParams
from dispatcher.engine.dispatch import DispatchParams
from dispatcher.engine.engine import EngineParams
from dispatcher.engine.graph_watch import GraphWatchParams
from dispatcher.engine.outcomes import DecideParams
from dispatcher.engine.poller import PollParams
from dispatcher.engine.recovery import RecoveryParams
from dispatcher.engine.sweeper import SweepParams
from taskring.wire import pb


def decide_params(config: NodeConfig) -> DecideParams:
    return DecideParams(node_id=config.node_id, route_threshold_ms=config.route_threshold_ms,
                        topic_for=config.kafka.topic_for)


def engine_params(config: NodeConfig) -> EngineParams:
    return EngineParams(
        heap_capacity=config.heap_capacity,
        heap_decoded_capacity=config.heap_decoded_capacity,
        topics=tuple(config.kafka.topics()),
        topic_priorities={config.kafka.topic_for(p): p for p in PRIORITY_TOPICS},
        floor_shares={pb.PRIORITY_LOW: config.floor_share_low, pb.PRIORITY_NORMAL: config.floor_share_normal},
        intake_command_timeout_ms=config.intake_command_timeout_ms,
        handoff_drain_timeout_ms=config.handoff_drain_timeout_ms,
        offset_commit_interval_ms=config.offset_commit_interval_ms,
        dispatch=DispatchParams(node_id=config.node_id, batch=config.dispatch_batch,
                                idle_wait_ms=config.dispatch_idle_wait_ms,
                                max_batches_in_flight=config.max_batches_in_flight,
                                no_executor_retry_ms=config.no_executor_retry_ms,
                                store_retry_ms=config.store_retry_ms,
                                high_reserve_share=config.high_reserve_share),
        completer=CompleterParams(decide=decide_params(config), outcome_batch=config.outcome_batch,
                                  outcome_retry_max_delay_ms=config.outcome_retry_max_delay_ms),
        poll=PollParams(interval_ms=config.poll_interval_ms, lookahead_ms=config.poll_lookahead_ms,
                        batch=config.poll_batch),
        sweep=SweepParams(interval_ms=config.sweep_interval_ms, grace_ms=config.enqueued_grace_ms,
                          batch=config.sweep_batch),
        recovery=RecoveryParams(interval_ms=config.recovery_interval_ms, grace_ms=config.recovery_grace_ms,
                                batch=config.recovery_batch),
        graph_watch=GraphWatchParams(check_ms=config.graph_check_ms, stuck_after_ms=config.graph_stuck_after_ms),
    )


def api_params(config: NodeConfig) -> ApiParams:
    return ApiParams(node_id=config.node_id, slot_count=config.slot_count,
                     route_threshold_ms=config.route_threshold_ms, topic_for=config.kafka.topic_for)


def plan_params(config: NodeConfig) -> PlanParams:
    return PlanParams(node_id=config.node_id, tick_ms=config.cron_tick_ms, lead_ms=config.cron_lead_ms,
                      missed_after_ms=config.cron_missed_after_ms)
