"""The lifecycle of one background loop on the event loop: start once, stop by
cancelling and waiting for it, safe to call twice. The node's periodic parts (the
sweeper, the recovery guard) each own one instead of repeating the bookkeeping."""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class LoopTask:
    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]):
        self._name = name
        self._run = run
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
