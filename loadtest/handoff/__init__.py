"""The pieces of loadtest/bench_cluster.py (cluster handoff: re-own time, slots moved, the
throughput dip), one job each:

- `scenario.py`: `ClusterBench`, the run: the cluster, the load, and each event (joins,
  leaves, kill -9, SIGTERM) with what was observed around it.
- `summary.py`: the figures gathered from the events, and the observations drawn from them.
- `reporting.py`: the tables and the markdown report.
"""
