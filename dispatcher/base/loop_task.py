"""The lifecycle of one background loop on the event loop: start once, stop by
cancelling and waiting for it, safe to call twice. The node's periodic parts (the
sweeper, the recovery guard, dispatch ...) each own one instead of repeating the
bookkeeping.

A loop runs until it is stopped. One that ends on its own (it raised past its own
error handling, or returned) is a defect that would otherwise go unseen: the node
would keep accepting work that, say, nothing dispatches any more. So the end is
logged with its traceback and reported to the node's `LoopWatch`, which counts it
(`taskring_loop_crashes_total{loop}`) and turns the liveness probe unhealthy, so that
the orchestrator restarts the process and the slots move to a node that works.
Restarting the loop in place is not attempted: its state after an unexpected error
is unknown, and a restart of the process is the recovery the rest of the design
(fenced handoff, replay from committed offsets) already makes safe."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class LoopWatch:
    """The loops of one node that ended unexpectedly: name -> why. Written on the event
    loop, read by the admin server's threads (a copy of a small dict)."""

    def __init__(self, on_crash: Callable[[str], None] | None = None):
        self._ended: dict[str, str] = {}
        self._on_crash = on_crash

    def report(self, name: str, why: str) -> None:
        self._ended[name] = why
        if self._on_crash is not None:
            self._on_crash(name)

    def ended(self) -> dict[str, str]:
        return dict(self._ended)


class LoopTask:
    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]], watch: LoopWatch | None = None):
        self._name = name
        self._run = run
        self._watch = watch
        self._task: asyncio.Task | None = None
        self._stopping = False

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=self._name)
            self._task.add_done_callback(self._ended)

    async def stop(self) -> None:
        if self._task is not None:
            self._stopping = True
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _ended(self, task: asyncio.Task) -> None:
        # A cancel is a stop: ours, or the event loop's own at its shutdown.
        if self._stopping or task.cancelled():
            return
        error = task.exception()
        why = f"{type(error).__name__}: {error}" if error is not None else "returned"
        log.error("loop %s ended unexpectedly (%s); the node is no longer healthy", self._name, why,
                  exc_info=error)
        if self._watch is not None:
            self._watch.report(self._name, why)


Step = Callable[[], Awaitable[float | None]]
SlotJob = Callable[[int, int], Awaitable[None]]


class PeriodicJob:
    """The one shape of the node's periodic work (sweep, recovery check, cron planning, bulk
    replay, stats flush): wait, and if the node may run it now, take one step. A
    step that raises is logged and the next one runs after the interval as usual: these
    jobs meet the store's and the network's failures every day, and a pass that failed is
    simply the next pass's work. What the step cannot handle ends no loop; a defect in
    the loop itself still does, and the LoopWatch sees it.

    `step` returns the seconds to wait before the next step, or None for the interval (a
    job with more to do comes back sooner)."""

    def __init__(self, name: str, *, interval_s: float, step: Step, may_run: Callable[[], bool] = lambda: True,
                 watch: LoopWatch | None = None, failure_level: int = logging.ERROR):
        self._name = name
        self._interval_s = interval_s
        self._step = step
        self._may_run = may_run
        self._failure_level = failure_level
        self._loop = LoopTask(name, self._run, watch)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    @property
    def running(self) -> bool:
        return self._loop.running

    async def _run(self) -> None:
        wait_s = self._interval_s
        while True:
            await asyncio.sleep(wait_s)
            wait_s = self._interval_s
            if not self._may_run():
                continue
            try:
                next_s = await self._step()
            except Exception as exc:
                # ERROR with the traceback by default; a job whose failures are the store's
                # everyday refusals asks for one WARNING line instead.
                log.log(self._failure_level, "%s: a pass failed (%s: %s); the next runs in %.1f s", self._name,
                        type(exc).__name__, exc, self._interval_s,
                        exc_info=self._failure_level >= logging.ERROR)
            else:
                if next_s is not None:
                    wait_s = max(0.0, next_s)


def each_owned_slot(what: str, owned: Callable[[], dict[int, int]], job: SlotJob) -> Step:
    """A step that runs `job(slot, epoch)` for every slot owned when it starts; one slot's
    failure is logged and the next slot runs."""
    async def step() -> None:
        for slot, epoch in list(owned().items()):
            try:
                await job(slot, epoch)
            except Exception:
                log.exception("slot %d: %s failed", slot, what)
    return step
