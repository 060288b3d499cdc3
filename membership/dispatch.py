"""Where kazoo's threads meet the rest of the program.

kazoo calls state listeners on its connection thread and watch callbacks on its
event thread. Code that blocks there stalls every watch and heartbeat of the
process (and code that does ZooKeeper I/O there can deadlock kazoo), so nothing
outside this package ever runs on a kazoo thread: the membership components
only record what kazoo told them and hand the work to a Mailbox, a thread of
their own that runs callables one at a time, in order.

A Fanout gives every listener its own Mailbox. A listener therefore sees every
event in the order it happened, one at a time, and may block or do ZooKeeper
I/O; a slow listener delays only its own later events, never another
listener's. There is no ordering *between* listeners: listener A may already be
handling event 2 while listener B is still on event 1.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import OperationTimeoutError

log = logging.getLogger(__name__)

_STOP = object()
_POLL_S = 0.1


class Abandoned(Exception):
    """A wait given up because its owner is stopping (internal; never escapes start/stop)."""


def wait_result(result: Any, timeout_s: float, abandon: Callable[[], bool]) -> Any:
    """result.get() of a kazoo async result, bounded and abandonable.

    kazoo queues a request made while the connection is down until it reconnects,
    and its synchronous calls wait for that without limit; a component that is
    stopping must not. Raises OperationTimeoutError after timeout_s (which
    client.retry treats as retryable) and Abandoned as soon as abandon() is true.
    """
    deadline = time.monotonic() + timeout_s
    while not result.ready():
        if abandon():
            raise Abandoned()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OperationTimeoutError(f"no answer from ZooKeeper within {timeout_s:g}s")
        result.wait(min(remaining, _POLL_S))
    return result.get()


class Mailbox:
    """One thread that runs submitted callables one at a time, in submission order.

    Work submitted before start() waits for start(). stop() lets the queued work
    run, then ends the thread; work submitted after stop() is dropped. An
    exception in one callable is logged and does not stop the mailbox.
    """

    def __init__(self, name: str):
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue fn(*args); False if the mailbox is stopped (fn will not run)."""
        with self._lock:
            if self._stopped:
                return False
            self._queue.put((fn, args))
            return True

    def stop(self, timeout_s: float = 5.0) -> None:
        """Run what is queued, then end the thread (waits up to timeout_s for that;
        0 means do not wait)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._queue.put(_STOP)
            thread = self._thread
        if thread is not None and thread is not threading.current_thread() and timeout_s > 0:
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning("mailbox %s: a callable is still running after %.1fs; "
                            "leaving its daemon thread behind", self.name, timeout_s)

    def on_own_thread(self) -> bool:
        return self._thread is threading.current_thread()

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until everything submitted before this call has run (True) or time out."""
        if self.on_own_thread():
            raise RuntimeError(f"mailbox {self.name}: flush() from its own thread would deadlock")
        done = threading.Event()
        if not self.submit(done.set):
            return True
        return done.wait(timeout_s)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fn, args = item
            try:
                fn(*args)
            except Exception:
                log.exception("mailbox %s: %r raised", self.name, fn)


class Fanout:
    """Delivers every published item to every subscriber, each on its own Mailbox.

    publish() never blocks on a subscriber, so it is safe to call from a kazoo
    thread. Call publish() from one place under one lock so that every
    subscriber sees the same order.
    """

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._subscribers: list[tuple[Callable[..., Any], Mailbox]] = []
        self._started = False
        self._stopped = False
        self._count = 0

    def add(self, callback: Callable[..., Any]) -> None:
        with self._lock:
            if self._stopped:
                log.warning("fanout %s: listener %r added after stop; it will not be called",
                            self.name, callback)
                return
            self._count += 1
            mailbox = Mailbox(f"{self.name}-{self._count}")
            self._subscribers.append((callback, mailbox))
            if self._started:
                mailbox.start()

    def remove(self, callback: Callable[..., Any]) -> None:
        """Stop delivering to callback (events already queued for it are still delivered)."""
        with self._lock:
            keep: list[tuple[Callable[..., Any], Mailbox]] = []
            gone: list[tuple[Callable[..., Any], Mailbox]] = []
            for cb, mb in self._subscribers:
                (gone if cb == callback else keep).append((cb, mb))
            self._subscribers = keep
        for _, mb in gone:
            mb.stop(timeout_s=0)

    def publish(self, *args: Any) -> None:
        with self._lock:
            for cb, mb in self._subscribers:
                mb.submit(cb, *args)

    def start(self) -> None:
        with self._lock:
            if self._started or self._stopped:
                return
            self._started = True
            mailboxes = [mb for _, mb in self._subscribers]
        for mb in mailboxes:
            mb.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Deliver what is queued, then end every subscriber's thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            mailboxes = [mb for _, mb in self._subscribers]
        for mb in mailboxes:
            mb.stop(timeout_s)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every subscriber has handled everything published so far."""
        with self._lock:
            mailboxes = [mb for _, mb in self._subscribers]
        return all(mb.flush(timeout_s) for mb in mailboxes if not mb.on_own_thread())
