"""Locust at fixed target rates, in steps: locustfile.py's user, paced, and a step shape.

`python -m loadtest.locust_steps` starts the node(s), the executors, a Locust master and
its workers with this file, and reads what the processes record here. By hand, against a
node of `python -m loadtest.bench_node --serve 600` (its printed TASKRING_* variables, plus
these), from the repository root, with `python -m locust` (which puts the repository root on
sys.path, so that this file can import loadtest.locustfile; the `locust` command would not):

    TASKRING_TARGETS=127.0.0.1:7070 TASKRING_STEP_USERS=5,10,15,20 TASKRING_STEP_S=8 TASKRING_USER_RATE=0.5 \\
        .venv/bin/python -m locust -f loadtest/locust_rate.py --headless --stop-timeout 10s

How the rate is held fixed: every user calls SubmitBatch at a constant pace of
TASKRING_USER_RATE calls/s (RateUser.wait_time: Locust's constant_throughput, the next
call one period after the previous one began), so each user offers TASKRING_BATCH x
TASKRING_USER_RATE tasks/s and a step of U users offers U x batch x rate tasks/s,
whatever the calls' latency, as long as a call takes less than its period (1/rate;
locust_steps.py makes that 2 s or more, against calls of tens to hundreds of ms). The
shape (StepShape) only sets the user count of each step. Each user starts at a random
point of its first period, so the calls of a step spread over the period instead of
arriving together. A call slower than its period is not made up for later: the rate
then falls below the target, and the report shows it.

Environment, besides locustfile.py's TASKRING_NAMESPACE, TASKRING_TASK_TYPES,
TASKRING_BATCH and TASKRING_DELAY_MS:

    TASKRING_TARGETS      comma-separated gRPC addresses; users take them in turn
                          (default: locustfile.py's TASKRING_TARGET)
    TASKRING_USER_RATE    SubmitBatch calls per second of each user (default 1)
    TASKRING_STEP_USERS   users of each step, comma-separated (default "1")
    TASKRING_STEP_S       seconds of each step (default 60)
    TASKRING_SPAWN_RATE   users started per second at a step change (default 100)
    TASKRING_RECORD_DIR   every process appends its records to <dir>/<role>-<pid>.jsonl:
                          one line per SubmitBatch call ({"t": unix time of the
                          response, "n": tasks accepted, "ms": call time, "err":
                          null or the error}), one per user error, and the
                          master's shape: its start ({"shape_start": unix time}),
                          each step's start and the end of the load.
                          Unset: nothing is written.
"""
from __future__ import annotations

import itertools
import json
import os
import pathlib
import random
import sys
import time
from typing import IO, Any

from locust import LoadTestShape, events

# Imported as a module, not `from ... import TaskringUser`: Locust runs every User
# class it finds in this file's namespace, and only the paced one should run.
# (Importing it also makes grpc cooperate with gevent, as locustfile.py explains.)
import loadtest.locustfile as base
from taskring import Client

REPO = pathlib.Path(__file__).resolve().parents[1]


def _csv(name: str, default: str) -> list[str]:
    return [x.strip() for x in os.environ.get(name, default).split(",") if x.strip()]


TARGETS = _csv("TASKRING_TARGETS", base.TARGET)
USER_RATE = float(os.environ.get("TASKRING_USER_RATE", "1"))
STEP_USERS = [int(x) for x in _csv("TASKRING_STEP_USERS", "1")]
STEP_S = float(os.environ.get("TASKRING_STEP_S", "60"))
SPAWN_RATE = float(os.environ.get("TASKRING_SPAWN_RATE", "100"))
RECORD_DIR = os.environ.get("TASKRING_RECORD_DIR")

_user_seq = itertools.count()


class _Recorder:
    """Appends JSON lines to this process's record file (opened on first use: the
    master and each worker are processes of their own, and write files of their own)."""

    def __init__(self, directory: str | None):
        self.directory = directory
        self._file: IO[str] | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self.directory is None:
            return
        if self._file is None:
            role = "master" if "--master" in sys.argv else "worker" if "--worker" in sys.argv else "local"
            path = pathlib.Path(self.directory) / f"{role}-{os.getpid()}.jsonl"
            # Line-buffered: what a process wrote survives it being killed.
            self._file = open(path, "a", buffering=1, encoding="utf-8")  # lives as long as the process
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")


_recorder = _Recorder(RECORD_DIR)


@events.request.add_listener
def _on_request(request_type: str, name: str, response_time: float, response_length: int,
                exception: BaseException | None = None, **_kwargs: Any) -> None:
    # The event fires right after the response: its time is the ack's.
    _recorder.write({"t": round(time.time(), 4), "n": 0 if exception else response_length,
                     "ms": round(response_time, 2), "err": f"{type(exception).__name__}: {exception}"[:200]
                     if exception else None})


@events.user_error.add_listener
def _on_user_error(user_instance: Any, exception: BaseException, tb: Any, **_kwargs: Any) -> None:
    _recorder.write({"t": round(time.time(), 4), "user_error": f"{type(exception).__name__}: {exception}"[:200]})


class RateUser(base.TaskringUser):
    """locustfile.py's user at a constant pace, on one of TARGETS."""

    _next_call: float = 0.0      # time.perf_counter() of this user's next call

    def wait_time(self) -> float:
        """Locust's constant_throughput(USER_RATE): the next call one period after the last
        one began, at once if that call took longer (no burst to catch up). Anchored at this
        user's own random start: constant_throughput anchors at the user's creation, and the
        users of a step, created within a fraction of a second, would all call together."""
        now = time.perf_counter()
        self._next_call = max(now, self._next_call + 1 / USER_RATE)
        return self._next_call - now

    def on_start(self) -> None:
        self.taskring = Client(TARGETS[next(_user_seq) % len(TARGETS)], rpc_timeout_s=30.0)
        # A random point of the first period (Locust has monkey-patched time.sleep: this
        # sleeps this user's greenlet only).
        time.sleep(random.uniform(0, 1 / USER_RATE))
        self._next_call = time.perf_counter()


class StepShape(LoadTestShape):
    """TASKRING_STEP_USERS[k] users during step k (TASKRING_STEP_S seconds each), then stop."""

    def reset_time(self) -> None:
        super().reset_time()
        # The master resets the clock when the test really starts (the last reset wins):
        # the driver times the steps from here.
        _recorder.write({"shape_start": round(time.time(), 4), "step_users": STEP_USERS, "step_s": STEP_S})

    _step = -1

    def tick(self) -> tuple[int, float] | None:
        step = int(self.get_run_time() // STEP_S)
        if step != self._step:
            self._step = step
            # When each step really began (ticks are about a second apart), and when the load ended.
            _recorder.write({"shape_end": round(time.time(), 4)} if step >= len(STEP_USERS) else
                            {"step_start": step, "t": round(time.time(), 4), "users": STEP_USERS[step]})
        if step >= len(STEP_USERS):
            return None
        return STEP_USERS[step], SPAWN_RATE
