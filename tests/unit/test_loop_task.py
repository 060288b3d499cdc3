"""LoopTask and LoopWatch: a loop that ends on its own is reported; a stop is not.

Given a loop that raises, or that returns, then its watch names it with why, the crash
callback runs once, and the end is logged as an error with the loop's name. Given a loop
that is stopped, then nothing is reported, and stop is safe twice and before start.
"""
from __future__ import annotations

import asyncio
import logging

import pytest

from dispatcher.loop_task import LoopTask, LoopWatch


async def until(condition, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


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

    with caplog.at_level(logging.ERROR, logger="dispatcher.loop_task"):
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
