"""The executor runner's shortcuts, held to what they stand in for (`taskring._runner`).

Given the hot path's replacements for TaskContext(...) and json.loads, and its own
slot accounting, then they give the same objects and errors as the originals, and no
slot is lost when a batch is cancelled at the awkward moments.
"""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from datetime import UTC, datetime

import pytest

from taskring import TaskContext
from taskring._runner import DeliveryRunner, Handler, _decode_payload, _make_context
from taskring.wire import pb


def test_make_context_builds_what_the_constructor_builds():
    fields = [f.name for f in dataclasses.fields(TaskContext)]
    assert list(inspect.signature(_make_context).parameters) == fields  # a new field needs setting here
    assert not hasattr(TaskContext, "__post_init__")  # nothing the constructor would run is skipped
    values = dict(task_id="t", namespace="shop", task_type="send", payload={"n": 1}, attempt=2, epoch=7,
                  trace_id="tr", deadline=12.5, payload_version=3, created_at=datetime(2030, 1, 1, tzinfo=UTC),
                  _beat=None)
    made = _make_context(**values)  # type: ignore[arg-type]
    assert type(made) is TaskContext and made == TaskContext(**values)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.attempt = 3  # type: ignore[misc]


@pytest.mark.parametrize("text", ['{"a":1,"b":[1,2,{"c":null}]}', "{}", ' {"a": 1} ', '{"a":1}\n', '{"a":"\\u00e9"}',
                                  '{"a":NaN}'])
def test_decode_payload_decodes_as_json_loads(text):
    assert _decode_payload(text) == json.loads(text)


@pytest.mark.parametrize("text", ["[1,2]", "1", '"s"', "null", '{"a":1} x', '{"a":', "{'a':1}", " "])
def test_decode_payload_refuses_what_json_loads_refuses_or_is_not_an_object(text):
    try:
        expected = json.loads(text)
    except ValueError as e:
        with pytest.raises(ValueError) as info:
            _decode_payload(text)
        assert str(info.value) == str(e)
    else:
        assert not isinstance(expected, dict)
        with pytest.raises(ValueError, match="not a JSON object"):
            _decode_payload(text)


def test_decode_payload_of_nothing_is_the_empty_object():
    assert _decode_payload("") == {}


def one(task_type: str, task_id: str = "1", timeout_ms: int = 5000) -> pb.Delivery:
    return pb.Delivery(task=pb.Task(task_id=task_id, namespace="shop", task_type=task_type), attempt=1,
                       timeout_ms=timeout_ms)


def test_a_batch_cancelled_before_its_suspended_handlers_resume_gives_their_slots_back():
    closed: list[str] = []

    async def hang(ctx: TaskContext) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            closed.append(ctx.task_id)

    async def main() -> None:
        runner = DeliveryRunner({"hang": Handler.of(hang)}, 4)
        batch = asyncio.create_task(runner.run_batch([one("hang", "1"), one("hang", "2")]))
        # Cancelled in the same loop iteration as its first step, after it: the hosts
        # that took the suspended handlers over have not run yet.
        asyncio.get_running_loop().call_soon(batch.cancel)
        with pytest.raises(asyncio.CancelledError):
            await batch
        for _ in range(3):
            await asyncio.sleep(0)
        assert runner.in_flight == 0
        assert sorted(closed) == ["1", "2"]  # the handlers' coroutines were closed, finally blocks run

    asyncio.run(main())


def test_a_slot_handed_to_a_waiter_that_is_cancelled_passes_on():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        runner = DeliveryRunner({}, 1)
        assert await runner._take_slot(loop.time() + 5)
        first = asyncio.create_task(runner._take_slot(loop.time() + 5))
        second = asyncio.create_task(runner._take_slot(loop.time() + 5))
        await asyncio.sleep(0)
        assert runner.waiting == 2
        runner._release()  # to `first`, which is cancelled before it resumes
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await second  # it got the slot `first` could not use
        assert runner.in_flight == 1 and runner.waiting == 0
        runner._release()
        assert runner.in_flight == 0

    asyncio.run(main())


def test_a_waiter_past_its_deadline_gives_up_and_leaves_the_count_right():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        runner = DeliveryRunner({}, 1)
        assert await runner._take_slot(loop.time() + 5)
        assert not await runner._take_slot(loop.time() + 0.02)
        assert runner.waiting == 0 and runner.in_flight == 1
        runner._release()
        assert runner.in_flight == 0
        assert await runner._take_slot(loop.time() + 5)  # straight to the free slot
        runner._release()

    asyncio.run(main())


def test_a_batch_with_only_sync_handlers_makes_no_host_task():
    def sync(ctx: TaskContext) -> None:
        return None

    async def main() -> None:
        runner = DeliveryRunner({"s": Handler.of(sync)}, 2)
        before = len(asyncio.all_tasks())
        response = await runner.run_batch([one("s", str(i)) for i in range(5)])
        assert {o.kind for o in response.outcomes} == {pb.OUTCOME_KIND_SUCCEEDED}
        assert len(asyncio.all_tasks()) == before
        runner.close()

    asyncio.run(main())
