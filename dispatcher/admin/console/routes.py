"""The console's routes: the shell at `/`, its static files under /console/, and /api/live.

The shell and its files carry no data and need no role: a browser loads them first, and the
script then signs in (POST /api/session with the token the operator pastes, or with the
`?token=` of a link, which it then takes out of the address bar) and works on the session
cookie from there on (dispatcher/admin/sessions.py)."""
from __future__ import annotations

import importlib.resources
from collections.abc import Callable

from dispatcher.admin import routes as rt
from dispatcher.admin.console.live import live_view
from dispatcher.admin.routes import Request, Response
from dispatcher.auth.identity import Role

ASSETS = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
"""The static files served, by name: nothing else under static/ is reachable."""


def _read(name: str) -> bytes:
    return importlib.resources.files(__package__).joinpath("static", name).read_bytes()


def console_routes(ring: Callable[[], dict], node_status: Callable[[], dict]) -> list[rt.Route]:
    # Read once: the files are part of the installed package and do not change under a node.
    assets = {name: _read(name) for name in ASSETS}
    shell = _read("index.html").decode()

    def page(req: Request) -> Response:
        return Response.of_html(shell)

    def asset(req: Request) -> Response:
        name = req.params["asset"]
        return Response(200, assets[name], ASSETS[name])

    def live(req: Request) -> Response:
        return Response.of_json(live_view(ring(), node_status()))

    names = "|".join(n.replace(".", r"\.") for n in ASSETS)
    return [
        rt.route("GET", "/", Role.PUBLIC, page),
        rt.route("GET", f"/console/(?P<asset>{names})", Role.PUBLIC, asset),
        rt.route("GET", "/api/live", Role.VIEWER, live),
    ]
