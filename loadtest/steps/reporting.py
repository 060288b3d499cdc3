"""The step load's report: the markdown (per-step table and timeline) and the summary it prints.
"""
from __future__ import annotations

from typing import Any

from loadtest.bench.report import fmt

# ---------------------------------------------------------------- output

def format_report(result: dict[str, Any]) -> str:
    p = result["params"]
    t = result["totals"]
    L = ["# Step load with Locust: locust_steps.py", "",
         f"Run {result['started_at']} with `{result['command']}`.", "",
         "Machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()) + ".", "",
         f"System under load: {p['nodes']} taskring node(s) ({p['mode']}), {p['executors']} executor process(es)"
         f" (SDK Executor, no-op handler, max_in_flight {p['executor_max_in_flight']}), {p['task_types']} task"
         f" types over {p['slots']} slots, delay {p['delay_ms']} ms (route threshold {p['route_threshold_ms']} ms)."
         f" Load: Locust master + {p['locust_workers']} worker processes, `{p['locust_command']}`.", "",
         f"Fixed rate: each user calls SubmitBatch x {p['batch']} at a constant pace of"
         f" {p['user_rate_calls_per_s']:.4g} calls/s (locust_rate.py: Locust's `constant_throughput`, anchored at"
         " each user's random start), so a step of U users offers"
         f" U x {p['batch']} x {p['user_rate_calls_per_s']:.4g} tasks/s; the step shape only changes U. A call"
         " slower than its period is not made up for: then *accepted* falls below *target*.", "",
         "| step | users | target tasks/s | accepted tasks/s | completed tasks/s | pickup p50 ms | pickup p99 ms |"
         " pickup max ms | SubmitBatch p50 / p99 ms | Locust failures | machine busy % |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in result["steps"]:
        pk, sb = s["pickup_ms"], s["submit_batch_ms"]
        accepted, completed = fmt(s["accepted_per_s"]), fmt(s["completed_per_s"])
        if s["users"] is None:  # the drain: acks of calls still in flight when the load stopped, as a count
            accepted, completed = f"{s['accepted']:,} late acks", f"{completed} ({s['completed']:,} tasks)"
        L.append(f"| {s['step']} ({s['end_s'] - s['measured_from_s']:.0f} s) | {fmt(s['users'])} |"
                 f" {fmt(s['target_per_s'])} |"
                 f" {accepted} | {completed} | {fmt(pk.get('p50'))} |"
                 f" {fmt(pk.get('p99'))} | {fmt(pk.get('max'))} | {fmt(sb.get('p50'))} / {fmt(sb.get('p99'))} |"
                 f" {s['failures'] + s['user_errors']} | {fmt(s['cpu'].get('machine_busy_pct'))} |")
    ramp = next((s["measured_from_s"] - s["start_s"] for s in result["steps"] if s["users"]), 0.0)
    L += ["", f"Each step is measured from {ramp:.1f} s after it began (one user period: the users it adds make"
          " their first calls at random points of it) to its end; (N s) is that length. accepted: tasks acked to"
          " Locust in it, per second; completed: tasks that reached `succeeded` in the store in it (by"
          " updated_at); pickup: executor start - due time of the tasks due in it; drain: from the end of the"
          " load until the last task of the run succeeded (or the deadline). Every second of the run, ramps"
          " included: the timeline below and the chart.", "",
          f"Totals: {t['acked']:,} tasks acked in {t['calls']:,} calls, {t['failures']} failed calls,"
          f" {t['user_errors']} user errors; store {t['stored']:,} tasks {t['by_status']}; not executed"
          f" {t['not_executed']}, executed more than once {t['executed_more_than_once']}, early starts"
          f" {t['early_starts']}, retried {t['retried']}; drain complete {t['drain_complete']}"
          f" ({t['drain_waited_s']} s). Pickup over the run: p50 {fmt(t['pickup_ms'].get('p50'))} / p99"
          f" {fmt(t['pickup_ms'].get('p99'))} / max {fmt(t['pickup_ms'].get('max'))} ms.", "",
          "CPU by process group, cores used on average in each step (2 cores = 2.0):", ""]
    groups = sorted({g for s in result["steps"] for g in s["cpu"].get("cores", {})})
    L += ["| step | " + " | ".join(groups) + " |", "| --- |" + " ---: |" * len(groups)]
    for s in result["steps"]:
        cores = s["cpu"].get("cores", {})
        L.append(f"| {s['step']} | " + " | ".join(fmt(cores.get(g), 2) for g in groups) + " |")
    errors = sorted({e for s in result["steps"] for e in s["error_samples"]})
    if errors:
        L += ["", "Errors seen: " + "; ".join(f"`{e}`" for e in errors)]
    lo = result.get("locust", {})
    L += ["", f"Locust's own totals (master CSV): {lo.get('requests', '?')} requests, {lo.get('failures', '?')}"
          f" failures, exit codes master {lo.get('master_returncode')} / workers {lo.get('worker_returncodes')};"
          f" tasks accepted as each worker counted them (locustfile.py): {lo.get('workers_reported_accepted')}."
          " (The master's totals can miss the calls of the workers' last report, which they send as they quit;"
          " the records of every call, and the workers' own counts, do not.)"
          " Its summary:", "", "```", *lo.get("summary", []), "```", ""]
    L += ["<details><summary>Timeline, one row per second (also in the .json)</summary>", "",
          "| s | step | target/s | accepted | completed | executed | pickup p50 ms | pickup p99 ms | errors |"
          " node heap | in flight | busy % |",
          "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["timeline"]:
        L.append(f"| {r['t_s']} | {r['step'] or '-'} | {fmt(r['target_per_s'])} | {r['accepted']:,} |"
                 f" {r['completed']:,} | {r['executed']:,} | {fmt(r['pickup_p50_ms'])} | {fmt(r['pickup_p99_ms'])} |"
                 f" {r['errors']} | {fmt(r['heap'])} | {fmt(r['in_flight'])} | {fmt(r['machine_busy_pct'])} |")
    L += ["", "</details>", "", "Chart: locust_steps.png beside this file (or the --report-name's). Every figure: the"
          " .json.", ""]
    return "\n".join(L)


def render_report(result: dict[str, Any], command: str) -> str:
    """format_report for report.write (the command is the result's own)."""
    return format_report(result)


def print_steps(result: dict[str, Any]) -> None:
    print(f"{'step':<8} {'users':>5} {'target/s':>9} {'accepted/s':>10} {'completed/s':>11} {'pickup p50':>10}"
          f" {'p99 ms':>8} {'errors':>6} {'busy %':>6}")
    for s in result["steps"]:
        print(f"{s['step']:<8} {fmt(s['users']):>5} {fmt(s['target_per_s']):>9} {fmt(s['accepted_per_s']):>10}"
              f" {fmt(s['completed_per_s']):>11} {fmt(s['pickup_ms'].get('p50')):>10}"
              f" {fmt(s['pickup_ms'].get('p99')):>8} {s['failures'] + s['user_errors']:>6}"
              f" {fmt(s['cpu'].get('machine_busy_pct')):>6}")
    t = result["totals"]
    print(f"acked {t['acked']:,}; store {t['by_status']}; not executed {t['not_executed']}, twice"
          f" {t['executed_more_than_once']}, early {t['early_starts']}; drain complete {t['drain_complete']}")
