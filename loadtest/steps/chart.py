"""The step load's PNG: offered, accepted and completed tasks/s and pickup, per second (matplotlib).
"""
from __future__ import annotations

import pathlib
from typing import Any


def draw_chart(result: dict[str, Any], path: pathlib.Path) -> None:
    """Throughput (target, accepted, completed) and pickup p50/p99 over time, steps marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["timeline"]
    x = [r["t_s"] + 0.5 for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 7), height_ratios=(3, 2))
    top.step(x, [r["target_per_s"] or 0 for r in rows], where="mid", color="grey", linestyle="--", label="target")
    top.plot(x, [r["accepted"] for r in rows], color="tab:blue", label="accepted (acks)")
    top.plot(x, [r["completed"] for r in rows], color="tab:green", label="completed (store: succeeded)")
    errors = [(xi, r["errors"]) for xi, r in zip(x, rows) if r["errors"]]
    if errors:
        top.scatter([e[0] for e in errors], [0] * len(errors), color="red", marker="x", zorder=3,
                    label=f"seconds with Locust failures ({sum(e[1] for e in errors)} in all)")
    top.set_ylabel("tasks/s")
    top.legend(loc="upper left", fontsize="small")
    for key, color, label in (("pickup_p50_ms", "tab:purple", "pickup p50"), ("pickup_p99_ms", "tab:red",
                                                                             "pickup p99")):
        pts = [(xi, r[key]) for xi, r in zip(x, rows) if r[key] is not None and r[key] > 0]
        bottom.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=label)
    bottom.set_yscale("log")
    bottom.set_ylabel("pickup ms (start - due), by due second")
    bottom.set_xlabel("seconds since the load started")
    bottom.legend(loc="upper left", fontsize="small")
    for s in result["steps"]:
        for ax in (top, bottom):
            ax.axvline(s["start_s"], color="black", linewidth=0.6, alpha=0.5)
            # The ramp, left out of the step's figures in the table.
            ax.axvspan(s["start_s"], s.get("measured_from_s", s["start_s"]), color="grey", alpha=0.12, linewidth=0)
        label = s["step"] if s["target_per_s"] is None else f"{s['step']}: {s['target_per_s']:,.0f}/s"
        top.annotate(label, (s["start_s"], 0), xycoords=("data", "axes fraction"), xytext=(3, 4),
                     textcoords="offset points", fontsize="small")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    p = result["params"]
    fig.suptitle(f"locust_steps: {p['nodes']} node(s) ({p['mode']}), peak {p['peak_per_s']:,.0f} tasks/s,"
                 f" {p['step_s']:g} s steps, SubmitBatch x {p['batch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
