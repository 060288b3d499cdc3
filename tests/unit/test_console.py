"""The console's routes: the shell at `/` and its files open and free of tokens, the sign-in
that trades a token for a session cookie, only the listed files served, and the live view
shaped from the ring snapshot."""
from __future__ import annotations

import json
import typing
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from dispatcher.admin import routes as rt
from dispatcher.admin.console.live import live_view
from dispatcher.admin.console.routes import console_routes
from dispatcher.admin.server import AdminServer
from dispatcher.auth.identity import Role
from tests.unit.test_admin import RING, get

STATUS = {"node_id": "n1", "heap_size": 7, "in_flight": 3, "owned_slots": [0, 1], "serving": True, "held": False}


@pytest.fixture
def admin():
    server = AdminServer(host="127.0.0.1", port=0, token="s3cret", ring=lambda: RING, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry(),
                         routes=console_routes(lambda: RING, lambda: STATUS))
    server.start()
    yield server
    server.stop()


def test_the_shell_and_its_files_are_open_and_carry_no_data_or_token(admin):
    status, body = get(admin, "/?token=s3cret")
    page = body.decode()
    assert status == 200 and 'data-testid="page-failures"' in page and 'data-testid="signin"' in page
    assert "s3cret" not in page   # the link's token is not written into the page
    assert get(admin, "/console/console.js")[0] == 200 and get(admin, "/console/console.css")[0] == 200
    # Everything with data still needs a caller the endpoint knows.
    for path in ("/api/live", "/ring.html", "/ring", "/metrics", "/api/session", "/no-such-path"):
        assert get(admin, path)[0] == 401, path
    assert get(admin, "/ring.html", token="s3cret")[0] == 200   # the ring page stays


def request(server: AdminServer, method: str, path: str, headers: dict[str, str] | None = None,
            body: bytes | None = None) -> tuple[int, typing.Any, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method=method, data=body,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status, response.headers, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def test_a_browser_trades_its_token_for_a_session_cookie_and_signs_out(admin):
    assert request(admin, "POST", "/api/session")[0] == 401
    assert request(admin, "POST", "/api/session", {"Authorization": "Bearer wrong"})[0] == 401
    assert request(admin, "POST", "/api/session?token=s3cret")[0] == 401   # never from a URL
    status, headers, me = request(admin, "POST", "/api/session", {"Authorization": "Bearer s3cret"})
    assert status == 200 and me == {"name": "admin", "role": "operator"}
    set_cookie = headers["Set-Cookie"]
    name = f"taskring_session_{admin.port}"   # one per port: the nodes of one host keep theirs apart
    assert set_cookie.startswith(name + "=")
    assert {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"} <= {p.strip() for p in set_cookie.split(";")}
    assert "Secure" not in set_cookie   # plain HTTP here; Secure on a TLS endpoint
    cookie = {"Cookie": set_cookie.split(";")[0]}
    assert "s3cret" not in set_cookie
    # The cookie alone is a caller now: reads, and who am I.
    assert request(admin, "GET", "/api/session", cookie)[2] == {"name": "admin", "role": "operator"}
    assert request(admin, "GET", "/api/live", cookie)[0] == 200
    assert get_with(admin, "/ring.html", cookie) == 200
    # Signed out: the cookie is cleared and the session is gone on the node too.
    status, headers, answer = request(admin, "DELETE", "/api/session", cookie)
    assert status == 200 and answer == {"signed_out": True} and "Max-Age=0" in headers["Set-Cookie"]
    assert request(admin, "GET", "/api/live", cookie)[0] == 401
    assert len(admin.sessions) == 0


def get_with(server: AdminServer, path: str, headers: dict[str, str]) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_an_action_on_the_cookie_alone_needs_the_console_header():
    acted: list = []

    def acting(req: rt.Request) -> rt.Response:
        acted.append(req.identity)
        return rt.Response.of_json({})
    act = rt.route("POST", "/api/act", Role.OPERATOR, acting)
    server = AdminServer(host="127.0.0.1", port=0, token="s3cret", ring=lambda: RING, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry(),
                         routes=[*console_routes(lambda: RING, lambda: STATUS), act])
    server.start()
    try:
        _, headers, _ = request(server, "POST", "/api/session", {"Authorization": "Bearer s3cret"})
        cookie = headers["Set-Cookie"].split(";")[0]
        # A cross-site form could send the cookie (were SameSite ignored), never the header.
        status, _, answer = request(server, "POST", "/api/act", {"Cookie": cookie}, b"{}")
        assert status == 403 and "X-Requested-By" in answer["error"] and acted == []
        status, _, _ = request(server, "POST", "/api/act", {"Cookie": cookie, "X-Requested-By": "taskring-console"},
                               b"{}")
        assert status == 200 and [i.name for i in acted] == ["admin"]
        # A script with the token needs no such header: no browser sends a Bearer header by itself.
        assert request(server, "POST", "/api/act", {"Authorization": "Bearer s3cret"}, b"{}")[0] == 200
    finally:
        server.stop()


def test_only_the_listed_files_are_served(admin):
    status, body = get(admin, "/console/console.js", token="s3cret")
    assert status == 200 and b"textContent" in body
    assert get(admin, "/console/console.css", token="s3cret")[0] == 200
    for path in ("/console/index.html", "/console/../routes.py", "/console/live.py", "/console/"):
        assert get(admin, path, token="s3cret")[0] == 404, path


def test_live_counts_queue_depth_per_path_and_pending_per_slot_and_node(admin):
    status, body = get(admin, "/api/live", token="s3cret")
    data = json.loads(body)
    assert status == 200
    assert data["totals"] == {"kafka_lag": 2, "mysql_pending": 5, "queue_depth": 7, "slots": 2, "moving": 1}
    assert data["this_node"]["in_flight"] == 3 and data["this_node"]["heap_size"] == 7
    by_node = {n["node"]: n for n in data["nodes"]}
    assert by_node["n1"]["slots"] == [0, 1] and by_node["n1"]["mysql_pending"] == 5
    assert by_node["n2"]["slots"] == [] and by_node["n2"]["member"] is True
    assert [(s["slot"], s["kafka_lag"], s["mysql_pending"], s["moving"]) for s in data["slots"]] == [
        (0, 2, 5, False), (1, 0, 0, True)]


def test_a_slot_without_an_owner_is_counted_apart():
    slots = typing.cast(list, RING["slots"])
    ring = {**RING, "members": {}, "slots": [{**slots[0], "actual_owner": None}]}
    [line] = live_view(ring, {})["nodes"]
    assert line == {"node": "(unowned)", "member": False, "slots": [0], "kafka_lag": 2, "mysql_pending": 5}
