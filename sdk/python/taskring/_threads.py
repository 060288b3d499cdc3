"""A minimal pool of daemon threads for sync handlers.

Why not `concurrent.futures.ThreadPoolExecutor`: its workers are joined at
interpreter exit, so one hung handler (which no one can kill) would keep a
service from exiting on SIGTERM. Daemon threads let the process exit. It also
skips the Future objects the executor does not need: the runner reports back to
its loop itself.
"""
from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("taskring.executor")


class DaemonThreads:
    """Runs callables on up to `max_workers` daemon threads, started as needed."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max = max_workers
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[[], None]) -> None:
        """Queue `fn`; start a thread when none is idle and the cap allows."""
        if self._closed:
            raise RuntimeError("thread pool is closed")
        self._queue.put(fn)
        if self._idle.acquire(blocking=False):
            return
        with self._lock:
            if len(self._threads) < self._max:
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()

    def close(self) -> None:
        """Drop queued work and let idle threads exit; busy threads finish on their own."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while True:
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
            for _ in self._threads:
                self._queue.put(None)

    def _work(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            try:
                fn()
            except BaseException:  # fn reports its own errors; keep the thread
                log.exception("unexpected error in a handler thread")
            self._idle.release()
