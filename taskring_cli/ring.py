"""`taskring ring`: the admin endpoint's /ring as a table in the terminal."""
from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.request


def fetch_ring(admin_url: str, token: str | None = None, timeout_s: float = 5.0,
               context: ssl.SSLContext | None = None) -> dict:
    """`context`: the CA and client certificate of an HTTPS endpoint (taskring_cli/admin_client.py)."""
    request = urllib.request.Request(admin_url.rstrip("/") + "/ring")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
        return json.loads(response.read())


def _quiet(s: dict) -> bool:
    """A slot with nothing to show: no task types, no lag, nothing pending, owned by its desired owner."""
    return (not s["task_types"] and not s["kafka_lag_total"] and not s["mysql_pending"]
            and s["desired_owner"] == s["actual_owner"])


def format_ring(ring: dict, busy_only: bool = False) -> str:
    """The ring as a table, one row a slot. `busy_only`: leave out the quiet slots (the demo's
    printout: of 64 slots, its six task types use six), saying how many were left out."""
    lines = [f"node {ring['node']}  zookeeper {ring['zookeeper_session']}  members: "
             + ", ".join(sorted(ring["members"]))]
    header = (f"{'slot':>4}  {'desired owner':<18} {'actual owner':<18} {'epoch':>5} {'lag':>6} {'pending':>8}"
              "  task types")
    lines += [header, "-" * len(header)]
    shown = [s for s in ring["slots"] if not (busy_only and _quiet(s))]
    for s in shown:
        mark = " *" if s["desired_owner"] != s["actual_owner"] else ""
        lines.append(f"{s['slot']:>4}  {str(s['desired_owner']):<18} {str(s['actual_owner']):<18} "
                     f"{str(s['epoch']):>5} {s['kafka_lag_total']:>6} {s['mysql_pending']:>8}  "
                     f"{', '.join(s['task_types'])}{mark}")
    if len(shown) < len(ring["slots"]):
        lines.append(f"({len(ring['slots']) - len(shown)} more slots, each idle and owned by its desired owner:"
                     " taskring ring shows every slot)")
    counts: dict[str, int] = {}
    for s in ring["slots"]:
        counts[str(s["actual_owner"])] = counts.get(str(s["actual_owner"]), 0) + 1
    lines.append("slots per owner: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    lines.append(balance_line(ring))
    return "\n".join(lines)


def balance_line(ring: dict) -> str:
    """How evenly the ring spreads the slots over the members (a member owning none counts):
    `balance: 3 members, slots per member max 7 / min 3 (2.33x), ideal 5.3`. With few slots a
    consistent-hash ring is lumpy (16 slots over the demo's 3 nodes split 3/7/6, 2.33x); more slots
    even it out (64, the default, split 23/20/21, 1.15x)."""
    members = sorted(ring["members"])
    per = {m: 0 for m in members}
    unowned = 0
    for s in ring["slots"]:
        owner = s["actual_owner"]
        if owner in per:
            per[owner] += 1
        elif owner is None:
            unowned += 1
    if not per:
        return f"balance: no members; {unowned} slots unowned"
    most, least = max(per.values()), min(per.values())
    ratio = f"{most / least:.2f}x" if least else "inf"
    line = (f"balance: {len(per)} member{'s' if len(per) != 1 else ''}, slots per member max {most} / min {least}"
            f" ({ratio}), ideal {len(ring['slots']) / len(per):.1f}")
    return line + (f"; {unowned} unowned" if unowned else "")


def print_ring(admin_url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> int:
    try:
        ring = fetch_ring(admin_url, token, context=context)
    except urllib.error.HTTPError as exc:
        print(f"taskring ring: {admin_url}: HTTP {exc.code}: {exc.read().decode(errors='replace')}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"taskring ring: cannot reach {admin_url}: {exc}", file=sys.stderr)
        return 1
    print(format_ring(ring))
    return 0
