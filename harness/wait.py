"""The one wait: poll a condition until it holds or a deadline passes.

Tests never sleep their way to green, and benchmarks never wait for ever: every wait
names what it waits for, so a timeout says what did not happen.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold by the deadline (an AssertionError: a test fails, not errors)."""


def wait_until(condition: Callable[[], T | None], timeout_s: float = 5.0, what: str = "a condition",
               interval_s: float = 0.05) -> T:
    """Return the condition's first truthy value; raise WaitTimeout naming `what` at the deadline.
    (A truthy value is never None: a condition returning `X | None` gives an X.)

    An exception raised by the condition propagates at once (a dead process, say)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)
