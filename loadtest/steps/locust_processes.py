"""Locust's master and workers for a step load: loadtest/locust_rate.py, started as `python -m locust`
from the repository root, each a process of our own known by its PID, and what they reported.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import os
import pathlib
import re
from typing import Any

from harness.processes import ChildProcess, free_port
from loadtest.bench.env import NAMESPACE
from loadtest.bench.load import LOCUST_MISSING, locust_argv
from loadtest.steps.plan import Plan

REPO = pathlib.Path(__file__).resolve().parents[2]

LOCUSTFILE = REPO / "loadtest" / "locust_rate.py"


# ---------------------------------------------------------------- Locust

@dataclasses.dataclass
class LocustProcesses:
    master: ChildProcess
    workers: list[ChildProcess]
    csv_prefix: pathlib.Path
    record_dir: pathlib.Path

    @property
    def all(self) -> list[ChildProcess]:
        return [self.master, *self.workers]


def locust_env(plan: Plan, targets: list[str], task_types: list[str], delay_ms: int,
               record_dir: pathlib.Path) -> dict[str, str]:
    """What locust_rate.py (and the locustfile.py it builds on) reads."""
    return {"TASKRING_TARGETS": ",".join(targets), "TASKRING_TARGET": targets[0], "TASKRING_NAMESPACE": NAMESPACE,
            "TASKRING_TASK_TYPES": ",".join(task_types), "TASKRING_BATCH": str(plan.batch),
            "TASKRING_DELAY_MS": str(delay_ms), "TASKRING_USER_RATE": repr(plan.user_rate),
            "TASKRING_STEP_USERS": ",".join(str(s.users) for s in plan.steps), "TASKRING_STEP_S": repr(plan.step_s),
            "TASKRING_RECORD_DIR": str(record_dir), "PYTHONUNBUFFERED": "1"}


def start_locust(plan: Plan, targets: list[str], task_types: list[str], workers: int, delay_ms: int,
                 run_dir: pathlib.Path) -> LocustProcesses:
    """A headless master (127.0.0.1 only, its shape runs the steps) and `workers` workers,
    each a process of our own, known by its PID."""
    record_dir = run_dir / "records"
    record_dir.mkdir(exist_ok=True)
    env = dict(os.environ, **locust_env(plan, targets, task_types, delay_ms, record_dir))
    exe, port, csv_prefix = locust_argv(), free_port(), run_dir / "locust"
    if not exe:
        raise SystemExit(LOCUST_MISSING)
    # --stop-timeout: at the end a user finishes its call in flight, so that every task
    # the node accepted is also an ack we recorded.
    master = ChildProcess("locust-master", [
        *exe, "-f", str(LOCUSTFILE), "--master", "--headless", "--master-bind-host", "127.0.0.1",
        "--master-bind-port", str(port), "--expect-workers", str(workers), "--expect-workers-max-wait", "60",
        "--stop-timeout", "10s", "--csv", str(csv_prefix), "--only-summary"], run_dir / "locust-master.log",
        env=env, new_session=True).start()
    procs = [ChildProcess(f"locust-worker-{i}", [*exe, "-f", str(LOCUSTFILE), "--worker", "--master-host",
                                                  "127.0.0.1", "--master-port", str(port)],
                          run_dir / f"locust-worker-{i}.log", env=env, new_session=True).start()
             for i in range(workers)]
    return LocustProcesses(master, procs, csv_prefix, record_dir)


def locust_command(plan: Plan, workers: int) -> str:
    """The Locust command lines, for the report (variables abridged)."""
    steps = ",".join(str(s.users) for s in plan.steps)
    return (f"TASKRING_STEP_USERS={steps} TASKRING_STEP_S={plan.step_s:g} TASKRING_USER_RATE={plan.user_rate:.4g} "
            f"TASKRING_BATCH={plan.batch} TASKRING_TARGETS=<nodes> ... python -m locust -f loadtest/locust_rate.py"
            f" --master --headless --expect-workers {workers} --stop-timeout 10s --csv <run dir>/locust --only-summary"
            f" + {workers} x python -m locust -f loadtest/locust_rate.py --worker")


def stop_locust(lp: LocustProcesses, timeout_s: float = 15.0) -> None:
    """The master first (it tells its workers to quit), then any worker still up."""
    lp.master.stop(timeout_s)
    for w in lp.workers:
        with contextlib.suppress(Exception):
            w.started.wait(timeout=5.0)
        w.stop(timeout_s)


def locust_summary(lp: LocustProcesses) -> dict[str, Any]:
    """Locust's own totals (the master's CSV) and the summary table it printed at exit."""
    out: dict[str, Any] = {"master_returncode": lp.master.started.returncode,
                           "worker_returncodes": [w.started.returncode for w in lp.workers]}
    stats = lp.csv_prefix.with_name(lp.csv_prefix.name + "_stats.csv")
    with contextlib.suppress(OSError, ValueError, KeyError):
        for row in csv.DictReader(stats.read_text().splitlines()):
            if row.get("Name") == "Aggregated":
                out.update({"requests": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                            "median_ms": float(row["Median Response Time"]),
                            "p99_ms": float(row["99%"]) if row.get("99%") not in (None, "N/A") else None,
                            "requests_per_s": float(row["Requests/s"])})
    # Each worker prints its own total at the end (locustfile.py): a cross-check of the records.
    reported = [re.search(r"taskring: accepted ([\d,]+) tasks", w.log_path.read_text(errors="replace"))
                for w in lp.workers]
    out["workers_reported_accepted"] = [int(m.group(1).replace(",", "")) if m else None for m in reported]
    lines = lp.master.log_path.read_text(errors="replace").splitlines()
    # Locust's tables, printed after its last log line ("[date] host/LEVEL/...").
    start = max((i + 1 for i, ln in enumerate(lines) if ln.startswith("[")), default=0)
    out["summary"] = [ln for ln in lines[start:] if ln.strip()][:40]
    return out
