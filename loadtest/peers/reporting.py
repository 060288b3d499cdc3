"""The peers report: the table of figures (a column a system) and the markdown around it."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from loadtest.bench.report import fmt

# ---------------------------------------------------------------- the report

def _get(d: dict[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _lat(d: dict[str, Any] | None, digits: int = 1) -> str:
    if not d or not d.get("count"):
        return "-"
    return f"{fmt(d['p50'], digits)} / {fmt(d['p99'], digits)} / {fmt(d['max'], digits)}"


def _cpu_rows(phase: str, title: str) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    keys = ("worker", "redis-server", "load generator", "everything else", "machine total")
    def per_task(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda s: fmt(_get(s, phase, "cpu", "per_task_us", key), 0)

    rows = [(f"{title}: CPU us per task, {k}", per_task(k)) for k in keys]
    rows.append((f"{title}: machine busy, % of {os.cpu_count()} cores",
                 lambda s: fmt(_get(s, phase, "cpu", "machine_busy_pct"), 0)))
    return rows


def table_rows() -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    def execs(phase: str) -> Callable[[dict[str, Any]], str]:
        def cell(s: dict[str, Any]) -> str:
            e = _get(s, phase, "executions")
            if not e:
                return "-"
            return f"{e['executed']:,} / {e['missing']:,} / {e['duplicates']:,}"
        return cell

    def rate_s(per_s: str, secs: str) -> Callable[[dict[str, Any]], str]:
        return lambda s: f"{fmt(_get(s, 'phase_a', per_s))} ({fmt(_get(s, 'phase_a', secs), 2)} s)"

    return [
        ("worker", lambda s: s["worker"]),
        ("A: enqueue", lambda s: str(_get(s, "phase_a", "method") or "-")),
        ("A: accepted tasks/s (first enqueue to last returned)", rate_s("accepted_per_s", "enqueue_s")),
        ("A: completed tasks/s end to end (first enqueue to last start)", rate_s("completed_per_s", "completed_s")),
        ("A: drain after the last enqueue, s", lambda s: fmt(_get(s, "phase_a", "drain_after_last_enqueue_s"), 2)),
        ("A: executed / missing / duplicates", execs("phase_a")),
        ("A: pickup under saturation, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_a", "pickup_ms"), 0)),
        *_cpu_rows("phase_a", "A"),
        ("B: sent, achieved rate/s", lambda s: f"{fmt(_get(s, 'phase_b', 'sent'))}, "
                                               f"{fmt(_get(s, 'phase_b', 'achieved_rate'), 1)}"),
        ("B: pickup latency, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_b", "pickup_ms"))),
        ("B: enqueue call, p50 / p99 / max ms", lambda s: _lat(_get(s, "phase_b", "enqueue_call_ms"), 2)),
        ("B: executed / missing / duplicates", execs("phase_b")),
        *_cpu_rows("phase_b", "B"),
        ("worker ready (start to warm-up done), s", lambda s: fmt(s.get("worker_ready_s"), 2)),
        ("error", lambda s: s.get("error") or "-"),
    ]


def format_table(result: dict[str, Any]) -> str:
    systems = list(result["systems"].values())
    lines = ["| figure | " + " | ".join(s["label"] for s in systems) + " |",
             "| --- |" + " ---: |" * len(systems)]
    for name, cell in table_rows():
        lines.append(f"| {name} | " + " | ".join(" ".join(cell(s).replace("|", "/").split()) for s in systems) + " |")
    return "\n".join(lines)


def format_report(result: dict[str, Any], command: str) -> str:
    cfg, m, v = result["config"], result["machine"], result["versions"]
    ver = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    lines = [
        "# Peers: Celery + Redis and Dramatiq + Redis, no-op tasks (loadtest/peers/run_peers.py)",
        "",
        f"Run {result['started']} with `{command}`.",
        "",
        f"Machine: nproc {m['nproc']}, python {m['python']}, git {m['git']}, load average at start"
        f" {m['loadavg_start']}, at end {m['loadavg_end']}. Versions: {ver}.",
        "",
        f"Phase A: {cfg['n']:,} no-op tasks enqueued by one producer in batches of {cfg['batch']:,}. Phase B:"
        f" {cfg['rate']:g} tasks/s for {cfg['seconds']:g} s, one enqueue call per task. Each system has its own"
        f" redis-server (no persistence) and worker process, warmed up with {cfg['warmup']} tasks. A task's start is"
        f" recorded in-process (StartRecorder.record, {result['record_cost_us']} us per call) and pushed to Redis"
        " in batches every 20 ms by a thread of the worker process.",
        "",
        format_table(result),
        "",
        "Worker commands:",
        "",
    ]
    for s in result["systems"].values():
        cmd = " ".join(["python", *s["worker_command"][1:]]) if s["worker_command"] else "-"
        lines.append(f"- {s['label']}: `{cmd}`")
    lines += ["", "Phase A per worker process: tasks executed (pid: count) and CPU seconds:", ""]
    for s in result["systems"].values():
        lines.append(f"- {s['label']}: tasks {_get(s, 'phase_a', 'executions', 'by_process') or '-'};"
                     f" CPU s {_get(s, 'phase_a', 'cpu', 'worker_by_process') or '-'}")
    lines += ["", "CPU is utime + stime from /proc over each phase (to when the last task's record was seen),"
              " divided by the phase's tasks; 'worker' is the worker's main process and all its children,"
              " 'everything else' the rest of the machine (other people's work on a shared machine).", ""]
    return "\n".join(lines)
