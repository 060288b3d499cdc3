"""The pieces of loadtest/bench_node.py (one node, end to end), one job each:

- `scenario.py`: `NodeBench`, the run (world, node(s), executors, warm-up, phases A, B
  and S, the gathering, the profile, the raw parts) and the figures only it computes.
- `reporting.py`: the markdown report and the summary it prints.
"""
