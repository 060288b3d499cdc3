"""The pieces of loadtest/locust_steps.py (step load with real Locust), one job each:

- `plan.py`: the steps, their users and each user's pace, from the peak and the percentages.
- `locust_processes.py`: Locust's master and workers (loadtest/locust_rate.py), started and stopped by PID.
- `sampling.py`: the nodes' metrics and each process group's CPU, once a second.
- `records.py`: what the Locust workers recorded (every call) and what the store holds.
- `analysis.py`: pickups, the steps' windows, the timeline and each step's figures.
- `run.py`: the scenario: world, nodes, executors, warm-up, the load, the drain, the gathering.
- `reporting.py` and `chart.py`: the markdown and the PNG.
"""
