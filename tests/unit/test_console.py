"""The console's routes: the shell at `/` passing the browser's token on to its files, only
the listed files served, and the live view shaped from the ring snapshot."""
from __future__ import annotations

import json
import typing

import pytest
from prometheus_client import CollectorRegistry

from dispatcher.admin.console.live import live_view
from dispatcher.admin.console.routes import console_routes
from dispatcher.admin.server import AdminServer
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


def test_the_shell_is_at_the_root_and_hands_the_token_to_its_files(admin):
    assert get(admin, "/")[0] == 401
    status, body = get(admin, "/?token=s3cret")
    page = body.decode()
    assert status == 200 and 'data-testid="page-failures"' in page
    assert '/console/console.js?token=s3cret"' in page and '/console/console.css?token=s3cret"' in page
    status, body = get(admin, "/", token="s3cret")   # by header: nothing to pass on
    assert status == 200 and '/console/console.js"' in body.decode()
    assert get(admin, "/ring.html", token="s3cret")[0] == 200   # the ring page stays


def test_a_token_in_the_shell_is_escaped(admin):
    server = AdminServer(host="127.0.0.1", port=0, token='a"<b>', ring=lambda: RING, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry(),
                         routes=console_routes(lambda: RING, lambda: STATUS))
    server.start()
    try:
        status, body = get(server, "/?token=a%22%3Cb%3E")
        assert status == 200 and "<b>" not in body.decode() and '"<' not in body.decode()
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
