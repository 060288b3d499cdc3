"""The cluster-handoff report: the tables (printed and in the markdown) and the markdown around them.
"""
from __future__ import annotations

from typing import Any

from loadtest.bench import report
from loadtest.bench.report import fmt, fmt_pct, fmt_range
from loadtest.handoff.scenario import WINDOW_MS, task_types


def twice_lost(result: dict[str, Any], event: dict[str, Any]) -> str:
    """The "twice | lost" cells of an event's row: its phase's tasks run twice or more, and acked but lost."""
    c = result.get("counts", {}).get("per_phase", {}).get(event["name"], {})
    return f"{c.get('executed_twice_or_more', '-')} | {c.get('lost_acked_not_succeeded', '-')}"


def format_tables(result: dict[str, Any]) -> str:
    L: list[str] = []
    rm = result.get("ring_model")
    if rm:
        L += ["### Ring model: slots moved by one join (cluster.ring.desired_owners, 160 vnodes)", "",
              f"Name sets: {rm['sets']} (each set grown one node at a time, 1 to 8 nodes). A leave N+1 -> N"
              " moves exactly the slots of the join N -> N+1 with the same names.", "",
              "| slots | join | ideal 1/N | mean | min | max | stdev | joins moving nothing |"
              " largest owner's share after (mean / max) | smallest share after (mean) |"
              " sets with an idle node after |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in rm["rows"]:
            if r["from"] < 2:
                continue
            L.append(f"| {r['slots']} | {r['from']} -> {r['to']} | {r['ideal']:.3f} | {r['mean']:.3f} |"
                     f" {r['min']:.3f} | {r['max']:.3f} | {r['stdev']:.3f} |"
                     f" {r['joins_moving_nothing']} of {r['sets']} |"
                     f" {r['share_of_largest_owner_after_mean']:.3f} / {r['share_of_largest_owner_after_max']:.3f} |"
                     f" {r['share_of_smallest_owner_after_mean']:.3f} | {r['sets_with_an_idle_node_after']} |")
        L += ["", f"Slots that moved to a node other than the joiner: {rm['moves_to_a_node_other_than_the_joiner']}"
              f" in {rm['transitions']} transitions. For the names n1..n8: "
              + ", ".join(f"{k} {v}" for k, v in rm["n1_to_n8_moved_slots"].items() if k.startswith("16:"))
              + " (16 slots)."]
    evs = result.get("events", [])
    mem = [e for e in evs if e["kind"] in ("join", "leave")]
    if mem:
        L += ["", "### Membership changes in the live cluster (16 slots)", "",
              "| change | node | slots moved | ideal (16/N) | only to/from that node | as the ring predicts |"
              " other owners in between | handoff s (zk stat) | settled s (zk poll) | twice | lost |",
              "| --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: |"]
        for e in mem:
            L.append(f"| {e['name']} | {e['node']} | {e['moved']} {e['moved_slots']} | {e['ideal']:.1f} |"
                     f" {'yes' if e['only_to_from_that_node'] else 'NO'} | {'yes' if e['matches_ring'] else 'NO'} |"
                     f" {len(e['transient_other_owners']) or 'none'} | {e['handoff_s_zk_stat']:.2f} |"
                     f" {e['settled_s_zk_poll']:.2f} | {twice_lost(result, e)} |")
        L += ["", "Handoff and settle times are from the joiner's registration (/nodes znode ctime) for a join, from"
              " the SIGTERM for a leave; *handoff (zk stat)* is the last moved slot's epoch write (znode mtime)."
              " Joiner's process start to registration: "
              + ", ".join(f"{e['node']} {e['registered_after_start_s']:.2f} s" for e in mem if e["kind"] == "join")
              + "."]
    ro = [e for e in evs if e["kind"] in ("kill -9", "SIGTERM")]
    if ro:
        L += ["", "### Time to re-own the slots of a stopped node (seconds from the signal)", "",
              "| series | victim session | n | zk stat: all epochs written | zk poll (50 ms) | /ring poll (50 ms) |"
              " node moves | victim znodes gone (poll) | first claim (zk stat) |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for series, rows in result.get("reown_summary", {}).items():
            L.append(f"| {series} | {rows['victim_session_ms']} ms | {rows['n']} |"
                     f" {fmt_range(rows['reown_s_zk_stat'])} |"
                     f" {fmt_range(rows['reown_s_zk_poll'])} | {fmt_range(rows['reown_s_ring_poll'])} |"
                     f" {fmt_range(rows['reown_s_node_moves'])} | {fmt_range(rows['victim_znodes_gone_s_zk_poll'])} |"
                     f" {fmt_range(rows['first_claim_s_zk_stat'])} |")
        L += ["", "Cells are min / median / max.", "",
              "| event | victim | slots | zk stat | zk poll | /ring | node moves | gone | process exit"
              " | twice | lost |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in ro:
            L.append(f"| {e['name']} | {e['victim']} | {len(e['victim_slots'])} {e['victim_slots']} |"
                     f" {e['reown_s_zk_stat']:.2f} | {e['reown_s_zk_poll']:.2f} | {fmt(e['reown_s_ring_poll'], 2)} |"
                     f" {fmt(e['reown_s_node_moves'], 2)} | {e['victim_znodes_gone_s_zk_poll']:.2f} |"
                     f" {fmt(e['process_exit_s'], 2)} | {twice_lost(result, e)} |")
    if evs and "dip" in evs[0]:
        L += ["", f"### Throughput through each event ({WINDOW_MS} ms windows of executor runs, tasks/s)", "",
              "| event | all: baseline | lowest window (at s) | below 80% s (longest) | back >= 80% for 1 s at s |"
              " moving slots: baseline | lowest | below 80% s | other slots: baseline | lowest | below 80% s |"
              " acked submits: baseline | lowest |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            d, m, o, sb = e["dip"], e.get("dip_moving_slots"), e.get("dip_other_slots"), e.get("submits")

            def part(x):
                if not x:
                    return "- | - | -"
                return (f"{x['baseline_per_s']:.0f} | {fmt(x['min_window_per_s'])} |"
                        f" {x['below_80pct_s']:.2f}")
            L.append(f"| {e['name']} | {d['baseline_per_s']:.0f} | {fmt(d['min_window_per_s'])}"
                     f" ({fmt(d['min_window_at_s'], 2)}) | {d['below_80pct_s']:.2f}"
                     f" ({d['longest_below_80pct_s']:.2f}) |"
                     f" {fmt(d['recovered_at_s'], 2)} | {part(m)} | {part(o)} |"
                     f" {part(sb).rsplit(' |', 1)[0]} |")
        L += ["", "Seconds after the event (a join: the joiner's process start). Baseline: median of the windows in the"
              f" {result['params']['baseline_s']:g} s before the event. *Moving slots*: the victim's slots (re-own)"
              " or the slots that changed owner (join/leave); *other slots*: the rest. *Acked submits*: tasks acked per"
              " window by submit time (is the offered load itself disturbed?). Noise floor: in the baseline"
              " windows themselves, "
              + f"{sum(e['dip']['baseline_windows_below_80pct'] for e in evs)} of"
              f" {sum(e['dip']['baseline_windows'] for e in evs)} (all events) were below 80% of their median.", "",
              "### CPU through each event (cores, mean over the event's windows; 2 cores in all)", "",
              "| event | CPU busy | nodes | executor + load + this process | stack servers"
              " | not this benchmark (mean / max) |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            mc = e.get("machine") or {}
            L.append(f"| {e['name']} | {fmt_pct(mc.get('cpu_busy_mean'))} | {fmt(mc.get('nodes_cores_mean'), 2)} |"
                     f" {fmt(mc.get('bench_cores_mean'), 2)} | {fmt(mc.get('stack_cores_mean'), 2)} |"
                     f" {fmt(mc.get('others_cores_mean'), 2)} / {fmt(mc.get('others_cores_max'), 2)} |")
        L += ["", "### Lateness through each event (first start - due, ms)", "",
              "| event | baseline p50 | baseline p99 | around: p50 | p99 | max | moving slots: p99 | max |"
              " other slots: p99 | max |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in evs:
            d, m, o = e["dip"], e.get("dip_moving_slots"), e.get("dip_other_slots")
            lb, lh = d["lateness_baseline_ms"], d["lateness_handoff_ms"]
            mh = m["lateness_handoff_ms"] if m else {}
            oh = o["lateness_handoff_ms"] if o else {}
            L.append(f"| {e['name']} | {fmt(lb['p50'])} | {fmt(lb['p99'])} | {fmt(lh['p50'])} |"
                     f" {fmt(lh['p99'])} | {fmt(lh['max'])} | {fmt(mh.get('p99'))} | {fmt(mh.get('max'))} |"
                     f" {fmt(oh.get('p99'))} | {fmt(oh.get('max'))} |")
        L += ["", "Tasks due in [event - 1 s, re-owned/settled + 1 s] (*around*) or in the baseline seconds; every"
              " task counted once, at its first run."]
    c = result.get("counts")
    if c:
        L += ["", "### Tasks", "",
              f"Acked {c['acked']:,}; stored {c['stored']:,}; runs {c['runs']:,} of {c['tasks_run']:,} tasks;"
              f" executed twice or more: {c['executed_twice_total']}; lost (acked, not succeeded at the end):"
              f" {c['lost_total']} {c['lost_by_status'] or ''}; submits with unknown outcome (RPC error):"
              f" {c['unknown_submits']} {c['submit_errors'] or ''} -> {c['unknown_submit_outcomes'] or ''};"
              f" offered-but-skipped (generator behind): {c['skipped_behind']}; SubmitBatch ms p50"
              f" {fmt(c['submit_rpc_ms']['p50'], 1)}, p99 {fmt(c['submit_rpc_ms']['p99'], 1)}.", "",
              "| scenario | acked | executed | twice+ | same attempt | lost | unknown submits (stored / succeeded) |"
              " first run > 10 s late |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for ph, v in c["per_phase"].items():
            L.append(f"| {ph} | {v['acked']} | {v['executed_tasks']} | {v['executed_twice_or_more']} |"
                     f" {v['of_which_same_attempt']} | {v['lost_acked_not_succeeded']} |"
                     f" {v['unknown_submits']} ({v['unknown_stored']} / {v['unknown_succeeded']}) |"
                     f" {v['ran_over_10s_late']} |")
        L += ["", "*Executed* counts the scenario's tasks (acked or not) that ran at least once; *twice+* those that"
              " ran more than once (*same attempt*: a repeat of one attempt number; otherwise the rerun came as"
              " the next attempt); *lost*: acked but not succeeded at the end; *unknown submits*: in a SubmitBatch"
              " that failed (no answer), with how many were stored and succeeded anyway."]
        if c.get("duplicates"):
            L += ["", "Tasks that ran twice (start of each run, ms from the event):", ""]
            for d in c["duplicates"]:
                L.append(f"- {d['phase']}: type {d['task_type']} (slot {d['slot']}, {d['path']} path): "
                         + ", ".join(f"attempt {r['attempt']} epoch {r['epoch']} at {r['start_ms_from_event']:+d}"
                                     for r in d["runs"]))
        if c.get("submit_error_detail"):
            L += ["", "Failed SubmitBatch calls (s into the run, target, error, tasks): "
                  + "; ".join(f"{t} s {tg} `{err}` x{n}" for t, tg, err, n in c["submit_error_detail"]) + "."]
    return "\n".join(L)


def render_report(result: dict[str, Any], command: str) -> str:
    """The whole markdown report."""
    lines = report.heading("Cluster handoff: re-own time, slots moved, throughput dip", result, command,
                           result.get("seconds"))
    if result.get("machine_during"):
        lines.append(f"Load average at the end: {', '.join(f'{x:.2f}' for x in result['machine_during']['loadavg'])}.")
    lines.append("")
    p = result["params"]
    if result.get("events"):
        lines += [f"Cluster: 16 slots, nodes as processes against a private database/chroot/topics; session timeout"
                  f" {p['session_ms']} ms unless stated; offered load {p['rate']:.0f} tasks/s in SubmitBatch of"
                  f" {p['batch']} ({p['load_threads']} sender threads, round-robin over the live nodes minus the"
                  f" victim), {len(task_types())} task types (4 per slot), {p['long_delay_share']:.0%}"
                  f" delayed 2-3 s (MySQL path), the rest 0 or 0.1-1 s (Kafka path); one executor process"
                  f" (max_in_flight {p['max_in_flight']})."
                  f" Startup to settled: {result.get('startup_to_settled_s', 0):.2f} s."
                  f" ZooKeeper poll: p50 {fmt(result['zk_poll_ms']['p50'], 1)} ms,"
                  f" p99 {fmt(result['zk_poll_ms']['p99'], 1)} ms per poll of all znodes.", ""]
    lines += [format_tables(result), ""]
    nb = result.get("neighbours")
    if nb:
        lines += [f"Machine during the run: CPU busy (both cores) mean {fmt_pct(nb['cpu_busy_mean'])},"
                  f" max {fmt_pct(nb['cpu_busy_max'])} (1 s samples); load average max {fmt(nb['loadavg_max'], 2)}."
                  f" CPU seconds over {nb['wall_s']:.0f} s (of {2 * nb['wall_s']:.0f} available): nodes"
                  f" {nb['cpu_s_by_group'].get('nodes', 0):.0f}, executor + load + this process"
                  f" {nb['cpu_s_by_group'].get('bench', 0):.0f},"
                  f" stack servers {nb['cpu_s_by_group'].get('stack', 0):.0f},"
                  f" everything else {nb['cpu_s_by_group'].get('others', 0):.0f}"
                  + (" (" + "; ".join(f"`{v['cmd'][:70]}` {v['cpu_s']:.1f}" for v in nb["others_top"][:4]
                                      if v["cpu_s"] >= 0.5) + ")"
                     if any(v["cpu_s"] >= 0.5 for v in nb["others_top"]) else "") + ".", ""]
    if result.get("observations"):
        lines += ["## Observations", ""] + [f"- {o}" for o in result["observations"]] + [""]
    lf = result.get("log_findings")
    if lf:
        lines += ["## Node logs: WARNING/ERROR lines", "", f"Logs: `{result['logs']}` (kept after the run).", ""]
        for node, v in lf.items():
            lines.append(f"- **{node}** ({v['lines']} lines): {v['warnings_errors']} warning/error lines")
            for shape, n in list(v["by_shape"].items())[:6]:
                lines.append(f"    - {n} x `{shape.strip()}`")
        lines.append("")
    tl = result.get("timeline")
    if tl:
        lines += ["## Timeline", "", "```"] + [f"{t:8.2f}s  {w}" for t, w in tl] + ["```", ""]
    lines += ["How this is measured and how to read it: loadtest/README.md. Every figure, including the 250 ms"
              " windows of every event: the .json beside this file.", ""]
    return "\n".join(lines)
