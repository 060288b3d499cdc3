"""LoopTask and LoopWatch: a loop that ends on its own is reported; a stop is not. PeriodicJob:
the one shape of the node's periodic work.

Given a loop that raises, or that returns, then its watch names it with why, the crash
callback runs once, and the end is logged as an error with the loop's name. Given a loop
that is stopped, then nothing is reported, and stop is safe twice and before start.
Given a periodic job whose step raises, then the failure is logged and the next step runs
(the loop does not end); while it may not run, no step runs; a step's answer sets the
wait before the next; and one owned slot's failure does not keep the others from running.
"""
from __future__ import annotations

import asyncio
import logging

import pytest

from dispatcher.base.loop_task import LoopTask, LoopWatch, PeriodicJob, each_owned_slot


async def until(condition, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


async def take_one_step(step) -> None:
    await step()


def test_a_loop_that_raises_is_reported_with_its_error_and_logged(caplog):
    crashed: list[str] = []
    watch = LoopWatch(on_crash=crashed.append)

    async def run():
        await asyncio.sleep(0)
        raise ValueError("bad row")

    async def scenario():
        loop = LoopTask("sweep", run, watch)
        loop.start()
        await until(lambda: watch.ended())
        assert not loop.running
        await loop.stop()

    with caplog.at_level(logging.ERROR, logger="dispatcher.base.loop_task"):
        asyncio.run(scenario())
    assert watch.ended() == {"sweep": "ValueError: bad row"}
    assert crashed == ["sweep"]
    assert any("loop sweep ended unexpectedly" in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_loop_that_returns_is_reported_too():
    watch = LoopWatch()

    async def run():
        return None

    async def scenario():
        loop = LoopTask("commit", run, watch)
        loop.start()
        await until(lambda: watch.ended())

    asyncio.run(scenario())
    assert watch.ended() == {"commit": "returned"}


@pytest.mark.parametrize("swallows_cancel", [False, True])
def test_a_stopped_loop_is_not_reported(swallows_cancel):
    crashed: list[str] = []
    watch = LoopWatch(on_crash=crashed.append)
    began = asyncio.Event

    async def scenario():
        started = began()

        async def run():
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if not swallows_cancel:
                    raise

        loop = LoopTask("poll", run, watch)
        await loop.stop()       # before start: nothing to do
        loop.start()
        await started.wait()
        assert loop.running
        await loop.stop()
        await loop.stop()       # twice: nothing to do
        assert not loop.running
        await asyncio.sleep(0)  # let any done-callback run

    asyncio.run(scenario())
    assert watch.ended() == {} and crashed == []


def test_a_periodic_step_that_raises_is_logged_and_the_next_step_runs(caplog):
    watch = LoopWatch()
    steps: list[int] = []

    async def step():
        steps.append(len(steps))
        if len(steps) == 1:
            raise ConnectionError("store gone")

    async def scenario():
        job = PeriodicJob("sweep", interval_s=0.001, step=step, watch=watch)
        job.start()
        await until(lambda: len(steps) >= 3)
        assert job.running
        await job.stop()

    with caplog.at_level(logging.ERROR, logger="dispatcher.base.loop_task"):
        asyncio.run(scenario())
    assert watch.ended() == {}
    assert any("sweep: a pass failed (ConnectionError: store gone)" in r.getMessage() and r.exc_info
               for r in caplog.records)


def test_no_step_runs_while_the_job_may_not_run_and_the_steps_answer_sets_the_next_wait():
    allowed = False
    asked = 0
    steps: list[float] = []

    def may_run() -> bool:
        nonlocal asked
        asked += 1
        return allowed

    async def step() -> float:
        steps.append(asyncio.get_running_loop().time())
        return 0.0   # more to do: come back at once, not after the hour-long interval

    async def scenario():
        nonlocal allowed
        job = PeriodicJob("cron", interval_s=0.001, step=step, may_run=may_run)
        job.start()
        await until(lambda: asked >= 20)
        assert steps == []
        job._interval_s = 3600.0   # from here only the step's answer can bring the next step
        allowed = True
        await until(lambda: len(steps) >= 5)
        await job.stop()

    asyncio.run(scenario())


def test_each_owned_slot_runs_every_slot_when_one_fails(caplog):
    seen: list[tuple[int, int]] = []

    async def job(slot: int, epoch: int) -> None:
        seen.append((slot, epoch))
        if slot == 1:
            raise RuntimeError("slot 1 refused")

    step = each_owned_slot("recovery check", lambda: {0: 5, 1: 6, 2: 7}, job)
    with caplog.at_level(logging.ERROR, logger="dispatcher.base.loop_task"):
        asyncio.run(take_one_step(step))
    assert seen == [(0, 5), (1, 6), (2, 7)]
    assert any("slot 1: recovery check failed" in r.getMessage() for r in caplog.records)
