"""Loaded (through PYTHONPATH) by a node process that the fault matrix runs with its
wall clock off: time.time() and time.time_ns() are shifted by
TASKRING_TEST_WALL_CLOCK_SHIFT_S seconds, as on a machine whose time service is
wrong. The monotonic clock is left alone, as a skewed time service leaves it.

(libfaketime, the usual tool, hangs Python 3.11's timed waits here: its wrappers
of clock_nanosleep and pthread_cond_timedwait fail or never return.)
"""
import os
import time

_shift_s = float(os.environ.get("TASKRING_TEST_WALL_CLOCK_SHIFT_S", "0"))
if _shift_s:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _shift_s
    time.time_ns = lambda: _time_ns() + int(_shift_s * 1e9)
