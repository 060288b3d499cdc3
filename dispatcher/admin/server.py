"""The admin endpoint of a node, for SREs, for the console and for Kubernetes probes.

    GET /healthz   200 while the process serves and none of its         open
                   background loops has died (liveness)
    GET /readyz    200 while alive, holding store leases on its slots   open
                   and not holding back on ownership in doubt
    GET /ring      JSON: members, every slot's desired and actual       viewer
                   owner, epoch, task types, Kafka lag, MySQL pending
    GET /ring.html the same, as a page a person can read                viewer
    GET /metrics   Prometheus text format                               viewer
    ... and the routes given in (dispatcher/admin/routes.py): the operations API and
    the console, each naming the role it needs.

    POST /api/session    sign a browser in: the Bearer token for a session     any token
                         cookie (dispatcher/admin/sessions.py)
    GET /api/session     who the caller is (name, role)                         viewer
    DELETE /api/session  sign out                                               open

Everything but the probes and the console's shell requires a caller the `authenticate`
callable knows (`Authorization: Bearer <token>`, `?token=` for a script's one link, or the
console's session cookie); only operators act. A stdlib threading server keeps it independent of the node's event
loop, so a busy loop never makes the probes time out. The node decides what alive
and ready mean (dispatcher/node.py); this module only serves the answers.
"""
from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from dispatcher.admin import routes as rt
from dispatcher.admin import sessions as ss
from dispatcher.admin.ring_page import render_page
from dispatcher.api.service import status_code
from dispatcher.auth.identity import ANONYMOUS, LOCAL_OPERATOR, Identity, Role
from dispatcher.base.errors import TaskringError, bounded

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body taken (an edited payload is at most the submit limit)."""



class Headers(Protocol):
    """A request's headers, looked up case-insensitively (http.server's are)."""

    def get(self, name: str, failobj: None = None, /) -> str | None: ...


Authenticate = Callable[[Headers, dict[str, list[str]]], Identity | None]


def token_authenticator(token: str | None) -> Authenticate:
    """The single admin token: its holder is an operator named `admin`; no token at all
    leaves the endpoint open to a local operator (local use only)."""
    def authenticate(headers: Headers, query: dict[str, list[str]]) -> Identity | None:
        if token is None:
            return LOCAL_OPERATOR
        given = bearer_token(headers, query)
        if given is not None and hmac.compare_digest(given.encode(), token.encode()):
            return Identity("admin", Role.OPERATOR)
        return None
    return authenticate


def bearer_token(headers: Headers, query: dict[str, list[str]]) -> str | None:
    auth = headers.get("Authorization") or ""
    if auth.startswith("Bearer "):
        return auth[len("Bearer "):]
    if "token" in query:
        return query["token"][-1]
    return None


class AdminServer:
    def __init__(self, *, host: str, port: int, token: str | None = None, ring: Callable[[], dict],
                 ready: Callable[[], tuple[bool, str]], alive: Callable[[], tuple[bool, str]],
                 registry: CollectorRegistry, routes: Sequence[rt.Route] = (),
                 authenticate: Authenticate | None = None, ssl_context: ssl.SSLContext | None = None,
                 require_client_cert: bool = False, sessions: ss.Sessions | None = None, node_id: str = ""):
        """require_client_cert (mutual TLS): every route but the probes wants a client
        certificate that `ssl_context` verified; the probes stay open to a caller without
        one (a Kubernetes HTTPS probe shows none)."""
        self._host, self._port = host, port
        self._node_id = node_id   # said by the probes: a caller can tell this node from another on the port
        self.sessions = sessions or ss.Sessions()
        self._cookie: str | None = None   # named after the bound port (start)
        self._ring, self._ready, self._alive, self._registry = ring, ready, alive, registry
        self._authenticate = authenticate or token_authenticator(token)
        self._ssl_context = ssl_context
        self._require_client_cert = require_client_cert
        self._routes: list[rt.Route] = [
            rt.route("GET", "/ring", Role.VIEWER, lambda req: rt.Response.of_json(self._ring())),
            rt.route("GET", "/ring.html", Role.VIEWER, lambda req: rt.Response.of_html(render_page(self._ring()))),
            rt.route("GET", "/metrics", Role.VIEWER,
                     lambda req: rt.Response(200, generate_latest(self._registry), CONTENT_TYPE_LATEST)),
            *routes,
        ]
        if not any(r.pattern.fullmatch("/") for r in self._routes):
            self._routes.append(rt.route("GET", "/", Role.VIEWER, self._routes[1].handler))
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def start(self) -> None:
        if self._server is not None:
            return
        self._server = ThreadingHTTPServer((self._host, self._port), self._handler_class())
        self._server.daemon_threads = True
        if self._ssl_context is not None:
            # The handshake runs in the request's thread (Handler.handle), not in accept():
            # a client that connects and stalls must not hold up the probes.
            self._server.socket = self._ssl_context.wrap_socket(self._server.socket, server_side=True,
                                                                do_handshake_on_connect=False)
        self.port = self._server.server_address[1]
        self._cookie = ss.cookie_name(self.port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="admin-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def handle(self, method: str, raw_path: str, headers: Headers, body: bytes,
               address: str, client_cert: bool = False) -> rt.Response:
        """One request, start to end: probes, authentication, the route's role, the handler."""
        url = urllib.parse.urlparse(raw_path)
        query = urllib.parse.parse_qs(url.query)
        if url.path in ("/healthz", "/readyz") and method == "GET":
            ok, why = (self._alive if url.path == "/healthz" else self._ready)()
            return rt.Response.of_json({"ok": ok, "reason": why, "node": self._node_id}, 200 if ok else 503)
        if self._require_client_cert and not client_cert:
            return rt.Response.of_json({"error": "a client certificate is required (mutual TLS)"}, 401)
        if url.path == "/api/session":
            return self._session(method, headers, query)
        found = rt.find(self._routes, method, url.path)
        if found is None or isinstance(found, str):
            # Said only to a known caller: paths are not a map for strangers.
            if self._identify(method, headers, query)[0] is None:
                return _unauthenticated()
            if found is None:
                return rt.Response.of_json({"error": f"no such path {url.path}"}, 404)
            return rt.Response.of_json({"error": f"{method} is not allowed on {url.path}"}, 405)
        route, params = found
        identity: Identity | None = ANONYMOUS
        if route.role is not Role.PUBLIC:
            identity, refusal = self._identify(method, headers, query)
            if refusal is not None:
                return refusal
        if identity is None:
            return _unauthenticated()
        if not identity.may(route.role):
            return rt.Response.of_json(
                {"error": f"{identity.name} is a {identity.role.name.lower()}; {method} {url.path} needs the"
                          f" {route.role.name.lower()} role"}, 403)
        request = rt.Request(method=method, path=url.path, query=query, body=body, identity=identity,
                             address=address, params=params)
        try:
            return route.handler(request)
        except TaskringError as exc:
            code = status_code(exc)
            return rt.Response.of_json({"error": bounded(str(exc)), "code": code.name},
                                       rt.HTTP_STATUS_OF_CODE.get(code, 500))
        except Exception as exc:  # the admin view must not take the node down
            log.exception("admin %s %s failed", method, url.path)
            return rt.Response.of_json({"error": bounded(f"{type(exc).__name__}: {exc}")}, 500)

    # ---- who calls: a Bearer token, or the console's session cookie ----

    def _identify(self, method: str, headers: Headers,
                  query: dict[str, list[str]]) -> tuple[Identity | None, rt.Response | None]:
        """(identity, None), (None, None) for a stranger, or (None, a refusal)."""
        if bearer_token(headers, query) is None and self._cookie is not None:
            session_id = ss.session_id_from(headers.get("Cookie"), self._cookie)
            if session_id is not None:
                identity = self.sessions.find(session_id)
                if identity is not None:
                    if method != "GET" and not headers.get(ss.CSRF_HEADER):
                        return None, rt.Response.of_json(
                            {"error": f"a {method} by the console's session needs the {ss.CSRF_HEADER} header"}, 403)
                    return identity, None
        # An expired session is no session: the caller is whoever the endpoint takes them for.
        return self._authenticate(headers, query), None

    def _session(self, method: str, headers: Headers, query: dict[str, list[str]]) -> rt.Response:
        secure = self._ssl_context is not None
        assert self._cookie is not None  # started
        if method == "POST":
            # Only a token signs in (a session does not beget sessions), and only by header:
            # a sign-in link is exactly the token-in-a-URL this exists to end.
            given = headers.get("Authorization") or ""
            identity = self._authenticate(headers, {}) if given.startswith("Bearer ") else None
            if identity is None:
                return _unauthenticated()
            cookie = ss.set_cookie(self._cookie, self.sessions.create(identity), max_age_s=self.sessions.ttl_s,
                                   secure=secure)
            return dataclasses.replace(_whoami(identity), headers=(("Set-Cookie", cookie),))
        if method == "DELETE":
            session_id = ss.session_id_from(headers.get("Cookie"), self._cookie)
            ended = session_id is not None and self.sessions.end(session_id)
            return rt.Response(200, json.dumps({"signed_out": ended}).encode(), "application/json",
                               (("Set-Cookie", ss.clear_cookie(self._cookie, secure=secure)),))
        if method == "GET":
            identity, refusal = self._identify(method, headers, query)
            if refusal is not None:
                return refusal
            return _whoami(identity) if identity is not None else _unauthenticated()
        return rt.Response.of_json({"error": f"{method} is not allowed on /api/session"}, 405)

    def _handler_class(self):
        admin = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30  # a stalled client (or TLS handshake) gives its thread back

            def log_message(self, *args):  # quiet: probes hit this every few seconds
                pass

            def handle(self) -> None:
                if isinstance(self.connection, ssl.SSLSocket):
                    try:
                        self.connection.do_handshake()
                    except (ssl.SSLError, OSError) as exc:
                        # No certificate this CA signed, a client trusting another CA, plain
                        # HTTP on the TLS port: refused, at debug level (scanners do this).
                        log.debug("admin TLS handshake from %s failed: %s", self.client_address[0], exc)
                        return
                super().handle()

            def _client_cert(self) -> bool:
                return isinstance(self.connection, ssl.SSLSocket) and bool(self.connection.getpeercert())

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    response = rt.Response.of_json({"error": f"body: more than {MAX_BODY_BYTES} bytes"}, 413)
                else:
                    body = self.rfile.read(length) if length else b""
                    response = admin.handle(method, self.path, self.headers, body, self.client_address[0],
                                            self._client_cert())
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(response.body)))
                self.send_header("Cache-Control", "no-store")
                for name, value in response.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(response.body)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_DELETE(self):
                self._serve("DELETE")

        return Handler


def _unauthenticated() -> rt.Response:
    return rt.Response.of_json({"error": "a token is required (Authorization: Bearer <token>)"}, 401)


def _whoami(identity: Identity) -> rt.Response:
    return rt.Response.of_json({"name": identity.name, "role": identity.role.name.lower()})
