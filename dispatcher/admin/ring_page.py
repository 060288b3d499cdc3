"""The ring as a page a person can read: an SVG ring of slots (inner band: actual owner,
outer band: desired owner) and a table of every slot."""
from __future__ import annotations

import html
import math


def _color(name: str | None) -> str:
    if not name:
        return "#ddd"
    h = sum(name.encode()) * 47 % 360
    return f"hsl({h},60%,80%)"


def _ring_svg(slots: list[dict], size: int = 320) -> str:
    """The ring itself: one arc per slot, the inner band its actual owner, the outer
    band its desired owner, so a slot in motion shows two colours."""
    n = max(1, len(slots))
    c = size / 2
    parts = [f"<svg width='{size}' height='{size}' viewBox='0 0 {size} {size}'>"]
    for i, s in enumerate(slots):
        a0, a1 = 2 * math.pi * i / n - math.pi / 2, 2 * math.pi * (i + 1) / n - math.pi / 2
        for r_in, r_out, owner in ((c * 0.45, c * 0.75, s["actual_owner"]), (c * 0.78, c * 0.95, s["desired_owner"])):
            pts = [(c + r_out * math.cos(a0), c + r_out * math.sin(a0)),
                   (c + r_out * math.cos(a1), c + r_out * math.sin(a1)),
                   (c + r_in * math.cos(a1), c + r_in * math.sin(a1)),
                   (c + r_in * math.cos(a0), c + r_in * math.sin(a0))]
            d = (f"M{pts[0][0]:.1f},{pts[0][1]:.1f} A{r_out:.1f},{r_out:.1f} 0 0 1 {pts[1][0]:.1f},{pts[1][1]:.1f} "
                 f"L{pts[2][0]:.1f},{pts[2][1]:.1f} A{r_in:.1f},{r_in:.1f} 0 0 0 {pts[3][0]:.1f},{pts[3][1]:.1f} Z")
            parts.append(f"<path d='{d}' fill='{_color(owner)}' stroke='#fff'><title>slot {s['slot']}: "
                         f"{html.escape(str(owner))}</title></path>")
        am = (a0 + a1) / 2
        parts.append(f"<text x='{c + c * 0.6 * math.cos(am):.1f}' y='{c + c * 0.6 * math.sin(am) + 4:.1f}' "
                     f"font-size='11' text-anchor='middle'>{s['slot']}</text>")
    parts.append(f"<text x='{c}' y='{c - 4}' font-size='12' text-anchor='middle'>inner: actual</text>"
                 f"<text x='{c}' y='{c + 12}' font-size='12' text-anchor='middle'>outer: desired</text></svg>")
    return "".join(parts)


def render_page(ring: dict) -> str:
    e = html.escape
    rows = []
    for s in ring["slots"]:
        moving = s["desired_owner"] != s["actual_owner"]
        rows.append(
            f"<tr{' class=moving' if moving else ''}><td>{s['slot']}</td>"
            f"<td style='background:{_color(s['desired_owner'])}'>{e(str(s['desired_owner']))}</td>"
            f"<td style='background:{_color(s['actual_owner'])}'>{e(str(s['actual_owner']))}</td>"
            f"<td>{e(str(s['epoch']))}</td><td>{s['kafka_lag_total']}</td><td>{s['mysql_pending']}</td>"
            f"<td>{e(', '.join(s['task_types']))}</td></tr>")
    owned: dict[str, int] = {}
    for s in ring["slots"]:
        owned[str(s["actual_owner"])] = owned.get(str(s["actual_owner"]), 0) + 1
    members = "".join(f"<li style='background:{_color(m)}'><b>{e(m)}</b>: {owned.get(m, 0)} slots</li>"
                      for m in sorted(ring["members"]))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>taskring ring</title>
<meta http-equiv="refresh" content="3">
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:3px 8px;font-size:13px}} tr.moving td{{font-weight:bold;color:#a00}}
li{{padding:3px 8px;margin:2px;list-style:none}} .top{{display:flex;gap:2em;align-items:center}}</style></head><body>
<h1>taskring ring</h1>
<p>Seen from node <b>{e(ring['node'])}</b>; ZooKeeper session: <b>{e(str(ring['zookeeper_session']))}</b>;
{len(ring['members'])} members; {sum(1 for s in ring['slots'] if s['desired_owner'] != s['actual_owner'])}
slots moving. Refreshes every 3 s.</p>
<div class=top>{_ring_svg(ring['slots'])}<ul>{members}</ul></div>
<table><tr><th>slot</th><th>desired owner</th><th>actual owner</th><th>epoch</th><th>kafka lag</th>
<th>mysql pending</th><th>task types</th></tr>{''.join(rows)}</table></body></html>"""
