"""The lifecycle of one periodic job on a thread of its own: start once, stop by setting an
event and joining, safe to call twice. For the few parts that must not wait on the event
loop (the clock's offset, the tokens file): each owns one instead of repeating the
bookkeeping. A tick that raises is logged and the next tick runs as usual."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class PeriodicThread:
    def __init__(self, name: str, interval_s: float, tick: Callable[[], object]):
        self._name = name
        self._interval_s = interval_s
        self._tick = tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._tick()
            except Exception:
                log.exception("%s: a periodic run failed; the next one runs in %.1f s", self._name,
                              self._interval_s)
