"""Peers: Celery + Redis and Dramatiq + Redis on a no-op workload, measured like taskring's own benchmark.

Run `loadtest/peers/run_peers.py` (its docstring says how and how to read it); `redis_server.py` is the private
Redis and the start records that the no-op tasks write into it, `celery_noop.py` and `dramatiq_noop.py` the workers.
"""
