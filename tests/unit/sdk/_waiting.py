"""Wait on a condition with a deadline, instead of sleeping for a guessed time."""
from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition") -> None:
    """Return as soon as `condition()` is true; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.005)
