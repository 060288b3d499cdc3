"""Graphs on the admin endpoint, in JSON: what the console's graph page and `taskring graph`
call. Reads need a viewer, changes an operator; every change needs a `reason` and is audited
(ops/graphs.py).

    GET  /api/graphs/<ns>/<graph_id>                    every task: state, edges, what it waits for
    POST /api/graphs/<ns>/<graph_id>/tasks/<key>/skip   {reason}: skip this step, run what follows
    POST /api/graphs/<ns>/<graph_id>/cancel             {reason, mode: graceful|immediate}
"""
from __future__ import annotations

from dispatcher.admin import routes as rt
from dispatcher.admin.routes import Request, Response
from dispatcher.auth.identity import Role
from dispatcher.ops.dead_letters import Actor
from dispatcher.ops.graphs import GraphOps

_GRAPH = r"(?P<namespace>[a-z0-9][a-z0-9._-]{0,63})/(?P<graph_id>[A-Za-z0-9][A-Za-z0-9._:-]{0,63})"
_KEY = r"(?P<key>[A-Za-z0-9][A-Za-z0-9._:-]{0,127})"


class GraphRoutes:
    def __init__(self, ops: GraphOps):
        self._ops = ops

    def routes(self) -> list[rt.Route]:
        return [
            rt.route("GET", f"/api/graphs/{_GRAPH}", Role.VIEWER, self.show),
            rt.route("POST", f"/api/graphs/{_GRAPH}/tasks/{_KEY}/skip", Role.OPERATOR, self.skip),
            rt.route("POST", f"/api/graphs/{_GRAPH}/cancel", Role.OPERATOR, self.cancel),
        ]

    def show(self, req: Request) -> Response:
        return Response.of_json(self._ops.show(req.params["namespace"], req.params["graph_id"]))

    def skip(self, req: Request) -> Response:
        body = req.json()
        return Response.of_json(self._ops.skip(req.params["namespace"], req.params["graph_id"], req.params["key"],
                                               Actor(req.identity, req.address, str(body.get("reason") or ""))))

    def cancel(self, req: Request) -> Response:
        body = req.json()
        return Response.of_json(self._ops.cancel(req.params["namespace"], req.params["graph_id"],
                                                 str(body.get("mode") or "graceful"),
                                                 Actor(req.identity, req.address, str(body.get("reason") or ""))))
