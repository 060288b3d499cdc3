"""The Dramatiq side of the peers benchmark: a Redis broker and one no-op actor.

The worker is started by run_peers.py as `python -m dramatiq loadtest.peers.dramatiq_noop --processes P
--threads T ...` with the broker's URL in PEERS_REDIS_URL. The broker keeps Dramatiq's default middleware (age
and time limits, retries, callbacks, pipelines, shutdown notifications): that is what a Dramatiq user runs.
The load generator imports this module only for `make_message` (the module's own broker connects to nothing
until used) and sends those messages through a broker of its own, on the run's URL.

The actor does nothing but note its start (StartRecorder.record, about a microsecond).
"""
from __future__ import annotations

import os
from typing import Any

import dramatiq  # type: ignore[import-not-found,unused-ignore]
from dramatiq.brokers.redis import RedisBroker  # type: ignore[import-not-found,unused-ignore]

from loadtest.peers.redis_server import URL_ENV, StartRecorder

QUEUE = "peers"
ACTOR_NAME = "peers_noop"
DEFAULT_URL = "redis://127.0.0.1:6379/0"

RECORDER = StartRecorder(os.environ.get(URL_ENV))

broker = RedisBroker(url=os.environ.get(URL_ENV, DEFAULT_URL))
dramatiq.set_broker(broker)


# max_retries=0: a failing no-op is a bug of the benchmark, to be seen as a missing record, not retried.
@dramatiq.actor(actor_name=ACTOR_NAME, queue_name=QUEUE, max_retries=0)
def noop(phase: str, seq: int, enqueued_at: float) -> None:
    RECORDER.record(phase, seq, enqueued_at)


def make_message(phase: str, seq: int, enqueued_at: float) -> Any:
    """The message `noop.send(phase, seq, enqueued_at)` enqueues, without needing the actor in this process."""
    return dramatiq.Message(queue_name=QUEUE, actor_name=ACTOR_NAME, args=(phase, seq, enqueued_at), kwargs={},
                            options={})
