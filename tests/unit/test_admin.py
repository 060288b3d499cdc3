"""The admin endpoint: token required for the ring and metrics, never for probes."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from dispatcher.admin.ring_cli import format_ring
from dispatcher.admin.server import AdminServer, render_page

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
