"""The cluster-handoff figures gathered from the events (re-own times by series), and the
observations drawn from them for the report.
"""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from harness.stats import min_median_max


def summarize(result: dict[str, Any]) -> None:
    """min / median / max of every re-own figure, per series."""
    series: dict[str, list[dict]] = defaultdict(list)
    for e in result.get("events", []):
        if e["kind"] in ("kill -9", "SIGTERM"):
            key = "SIGTERM" if e["kind"] == "SIGTERM" else f"kill -9, session {e['victim_session_ms']} ms"
            series[key].append(e)
    out = {}
    for key, evs in series.items():
        out[key] = {"n": len(evs), "victim_session_ms": ", ".join(sorted({str(e['victim_session_ms']) for e in evs}))}
        for f in ("reown_s_zk_stat", "reown_s_zk_poll", "reown_s_ring_poll", "reown_s_node_moves",
                  "victim_znodes_gone_s_zk_poll", "first_claim_s_zk_stat", "settled_s_zk_poll", "process_exit_s"):
            out[key][f] = min_median_max([e.get(f) for e in evs])
    result["reown_summary"] = out


def observations(result: dict[str, Any]) -> list[str]:
    """Facts worth a sentence, computed (not opinions): anomalies get flagged here."""
    obs = []
    for t, state in result.get("zk_observer_states", []):
        obs.append(f"STACK TROUBLE: the benchmark's own ZooKeeper connection went {state} at"
                   f" {dt.datetime.fromtimestamp(t).isoformat(timespec='milliseconds')} (a ZooKeeper restart or stall):"
                   " figures around that time are not the cluster's own.")
    nb = result.get("neighbours", {})
    for v in nb.get("others_top", []):
        if v["cpu_s"] >= 2.0:
            obs.append(f"SHARED MACHINE: `{v['cmd']}` (not this benchmark) used {v['cpu_s']:.1f} CPU s"
                       f" between {v['first_s']} s and {v['last_s']} s of this run.")
    c = result.get("counts", {})
    if c.get("lost_total"):
        obs.append(f"LOST TASKS: {c['lost_total']} acked tasks did not succeed ({c['lost_by_status']}).")
    if not result.get("drain", {}).get("complete", True):
        obs.append(f"The drain did not complete: {result['drain']['status_counts']}.")
    late = c.get("over_10s_late", [])
    if late:
        by: dict[str, list[dict]] = defaultdict(list)
        for x in late:
            by[x["phase"]].append(x)
        for ph, xs in by.items():
            unk = sum(1 for x in xs if x["unknown_submit"])
            obs.append(f"LATE TASKS: {len(xs)} tasks of {ph} first ran {min(x['late_ms'] for x in xs) / 1000:.1f}-"
                       f"{max(x['late_ms'] for x in xs) / 1000:.1f} s after they were due ({unk} of them from a"
                       f" SubmitBatch that failed with no answer; slots {sorted({x['slot'] for x in xs})}).")
    for e in result.get("events", []):
        if e["kind"] in ("join", "leave"):
            if not e["only_to_from_that_node"]:
                obs.append(f"{e['name']}: a slot moved between nodes other than {e['node']}.")
            if not e["matches_ring"]:
                obs.append(f"{e['name']}: moved {e['moved_slots']}, the ring predicts {e['predicted_by_ring']}.")
            if e["transient_other_owners"]:
                obs.append(f"{e['name']}: slots owned in between by a third node: {e['transient_other_owners']}.")
        else:
            if not e["epochs_bumped"]:
                obs.append(f"{e['name']}: an epoch was not bumped: {e['epochs']}.")
            if e.get("exit_code") not in (0, -9):
                obs.append(f"{e['name']}: {e['victim']} exited with {e['exit_code']}.")
            if e["kind"] == "kill -9":
                budget = e["victim_session_ms"] / 1000 + 1.5
                if e["reown_s_zk_stat"] > budget:
                    obs.append(f"{e['name']}: re-owned after {e['reown_s_zk_stat']:.2f} s,"
                               " over session timeout + 1.5 s.")
    return obs


# ================================================================ the command line
