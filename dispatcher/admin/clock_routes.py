"""The movable clock of `taskring dev` on the admin endpoint, for tests in any language:

    GET  /api/dev/clock                   {"now_ms", "now"}
    POST /api/dev/clock  {"advance_ms"}   move time forward; answers once what became due was woken

Served only by a node built on a MovableClock (dispatcher/dev.py); a production node has no such
route. Moving time needs an operator, as any change does.
"""
from __future__ import annotations

from collections.abc import Callable

from dispatcher.admin import routes as rt
from dispatcher.admin.routes import Request, Response
from dispatcher.auth.identity import Role
from dispatcher.base.clock import MovableClock, ms_to_datetime, rfc3339
from dispatcher.base.errors import InvalidArgument

MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000
"""Ten years in one move: more is a unit mistake (seconds taken for milliseconds)."""


class ClockRoutes:
    def __init__(self, clock: MovableClock, moved: Callable[[], None]):
        self._clock = clock
        self._moved = moved   # blocks until the node has acted on the move

    def routes(self) -> list[rt.Route]:
        return [rt.route("GET", "/api/dev/clock", Role.VIEWER, self.show),
                rt.route("POST", "/api/dev/clock", Role.OPERATOR, self.advance)]

    def show(self, req: Request) -> Response:
        return Response.of_json(self._now())

    def advance(self, req: Request) -> Response:
        advance_ms = req.json().get("advance_ms")
        if isinstance(advance_ms, bool) or not isinstance(advance_ms, int) or not 0 <= advance_ms <= MAX_ADVANCE_MS:
            raise InvalidArgument("advance_ms", f"must be a whole number of milliseconds in 0..{MAX_ADVANCE_MS}"
                                                f" (time only moves forward), got {advance_ms!r}")
        self._clock.advance(advance_ms)
        self._moved()
        return Response.of_json(self._now())

    def _now(self) -> dict:
        now_ms = self._clock.now_ms()
        return {"now_ms": now_ms, "now": rfc3339(ms_to_datetime(now_ms))}
