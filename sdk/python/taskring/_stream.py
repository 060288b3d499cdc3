"""One dispatcher's Work stream: batches of deliveries in, outcomes out as they come.

An Execute call costs the executor several hundred µs of gRPC's own work (its poller
thread, the loop's wake-ups, the call's objects) whatever it carries; a message on an
open stream about a third of that. And a call answers only when its slowest task
ends, where the stream sends each outcome once it is known: everything that finished
before the writer runs again goes out in one message (outcomes known at once, those
of handlers that suspended, of sync handlers), so a task is never held back by a slow
one sent beside it.

Lifecycle: the stream serves until the dispatcher closes its side, the connection
goes, or the executor stops. On a stop no new delivery is taken; those running
finish (within the server's grace, after which the server cancels them) and their
outcomes are written before the stream ends. When the dispatcher is gone, nobody can
receive an outcome any more: what is still running is cancelled, as a cancelled
Execute call cancels its batch, and the dispatcher's own deadline covers it.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from taskring._heartbeat import Link
from taskring._runner import DeliveryRunner
from taskring.wire import pb

log = logging.getLogger("taskring.executor")


class _Outbox:
    """The outcomes not yet written, and the one writer of the stream (gRPC allows one
    write at a time)."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self.message = pb.ExecuteResponse()
        self.link = Link(lambda: self.message, self.wake)
        self._context = context
        self._ready = asyncio.Event()
        self._closing = False

    def wake(self) -> None:
        # The writer runs in a later turn of the loop: whatever else is added before
        # then goes in the same message.
        self._ready.set()

    def close(self) -> None:
        """Write what is left, then end the writer."""
        self._closing = True
        self._ready.set()

    async def run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            if len(self.message.outcomes) or len(self.message.heartbeats):
                message, self.message = self.message, pb.ExecuteResponse()
                if self.link.beats:
                    self.link.settle(message)
                await self._context.write(message)
            elif self._closing:
                return


async def serve(runner: DeliveryRunner, requests: AsyncIterator[pb.ExecuteRequest],
                context: grpc.aio.ServicerContext, stopping: asyncio.Event) -> None:
    """Serve one Work stream until its dispatcher closes it or the executor stops."""
    outbox = _Outbox(context)
    running: set[asyncio.Future[Any]] = set()

    def finished(fut: asyncio.Future[Any]) -> None:
        running.discard(fut)
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:  # a BaseException from a handler; its task gets no outcome
            log.error("a delivery of a Work stream failed", exc_info=exc)
            return
        outcome = fut.result()
        if outcome is not None:
            outbox.message.outcomes.append(outcome)
            outbox.wake()

    async def read() -> None:
        link = outbox.link
        async for request in requests:
            if request.heartbeat_answers:
                link.answered(request.heartbeat_answers)
            for fut in runner.start_batch(request.deliveries, outbox.message, link):
                running.add(fut)
                fut.add_done_callback(finished)
            outbox.wake()

    reader = asyncio.ensure_future(read())
    writer = asyncio.ensure_future(outbox.run())
    stop = asyncio.ensure_future(stopping.wait())
    graceful = False
    try:
        await asyncio.wait({reader, stop}, return_when=asyncio.FIRST_COMPLETED)
        if reader.done():
            reader.result()  # the connection's failure, if that is what ended it
        else:
            reader.cancel()  # the executor stops: take nothing new
        if running:
            await asyncio.wait(set(running))
        outbox.close()
        await writer
        graceful = True
    finally:
        stop.cancel()
        reader.cancel()
        writer.cancel()
        if not graceful:
            for fut in list(running):
                fut.cancel()
