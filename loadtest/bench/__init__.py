"""The benchmark harness: the pieces every scenario in loadtest/ is made of.

A scenario (`loadtest/bench_node.py`, `loadtest/bench_cluster.py`, `loadtest/locust_steps.py`)
is the order of its phases and what it prints; everything it stands on is here, one
module per job:

- `env.py`: the stack's endpoints; `BenchEnv`, a private world (database, chroot,
  topics) and every process started in it, stopped by PID and dropped at the end.
- `executors.py`: SDK executor processes whose no-op handlers record every run.
- `load.py`: the load generators (batches as fast as possible, a plan spread over
  seconds, a paced process), the warm-up, Locust.
- `store.py`: waits on and reads of the run's task store.
- `observe.py`: CPU and RSS per process from /proc (over a phase, or once a second for
  every process on the machine), MariaDB's row and statement counters, the machine's
  facts, the node logs' warnings.
- `zk.py`: who owns what, polled from ZooKeeper and from a node's /ring.
- `ring_model.py`: the ring's moved fraction over many name sets (pure).
- `profile.py`: py-spy or cProfile on the node, and its samples grouped.
- the statistics (the one percentile definition, summaries, rates, windows) are
  `harness/stats.py`, shared with the tests.
- `report.py`: the one writer of `<name>.json` and `<name>.md`, with the command line
  at the top of each.

Lifecycle: `BenchEnv.start()` makes the world; whatever the scenario starts is registered
with `BenchEnv.on_stop()`; `BenchEnv.stop()` (in a `finally`) stops all of it, newest
first, then the nodes, then drops the world, never raising. Every `stop()` here is safe
before `start()` and twice.

Nothing here is imported by `tests/`, and nothing here reads the environment at import
time; children (executors, the paced load) are spawned, so they import only what they use.
"""
