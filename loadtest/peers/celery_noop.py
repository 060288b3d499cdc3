"""The Celery side of the peers benchmark: a Celery app on a Redis broker with one no-op task.

The worker is started by run_peers.py as `python -m celery -A loadtest.peers.celery_noop worker ...` with the
broker's URL in PEERS_REDIS_URL; the load generator builds its own app with `make_app(url)`.

The task does nothing but note its start (StartRecorder.record, about a microsecond). The configuration is
Celery's documented one for many small tasks: no result backend (results ignored), rate limits off, acks
early (Celery's default); everything else is Celery's default.
"""
from __future__ import annotations

import os
from typing import Any

from celery import Celery  # type: ignore[import-untyped,import-not-found,unused-ignore]

from loadtest.peers.redis_server import URL_ENV, StartRecorder

QUEUE = "peers"
TASK_NAME = "peers.noop"
DEFAULT_URL = "redis://127.0.0.1:6379/0"

RECORDER = StartRecorder(os.environ.get(URL_ENV))


def noop(phase: str, seq: int, enqueued_at: float) -> None:
    RECORDER.record(phase, seq, enqueued_at)


def make_app(broker_url: str) -> Any:
    """A Celery app on broker_url with the no-op task registered as TASK_NAME."""
    app = Celery("peers_noop", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_default_queue=QUEUE,
        task_ignore_result=True,          # a no-op's result is nobody's business: no backend, no writes
        result_backend=None,
        worker_disable_rate_limits=True,  # "Optimizing" guide: rate-limit bookkeeping costs every task
        task_acks_late=False,             # the default, said here because it halves the broker round trips
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    # shared=False: register on this app only, not on every app created later in the process.
    app.task(name=TASK_NAME, shared=False)(noop)
    return app


app = make_app(os.environ.get(URL_ENV, DEFAULT_URL))
