"""Routing of the admin endpoint: each route names the role it needs, and gets the
request already authenticated, so handlers deal only with what they serve.

A handler returns a Response; raising a TaskringError turns into the HTTP status of
its gRPC code (one error tree for both edges), with the message as JSON.
"""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence

import grpc

from dispatcher.auth.identity import Identity, Role
from dispatcher.base.errors import InvalidArgument

HTTP_STATUS_OF_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
}


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    identity: Identity
    address: str
    """The caller's address, for the audit trail ("from where")."""
    params: dict[str, str] = dataclasses.field(default_factory=dict)
    """The route pattern's named groups."""

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else default

    def json(self) -> dict:
        """The body as a JSON object; InvalidArgument naming `body` otherwise."""
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except ValueError as exc:
            raise InvalidArgument("body", f"is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InvalidArgument("body", "must be a JSON object")
        return data


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()
    """More headers (Set-Cookie of a console sign-in)."""

    @staticmethod
    def of_json(data: object, status: int = 200) -> Response:
        return Response(status, json.dumps(data, indent=1, sort_keys=True, default=str).encode(), "application/json")

    @staticmethod
    def of_html(text: str, status: int = 200) -> Response:
        return Response(status, text.encode(), "text/html; charset=utf-8")


Handler = Callable[[Request], Response]


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    role: Role
    handler: Handler


def route(method: str, pattern: str, role: Role, handler: Handler) -> Route:
    """`pattern` is a regular expression over the whole path; named groups become params."""
    return Route(method, re.compile(pattern), role, handler)


def find(routes: Sequence[Route], method: str, path: str) -> tuple[Route, dict[str, str]] | None | str:
    """The route and its params; None when no route has this path; "method" when a route
    has the path but not the method (405)."""
    path_known = False
    for r in routes:
        m = r.pattern.fullmatch(path)
        if m is None:
            continue
        path_known = True
        if r.method == method:
            return r, m.groupdict()
    return "method" if path_known else None
