"""The admin endpoint: token required for the ring and metrics, never for probes."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import cast

import pytest
from prometheus_client import CollectorRegistry, Counter

from dispatcher.admin.ring_page import render_page
from dispatcher.admin.server import AdminServer
from taskring_cli.ring import format_ring

RING = {
    "node": "n1", "zookeeper_session": "connected", "members": {"n1": {}, "n2": {}}, "owned_here": [0],
    "node_status": {}, "generated_at": 0,
    "slots": [
        {"slot": 0, "desired_owner": "n1", "actual_owner": "n1", "epoch": 3, "task_types": ["shop/pay"],
         "kafka_lag": {"normal": 2}, "kafka_lag_total": 2, "mysql_pending": 5},
        {"slot": 1, "desired_owner": "n2", "actual_owner": "n1", "epoch": 1, "task_types": [],
         "kafka_lag": {}, "kafka_lag_total": 0, "mysql_pending": 0},
    ],
}


@pytest.fixture
def admin():
    registry = CollectorRegistry()
    Counter("taskring_test_total", "a counter", registry=registry).inc()
    server = AdminServer(host="127.0.0.1", port=0, token="s3cret", ring=lambda: RING,
                         ready=lambda: (False, "holding: ownership in doubt"), alive=lambda: (True, "serving"),
                         registry=registry)
    server.start()
    yield server
    server.stop()
    server.stop()  # safe twice


def get(server: AdminServer, path: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_ring_and_metrics_require_the_token(admin):
    for path in ("/ring", "/metrics", "/"):
        assert get(admin, path)[0] == 401
        assert get(admin, path, token="wrong")[0] == 401
    status, body = get(admin, "/ring", token="s3cret")
    assert status == 200 and json.loads(body)["slots"][0]["epoch"] == 3
    status, body = get(admin, "/metrics", token="s3cret")
    assert status == 200 and b"taskring_test_total 1.0" in body
    assert get(admin, "/ring?token=s3cret")[0] == 200  # for a browser


def test_probes_answer_without_a_token_and_say_why(admin):
    status, body = get(admin, "/healthz")
    assert status == 200 and json.loads(body)["ok"] is True
    status, body = get(admin, "/readyz")
    assert status == 503 and "holding" in json.loads(body)["reason"]


def test_unknown_path_is_404(admin):
    assert get(admin, "/nope", token="s3cret")[0] == 404


def test_without_a_token_everything_is_open_for_local_use():
    server = AdminServer(host="127.0.0.1", port=0, token=None, ring=lambda: RING, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry())
    server.start()
    try:
        assert get(server, "/ring")[0] == 200
    finally:
        server.stop()


def test_page_and_table_show_owners_and_flag_moving_slots():
    page = render_page(RING)
    assert "<table>" in page and "shop/pay" in page
    assert "2 members; 1\nslots moving" in page
    assert page.count("class=moving") == 1
    table = format_ring(RING)
    lines = table.splitlines()
    assert lines[0].startswith("node n1") and "n1, n2" in lines[0]
    assert lines[3].split()[:4] == ["0", "n1", "n1", "3"]
    assert lines[4].endswith("*")  # desired n2, actual n1: moving
    assert "slots per owner: n1=2" in table
    # n2 owns nothing yet: the balance counts it.
    assert lines[-1] == "balance: 2 members, slots per member max 2 / min 0 (inf), ideal 1.0"


def test_the_busy_only_table_leaves_out_the_quiet_slots_and_says_how_many():
    quiet = {"slot": 2, "desired_owner": "n2", "actual_owner": "n2", "epoch": 1, "task_types": [],
             "kafka_lag": {}, "kafka_lag_total": 0, "mysql_pending": 0}
    ring = {**RING, "slots": [*cast(list, RING["slots"]), quiet]}
    table = format_ring(ring, busy_only=True).splitlines()
    # slot 0 has a task type, slot 1 is moving: both stay; slot 2 goes, and is counted
    assert [line.split()[0] for line in table[3:5]] == ["0", "1"]
    assert table[5].startswith("(1 more slots, each idle and owned by its desired owner")
    assert table[-2:] == ["slots per owner: n1=2, n2=1",
                          "balance: 2 members, slots per member max 2 / min 1 (2.00x), ideal 1.5"]
    assert len(format_ring(ring).splitlines()) == len(table)  # the full table: slot 2's row, no note


def test_the_balance_line_counts_every_member_and_the_unowned_slots():
    from taskring_cli.ring import balance_line
    slots = [{"actual_owner": owner} for owner in ["a"] * 3 + ["b"] * 7 + ["c"] * 6 + [None]]
    assert balance_line({"members": {"a": {}, "b": {}, "c": {}}, "slots": slots}) == (
        "balance: 3 members, slots per member max 7 / min 3 (2.33x), ideal 5.7; 1 unowned")


def test_routes_name_their_role_and_errors_map_to_http_statuses():
    from dispatcher.admin import routes as rt
    from dispatcher.auth.identity import Identity, Role
    from dispatcher.base.errors import InvalidArgument, TaskNotFound

    def fail(req: rt.Request) -> rt.Response:
        raise TaskNotFound(req.params["task_id"])

    def act(req: rt.Request) -> rt.Response:
        if "bad" in req.json():
            raise InvalidArgument("body.bad", "is bad")
        return rt.Response.of_json({"by": req.identity.name, "from": req.address})

    tokens = {"v": Identity("vera", Role.VIEWER), "o": Identity("otto", Role.OPERATOR)}
    server = AdminServer(host="127.0.0.1", port=0, ring=lambda: RING, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry(),
                         routes=[rt.route("GET", r"/api/tasks/(?P<task_id>[^/]+)", Role.VIEWER, fail),
                                 rt.route("POST", "/api/act", Role.OPERATOR, act)],
                         authenticate=lambda headers, query: tokens.get((headers.get("Authorization") or "")[7:]))
    server.start()
    try:
        def post(token: str, body: bytes) -> tuple[int, dict]:
            request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/act", data=body, method="POST")
            request.add_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        status, body = get(server, "/api/tasks/t-1", token="v")
        assert status == 404 and "t-1" in json.loads(body)["error"]
        status, answer = post("v", b"{}")
        assert status == 403 and "operator" in answer["error"]   # a viewer may not act
        assert post("o", b"{}") == (200, {"by": "otto", "from": "127.0.0.1"})
        status, answer = post("o", b'{"bad": 1}')
        assert status == 400 and answer["error"].startswith("body.bad")
        assert post("o", b"[1]")[0] == 400
        assert get(server, "/api/act", token="o")[0] == 405
        assert get(server, "/healthz")[0] == 200   # the probes stay open
    finally:
        server.stop()
