"""The metrics added for operations are recorded where the work happens: the submit
latency by the API, the poll duration by the poller, execution duration, in-flight per
task type and ownership moves by the engine, the executor count from the directory.
Each is read back from the node's registry, as Prometheus would scrape it."""
from __future__ import annotations

import asyncio
import dataclasses

from prometheus_client import CollectorRegistry, Histogram

from dispatcher.api.service import TaskApi
from dispatcher.api.validation import Limits
from dispatcher.base.config import NodeConfig
from dispatcher.base.metrics import NodeMetrics, observe_many, observe_values
from dispatcher.engine.executor_count import ANY_TYPE, ExecutorCount
from dispatcher.params import api_params
from dispatcher.store import records as r
from dispatcher.store.memory import MemoryTaskStore
from taskring.wire import pb
from tests.unit.test_api_errors import RecordingProducer
from tests.unit.test_engine import SLOT, World, eventually, scenario


def _value(metrics: NodeMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0


# ---------------------------------------------------------------- observe_many

def test_observe_many_is_count_observations_of_one_value():
    registry = CollectorRegistry()
    one_by_one = Histogram("a", "a", buckets=(0.1, 1, 10), registry=registry)
    batched = Histogram("b", "b", buckets=(0.1, 1, 10), registry=registry)
    for amount, count in ((0.05, 3), (1.0, 2), (7.5, 4), (60.0, 1)):
        for _ in range(count):
            one_by_one.observe(amount)
        observe_many(batched, amount, count)
    observe_many(batched, 0.5, 0)   # nothing ran: nothing recorded

    def samples(name: str) -> list[tuple[str, dict, float]]:
        family = next(f for f in registry.collect() if f.name == name)
        return [(s.name[1:], s.labels, s.value) for s in family.samples if not s.name.endswith("_created")]

    assert samples("b") == samples("a")


def test_observe_values_is_one_observation_of_each_value():
    registry = CollectorRegistry()
    one_by_one = Histogram("a", "a", buckets=(0.1, 1, 10), registry=registry)
    batched = Histogram("b", "b", buckets=(0.1, 1, 10), registry=registry)
    values = [0.0, 0.05, 0.1, 0.1000001, 1.0, 0.7, 7.5, 10.0, 60.0, 0.05]   # on and beside each bound
    for v in values:
        one_by_one.observe(v)
    observe_values(batched, values)
    observe_values(batched, [])

    def samples(name: str) -> list[tuple[str, dict, float]]:
        family = next(f for f in registry.collect() if f.name == name)
        return [(s.name[1:], s.labels, s.value) for s in family.samples if not s.name.endswith("_created")]

    assert samples("b") == samples("a")


# ---------------------------------------------------------------- the API

def test_submit_and_submit_batch_each_record_their_handling_time():
    metrics = NodeMetrics()
    api = TaskApi(params=api_params(NodeConfig.from_env({}, cluster=False)), store=MemoryTaskStore(),
                  producer=RecordingProducer(), metrics=metrics, limits=Limits())

    def task(task_id: str) -> pb.Task:
        return pb.Task(task_id=task_id, namespace="ns", task_type="send", payload_json="{}")

    asyncio.run(api.Submit(pb.SubmitRequest(task=task("a")), None))
    asyncio.run(api.SubmitBatch(pb.SubmitBatchRequest(tasks=[task("b"), task("c")]), None))
    for method in ("Submit", "SubmitBatch"):
        assert _value(metrics, "taskring_submit_latency_seconds_count", method=method) == 1
        assert _value(metrics, "taskring_submit_latency_seconds_sum", method=method) > 0


# ---------------------------------------------------------------- the engine

@scenario
async def test_the_poller_records_each_claim_due_round():
    async with World(poll_interval_ms=5) as w:
        await w.own()
        await eventually(lambda: _value(w.metrics, "taskring_poll_duration_seconds_count") >= 3, "three polls")
        assert _value(w.metrics, "taskring_poll_duration_seconds_bucket", le="+Inf") >= 3


@scenario
async def test_execution_duration_and_in_flight_are_recorded_per_task_type():
    async with World() as w:
        # Given a task whose executor holds it until told
        await w.own()
        w.executor.gates["a"] = asyncio.Event()
        await w.submit("a", namespace="ns", task_type="send")
        labels = {"namespace": "ns", "task_type": "send"}
        # While it runs, it is in flight for its type
        await eventually(lambda: _value(w.metrics, "taskring_in_flight_by_type", **labels) == 1, "in flight")
        assert _value(w.metrics, "taskring_execution_duration_seconds_count", **labels) == 0
        # When it finishes 2.5 s after its dispatch
        w.clock.advance(2_500)
        w.executor.gates["a"].set()
        await eventually(lambda: w.status("a") == (r.SUCCEEDED, 1), "success")
        # Then one execution of 2.5 s is recorded, and nothing is in flight any more
        assert _value(w.metrics, "taskring_execution_duration_seconds_count", **labels) == 1
        assert _value(w.metrics, "taskring_execution_duration_seconds_sum", **labels) == 2.5
        assert _value(w.metrics, "taskring_execution_duration_seconds_bucket", le="2.5", **labels) == 1
        assert _value(w.metrics, "taskring_in_flight_by_type", **labels) == 0


@scenario
async def test_ownership_moves_count_slots_gained_handed_off_and_lost():
    async with World() as w:
        await w.own(SLOT)
        await w.own(1)
        assert _value(w.metrics, "taskring_ownership_moves_total", move="assigned") == 2
        await w.engine.slot_revoked(SLOT, clean=True)
        await w.engine.slot_revoked(1, clean=False)
        await w.engine.slot_revoked(1, clean=False)   # already gone: no second move
        assert _value(w.metrics, "taskring_ownership_moves_total", move="revoked") == 1
        assert _value(w.metrics, "taskring_ownership_moves_total", move="lost") == 1


# ---------------------------------------------------------------- the executor count

@dataclasses.dataclass(frozen=True)
class _Instance:
    task_types: tuple[str, ...]


def test_the_executor_count_keeps_a_type_at_zero_once_its_last_executor_left():
    metrics = NodeMetrics()
    known: dict[str, tuple[_Instance, ...]] = {
        "ns": (_Instance(("send", "mail")), _Instance(("send",))),
        "any": (_Instance(()),),
    }
    count = ExecutorCount(metrics.executors, lambda: known)
    count.refresh()
    assert _value(metrics, "taskring_executors", namespace="ns", task_type="send") == 2
    assert _value(metrics, "taskring_executors", namespace="ns", task_type="mail") == 1
    assert _value(metrics, "taskring_executors", namespace="any", task_type=ANY_TYPE) == 1
    # When the executors of "mail" and of "any" go away, their series drop to 0, not vanish
    known["ns"] = (_Instance(("send",)),)
    known["any"] = ()
    count.refresh()
    assert metrics.registry.get_sample_value("taskring_executors", {"namespace": "ns", "task_type": "mail"}) == 0
    assert metrics.registry.get_sample_value("taskring_executors", {"namespace": "any", "task_type": ANY_TYPE}) == 0
    assert _value(metrics, "taskring_executors", namespace="ns", task_type="send") == 1
