"""One node, end to end: the markdown report, section by section, and the printed summary.
"""
from __future__ import annotations

import re
from typing import Any

from loadtest.bench import report
from loadtest.bench.env import (
    NAMESPACE,
)
from loadtest.bench.report import fmt, table
from loadtest.raw_parts import format_table as raw_format_table

# ---------------------------------------------------------------- what it prints

def fmt_ratio(v: float | None) -> str:
    return fmt(v, 3) if v is not None and v < 10 else fmt(v)


def lat_row(name: str, f: dict[str, Any]) -> str:
    d, k = f["from_due_ms"], f["from_ack_ms"]
    if not d.get("count"):
        return f"| {name} | 0 | - | - | - | - | - | {f['early_starts']} | {f['not_executed']} | - |"
    ack = fmt(k["p50"], 1) if name.startswith("immediate") else "-"  # a delayed task's includes its delay
    return (f"| {name} | {d['count']:,} | {fmt(d['p50'], 1)} | {fmt(d['p90'], 1)} | {fmt(d['p99'], 1)} |"
            f" {fmt(d['max'], 1)} | {fmt(d['min'], 1)} | {f['early_starts']} | {f['not_executed']} | {ack} |")


def format_report(result: dict[str, Any], command: str) -> str:
    p, a, b = result["params"], result.get("phase_a", {}), result.get("phase_b", {})
    node = result.get("node", {})
    L = report.heading("One node, end to end: bench_node.py", result, command) + [""]
    if p.get("nodes", 1) > 1:
        L += [f"**{p['nodes']} node processes** (a cluster on this box; phase A's submitters spread over them). "
              "The node below is the first; the others differ only by id and ports.", ""]
    if p.get("shards", 1) > 1:
        L += [f"**The task store on {p['shards']} shards**: split by slot over the stack's MariaDB servers "
              "(dispatcher/store/sharded.py); the MySQL counters and CPU below cover every shard.", ""]
    if p.get("unique_keys"):
        L += ["**Every phase A task carries a unique key of its own** (each one taken in the insert's "
              "transaction; none is ever held against another task).", ""]
    L += [f"Node: `{node.get('command', '?')}` (route threshold {p['route_threshold_ms']} ms, "
          f"{p['slots']} slots, {p['task_types']} task types spread 2 per slot), {p['executors']} executor process(es) "
          f"(SDK Executor, async no-op handler, max_in_flight {p['executor_max_in_flight']}), "
          f"load generator in this process (AsyncClient). Node ready in {node.get('ready_s')} s, "
          f"stopped on SIGTERM in {node.get('stop_s')} s (exit code {node.get('returncode')}).", ""]
    if a:
        L += phase_a_section(p, a)
    if b:
        L += phase_b_section(p, b)
    if result.get("phase_s"):
        L += phase_s_section(result["phase_s"])
    st = result.get("store")
    if st:
        L += [f"Store after the run: {st['tasks']:,} tasks {st['by_status']}; {st['task_events']:,} task_events"
              f" ({st['events_per_task']:.2f} per task: {st['events_by_state']}); "
              f"tasks with more than one attempt: {st['tasks_with_more_than_one_attempt']}. "
              f"Message sizes: task envelope {result['message_bytes']['task_envelope']} bytes, Kafka QueuedTask "
              f"{result['message_bytes']['queued_task']} bytes.", ""]
    raw = result.get("raw_parts")
    if raw:
        L += [f"## The parts underneath, same run (loadtest/raw_parts.py, node stopped; "
              f"{raw['envelope_bytes']}-byte envelope"
              + (f", the smallest raw_parts makes; the node's message is {raw['requested_bytes']} bytes"
                 if raw['envelope_bytes'] != raw['requested_bytes'] else "") + ")", "",
              raw_format_table(raw), "", "Ratios:", ""]
        L += table([(k, fmt_ratio(v)) for k, v in result["ratios"].items()], ("ratio", "value")) + [""]
    prof = result.get("profile")
    if prof and "error" not in prof:
        L += profile_section(p, a, prof)
    elif prof:
        L += [f"Profile: {prof['error']}", ""]
    if result.get("locust"):
        lo = result["locust"]
        L += ["## Locust (loadtest/locustfile.py) against the same node, after phases A and B", "",
              f"`TASKRING_TARGET=<node> TASKRING_NAMESPACE={NAMESPACE} TASKRING_TASK_TYPES=<the 32 types> "
              f"{lo.get('command')}`: exit {lo.get('returncode')}, {lo.get('wall_s')} s. Its summary:", "", "```"]
        L += [ln for ln in lo.get("output_tail", []) if not re.match(r"\[\d{4}-", ln)]
        L += ["```", ""]
    L += ["What this is and how to read it: loadtest/README.md. Every figure: the .json beside this file.", ""]
    return "\n".join(L)


def phase_s_section(s: dict[str, Any]) -> list[str]:
    c, pk = s["call_ms"], s.get("pickup", {}).get("from_due_ms", {})
    return [f"## Phase S: one caller, one Submit of one immediate task at a time ({s['n']:,} calls, node idle)", "",
            "| figure | value |", "| --- | ---: |",
            f"| Submit call ms p50 / p99 / max | {fmt(c.get('p50'), 2)} / {fmt(c.get('p99'), 2)} / "
            f"{fmt(c.get('max'), 2)} |",
            f"| tasks/s for one caller with one call in flight | {fmt(s['calls_per_s'])} |",
            f"| pickup (handler start - client send) ms p50 / p99 | {fmt(pk.get('p50'), 1)} /"
            f" {fmt(pk.get('p99'), 1)} |",
            f"| complete | {s['complete']} |", ""]


def phase_a_section(p: dict[str, Any], a: dict[str, Any]) -> list[str]:
    pk, er, rpc = a.get("pickup", {}), a.get("execution_rate", {}), a["submit_batch_rpc_ms"]
    L = [f"## Phase A: throughput ({a['accepted']:,} immediate no-op tasks, SubmitBatch x {p['batch']:,},"
         f" {p['submitters']} concurrent submitters)", ""]
    rows = [("accepted tasks/s (first send to last ack)", f"{fmt(a['accepted_per_s'])} ({a['submit_s']:.2f} s)"),
            ("completed tasks/s end to end (first send to last `succeeded`)",
             f"{fmt(a['completed_per_s'])} ({a['end_to_end_s']:.2f} s)"),
            ("drain after the last ack", f"{a['drain_after_last_ack_s']:.2f} s"),
            ("executed/s while submitting / after the last ack",
             f"{fmt(er.get('executed_per_s_while_submitting'))} / {fmt(er.get('executed_per_s_after_last_ack'))}"),
            ("SubmitBatch RPC ms p50 / p99 / max",
             f"{fmt(rpc.get('p50'))} / {fmt(rpc.get('p99'))} / {fmt(rpc.get('max'))}"),
            ("complete", f"{a['complete']} ({a['succeeded']:,} succeeded; {a['batch_error_count']} batch errors)")]
    mw = a.get("mysql_row_writes")
    if mw:
        rows.append(("MySQL row writes per task (Handler_* counters over the phase: inserted / updated / deleted)",
                     f"{fmt(mw['per_task'], 2)} ({mw['inserted']:,} / {mw['updated']:,} / {mw['deleted']:,})"))
        if mw.get("statements_per_task") is not None:
            rows.append(("MySQL statements / commits per task (Questions, Com_commit)",
                         f"{fmt(mw['statements_per_task'], 3)} / {fmt(mw['commits_per_task'], 3)}"))
    if pk:
        d, k = pk["from_due_ms"], pk["from_ack_ms"]
        rows += [("pickup latency, start - acceptance (due_at), p50 / p99 / max",
                  f"{fmt(d.get('p50'))} / {fmt(d.get('p99'))} / {fmt(d.get('max'))} ms"),
                 ("pickup latency, start - ack at the client, p50 / p99",
                  f"{fmt(k.get('p50'))} / {fmt(k.get('p99'))} ms"),
                 ("early starts / not executed / executed twice",
                  f"{pk['early_starts']} / {pk['not_executed']} / {pk['executed_more_than_once']}")]
    L += table(rows) + [""]
    if er.get("executions_per_second_timeline"):
        L += ["Executions started per second of the phase: "
              + ", ".join(f"{x:,}" for x in er["executions_per_second_timeline"]) + ".", ""]
    L += ["Pickup latency in this phase is measured under saturation: tasks are accepted faster than they"
          " are dispatched, so it is mostly time spent queued behind earlier tasks (it grows through the"
          " phase). Phase B's immediate tasks show the pickup latency of a node that is not saturated.", ""]
    cpu = a["cpu"]
    rss = cpu.get("process_rss_mb", {})
    L += [f"CPU during phase A ({cpu['wall_s']} s wall, {cpu['cores']} cores = "
          f"{cpu['wall_s'] * cpu['cores']:.1f} CPU-s available; machine busy "
          f"{cpu['machine_busy_pct_of_all_cores']}%), and each process's resident memory at the end:", "",
          "| process | CPU s | of which kernel | % of one core | RSS MB |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, v in sorted(cpu["process_cpu_s"].items(), key=lambda kv: -(kv[1] or 0)):
        L.append(f"| {name} | {fmt(v, 1)} | {fmt(cpu.get('process_system_cpu_s', {}).get(name), 1)} |"
                 f" {fmt(100 * v / cpu['wall_s'] if v is not None else None)} | {fmt(rss.get(name))} |")
    other = max(0.0, cpu["other_processes_cpu_s"])  # slightly negative = clock-tick jitter
    L += [f"| everything else on the machine | {other:.1f} | | {100 * other / cpu['wall_s']:.0f} | |", ""]
    return L


def phase_b_section(p: dict[str, Any], b: dict[str, Any]) -> list[str]:
    L = [f"## Phase B: timing ({b['accepted']:,} tasks submitted over {b['submit_s']:.1f} s, "
         f"{b['submit_rate_per_s']:,.0f}/s, batches of {p.get('timing_batch', 100)})", "",
         "Lateness = executor start - due_at (SubmitResult.due_at), ms; the path is the one the node"
         " recorded in the task's `queued` event.", "",
         "| tasks | count | p50 | p90 | p99 | max | min | early starts | not executed | start - client ack, p50 |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    L += [lat_row(name, f) for name, f in b.get("lateness", {}).items()]
    L += ["", f"Complete: {b['complete']} ({b['succeeded']:,} succeeded). Planned path != recorded path: "
          f"{b.get('path_mismatches') or 'none'}.", ""]
    bd = b.get("pickup_breakdown")
    if bd:
        L += ["Where the immediate tasks' pickup goes (ms, p50 / p99): "
              + "; ".join(f"{name} {fmt(bd[key].get('p50'), 1)} / {fmt(bd[key].get('p99'), 1)}" for name, key in (
                  ("acceptance -> client ack (insert + produce)", "accept_to_ack_ms"),
                  ("ack -> node's dispatch (consume, heap, pop)", "ack_to_dispatch_ms"),
                  ("dispatch -> executor start (begin_dispatch, Execute call)", "dispatch_to_start_ms")))
              + ".", ""]
    return L


def profile_section(p: dict[str, Any], a: dict[str, Any], prof: dict[str, Any]) -> list[str]:
    unit = "samples" if "note" not in prof else "s"
    hz = p["profile_rate_hz"]
    L = [f"## Profile of the node during phase A ({p['profile']}"
         + (f", {hz} Hz, {prof['samples']:,} samples of threads on CPU" if "note" not in prof
            else f"; {prof['note']}") + ")", ""]
    cpu = a.get("cpu", {})
    nt = prof.get("node_threads_cpu") or []
    py_cpu = sum(t["cpu_s"] for t in nt if t["thread"].startswith("python:"))
    node_cpu = (cpu.get("process_cpu_s") or {}).get("node")
    if node_cpu and p["profile"] == "py-spy-native":
        L += [f"{prof['samples']:,} samples at {hz} Hz, after dropping waits, are"
              f" {prof['samples'] / hz:.1f} thread-seconds, against {node_cpu:.1f} CPU-s the"
              " node used: close enough to read the shares as CPU. py-spy pauses the node for every sample in"
              " this mode, so the node's throughput in this run is not a figure to quote.", ""]
    elif node_cpu and "note" not in prof:
        L += [f"{prof['samples']:,} samples at {hz} Hz are {prof['samples'] / hz:.1f} thread-seconds, against"
              f" {node_cpu:.1f} CPU-s the node used: a sample counts a thread that is running *or ready to run*"
              " (waiting for a core, or just woken from a socket), so shares of waiting-heavy work (MySQL round"
              " trips) read high here. The `py-spy-native` run (reports/bench_node_native.md) drops waits and"
              " approximates CPU.", ""]
    if cpu.get("wall_s") and nt:
        L += [f"The node's Python threads used {py_cpu:.1f} CPU-s in {cpu['wall_s']} s: one GIL was held about"
              f" {min(100, 100 * py_cpu / cpu['wall_s']):.0f}% of the time at most (C code that releases the GIL"
              f" counts here too). Samples are charged to the thread's stack at the moment; at {hz} Hz one sample"
              f" is about {1000 / hz:.0f} ms of a thread on CPU.", ""]
    if nt:
        L += ["Node CPU by thread (from /proc; Python threads named by py-spy):", "",
              "| thread | threads | CPU s |", "| --- | ---: | ---: |"]
        L += [f"| {t['thread']} | {t['threads']} | {t['cpu_s']:.2f} |" for t in nt] + [""]
    if prof.get("dropped_wait_samples") or prof.get("dropped_cond_wait_samples"):
        L += [f"(Dropped: {prof['dropped_wait_samples']:,} samples of threads blocked in a known wait (queue,"
              f" select, socket send/recv) and {prof['dropped_cond_wait_samples']:,} samples in pthread_cond_wait"
              " & co. (in a Python thread: mostly waiting for the GIL). The paused mode that native stacks need"
              " counts such threads as running; what is left approximates CPU.)", ""]
    for key, title in (("by_activity_group", "Where the time goes (activities grouped)"),
                       ("by_activity", "By activity (first matching function on the stack)"),
                       ("by_library", "By library (file of the innermost Python frame)"),
                       ("by_thread", "By thread")):
        if prof.get(key):
            L += [f"{title}:", "", f"| what | {unit} | % |", "| --- | ---: | ---: |"]
            L += [f"| {x['name']} | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
    for key, title in (("top_cumulative", "Top 20 by cumulative"), ("top_self", "Top 20 by self")):
        L += [f"{title}:", "", f"| function | {unit} | % |", "| --- | ---: | ---: |"]
        L += [f"| `{x['name']}` | {x['samples']:,} | {x['pct']} |" for x in prof[key]] + [""]
    return L


def print_summary(result: dict[str, Any]) -> None:
    a, b = result.get("phase_a", {}), result.get("phase_b", {})
    rows = []
    if a:
        pk = a.get("pickup", {}).get("from_due_ms", {})
        rows += [("A accepted tasks/s", fmt(a.get("accepted_per_s"))),
                 ("A completed tasks/s end to end", fmt(a.get("completed_per_s"))),
                 ("A pickup p50 / p99 ms (saturated)", f"{fmt(pk.get('p50'))} / {fmt(pk.get('p99'))}")]
    for name, f in b.get("lateness", {}).items():
        d = f["from_due_ms"]
        rows.append((f"B {name}: p50 / p99 / max ms, early",
                     f"{fmt(d.get('p50'), 1)} / {fmt(d.get('p99'), 1)} / {fmt(d.get('max'), 1)}, {f['early_starts']}"))
    ps = result.get("phase_s")
    if ps:
        pk = ps.get("pickup", {}).get("from_due_ms", {})
        rows += [("S one Submit ms p50 / p99; calls/s", f"{fmt(ps['call_ms'].get('p50'), 2)} / "
                  f"{fmt(ps['call_ms'].get('p99'), 2)}; {fmt(ps['calls_per_s'])}"),
                 ("S pickup p50 / p99 ms", f"{fmt(pk.get('p50'), 1)} / {fmt(pk.get('p99'), 1)}")]
    raw = result.get("raw_parts")
    if raw:
        rows += [("raw Kafka produce+consume msgs/s", fmt(raw["kafka"]["combined_per_s"])),
                 ("raw MariaDB insert+claim rows/s", fmt(raw["mysql"]["combined_per_s"]))]
        rows += [(k, fmt_ratio(v)) for k, v in result["ratios"].items()]
    width = max((len(k) for k, _ in rows), default=10)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
