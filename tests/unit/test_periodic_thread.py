"""PeriodicThread: ticks every interval on one thread, survives a tick that raises, starts
once however often start is called, stops by joining, and can start again."""
from __future__ import annotations

import logging
import threading

from dispatcher.base.periodic_thread import PeriodicThread
from harness.wait import wait_until

NAME = "taskring-test-periodic"


def running() -> int:
    return sum(1 for t in threading.enumerate() if t.name == NAME and t.is_alive())


def test_ticks_run_on_one_thread_and_a_failing_tick_does_not_end_them(caplog):
    ticks: list[str] = []

    def tick() -> None:
        ticks.append(threading.current_thread().name)
        if len(ticks) == 2:
            raise RuntimeError("tick two fails")

    job = PeriodicThread(NAME, 0.01, tick)
    with caplog.at_level(logging.ERROR, logger="dispatcher.base.periodic_thread"):
        job.start()
        job.start()   # a second start is a no-op
        try:
            wait_until(lambda: len(ticks) >= 4, 5, "four ticks, past the one that fails")
            assert running() == 1
        finally:
            job.stop()
    assert set(ticks) == {NAME}
    assert running() == 0
    assert any("a periodic run failed" in r.getMessage() and r.exc_info for r in caplog.records), caplog.records


def test_stop_before_start_is_a_no_op_and_a_stopped_job_starts_again():
    ticks = []
    job = PeriodicThread(NAME, 0.01, lambda: ticks.append(1))
    job.stop()
    job.start()
    wait_until(lambda: len(ticks) >= 1, 5, "a tick")
    job.stop()
    job.stop()
    seen = len(ticks)
    job.start()
    try:
        wait_until(lambda: len(ticks) > seen, 5, "a tick after the restart")
    finally:
        job.stop()
    assert running() == 0


def test_nothing_runs_before_the_first_interval():
    ticks = []
    job = PeriodicThread(NAME, 3600, lambda: ticks.append(1))
    job.start()
    job.stop()
    assert ticks == [] and running() == 0
