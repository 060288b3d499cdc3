"""The admin endpoint of a node, for SREs and for Kubernetes probes.

    GET /ring      JSON: members, every slot's desired and actual owner, epoch,
                   task types, Kafka lag, MySQL pending; the ZooKeeper session
    GET /          the same, as a page a person can read in a browser
    GET /metrics   Prometheus text format
    GET /healthz   200 while the process serves (liveness)
    GET /readyz    200 while the node has a live ZooKeeper session and is not holding

Everything but the probes requires the admin token (`Authorization: Bearer
<token>` or `?token=`) unless the node was started without one for local use.
A stdlib threading server keeps it independent of the node's event loop, so a
busy loop never makes the probes time out. The node decides what alive and ready
mean (dispatcher/node.py); this module only serves the answers.
"""
from __future__ import annotations

import hmac
import html
import json
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST


class AdminServer:
    def __init__(self, *, host: str, port: int, token: str | None, ring: Callable[[], dict],
                 ready: Callable[[], tuple[bool, str]], alive: Callable[[], tuple[bool, str]],
                 registry: CollectorRegistry):
        self._host, self._port, self._token = host, port, token
        self._ring, self._ready, self._alive, self._registry = ring, ready, alive, registry
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def start(self) -> None:
        if self._server is not None:
            return
        self._server = ThreadingHTTPServer((self._host, self._port), self._handler_class())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="admin-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def _authorized(self, headers, query: dict) -> bool:
        if self._token is None:
            return True
        given = ""
        auth = headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[len("Bearer "):]
        elif "token" in query:
            given = query["token"][0]
        return hmac.compare_digest(given.encode(), self._token.encode())

    def _handler_class(self):
        admin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: probes hit this every few seconds
                pass

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, code: int, data) -> None:
                self._send(code, json.dumps(data, indent=1, sort_keys=True, default=str).encode(), "application/json")

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                query = urllib.parse.parse_qs(url.query)
                if url.path in ("/healthz", "/readyz"):
                    ok, why = (admin._alive if url.path == "/healthz" else admin._ready)()
                    return self._json(200 if ok else 503, {"ok": ok, "reason": why})
                if not admin._authorized(self.headers, query):
                    return self._json(401, {"error": "admin token required (Authorization: Bearer <token>)"})
                try:
                    if url.path == "/ring":
                        return self._json(200, admin._ring())
                    if url.path == "/metrics":
                        return self._send(200, generate_latest(admin._registry), CONTENT_TYPE_LATEST)
                    if url.path == "/":
                        return self._send(200, render_page(admin._ring()).encode(), "text/html; charset=utf-8")
                except Exception as exc:  # the admin view must not take the node down
                    return self._json(500, {"error": f"{type(exc).__name__}: {exc}"})
                return self._json(404, {"error": f"no such path {url.path}"})

        return Handler


def _color(name: str | None) -> str:
    if not name:
        return "#ddd"
    h = sum(name.encode()) * 47 % 360
    return f"hsl({h},60%,80%)"


def _ring_svg(slots: list[dict], size: int = 320) -> str:
    """The ring itself: one arc per slot, the inner band its actual owner, the outer
    band its desired owner, so a slot in motion shows two colours."""
    import math
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
