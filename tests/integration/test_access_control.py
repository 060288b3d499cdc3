"""Per-namespace tokens on a real `taskring node --single` with a tokens file (docs/security.md).

Given tokens for namespace `billing` (read-write, read-only), one for every namespace and a
viewer of the admin endpoint, then: a call without a token is UNAUTHENTICATED, a token used
outside its namespace or its calls is PERMISSION_DENIED naming them (never echoing the
secret), and nothing is written by a refused call (an empty `tasks` table also means nothing
was produced: the row is written before the produce). Every denial is on /metrics.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

import grpc
import pytest

from dispatcher.auth.tokens import new_token
from harness.processes import REPO, NodeProcess
from taskring import AsyncClient, Client, TaskSpec, TaskState
from taskring.cron import CronRuleSpec
from taskring.errors import PermissionDenied

pytestmark = pytest.mark.integration

ADMIN = "admin-token-of-this-test"


@pytest.fixture
def secrets(tmp_path) -> dict[str, str]:
    made = {name: new_token(name, namespaces, calls, role) for name, namespaces, calls, role in [
        ("billing-rw", ["billing"], ["submit", "cancel", "read"], None),
        ("billing-ro", ["billing"], ["read"], None),
        ("ops", "*", "*", None),
        ("sre-view", [], [], "viewer"),
    ]}
    (tmp_path / "tokens.json").write_text(json.dumps({"tokens": [entry for _, entry in made.values()]}))
    return {name: secret for name, (secret, _) in made.items()}


@pytest.fixture
def node(taskring_env, tmp_path, secrets):
    n = NodeProcess(taskring_env, "acl-1", single=True, admin_token=ADMIN, TASKRING_ADMIN_TOKEN=ADMIN,
                    TASKRING_TOKENS_FILE=str(tmp_path / "tokens.json")).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def clients(node, secrets):
    made = {name: Client(node.target, token=secret, overload_retry_s=0) for name, secret in secrets.items()}
    made["none"] = Client(node.target, overload_retry_s=0)
    yield made
    for c in made.values():
        c.close()


def refused(call, *args, **kwargs) -> PermissionDenied:
    with pytest.raises(PermissionDenied) as info:
        call(*args, **kwargs)
    return info.value


def denials(node: NodeProcess) -> dict[tuple[str, str], float]:
    text = node.get_bytes("/metrics").decode()
    return {(m["reason"], m["call"]): float(m["n"]) for m in re.finditer(
        r'^taskring_auth_denied_total\{call="(?P<call>[^"]+)",reason="(?P<reason>[^"]+)"\} (?P<n>\S+)$', text, re.M)}


def test_without_a_token_every_call_is_unauthenticated_and_nothing_is_written(taskring_env, node, clients):
    none = clients["none"]
    for call, args in [(none.submit, ("billing", "ok")), (none.submit_batch, ([TaskSpec("billing", "ok")],)),
                       (none.get, ("t-1",)), (none.cancel, ("t-1",)), (none.cron.list, ("billing",))]:
        err = refused(call, *args)
        assert err.code == grpc.StatusCode.UNAUTHENTICATED and "a token is required" in err.details, err
    wrong = Client(node.target, token="not-a-token-of-this-node")
    err = refused(wrong.submit, "billing", "ok")
    assert err.code == grpc.StatusCode.UNAUTHENTICATED and "not-a-token" not in err.details
    wrong.close()
    # Bytes that are no request: still UNAUTHENTICATED, not a hint about the request.
    with grpc.insecure_channel(node.target) as channel:
        raw: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/taskring.v1.TaskService/Submit", request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as info:
            raw(b"\xff\xff\xff", timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks") == [(0,)]
    assert taskring_env.sql("SELECT COUNT(*) FROM cron_rules") == [(0,)]
    counted = denials(node)
    assert counted[("no_token", "submit")] == 3 and counted[("unknown_token", "submit")] == 1, counted
    assert counted[("no_token", "read")] == 2 and counted[("no_token", "cancel")] == 1, counted


def test_a_token_outside_its_namespace_is_denied_naming_it_and_nothing_is_written(taskring_env, node, clients,
                                                                                  secrets):
    rw = clients["billing-rw"]
    err = refused(rw.submit, "payments", "ok")
    assert err.code == grpc.StatusCode.PERMISSION_DENIED
    assert err.details == "token 'billing-rw' may not submit in namespace 'payments'"
    # A batch needs every one of its namespaces: the billing task is not written either.
    err = refused(rw.submit_batch, [TaskSpec("billing", "ok", task_id="b-1"), TaskSpec("payments", "ok")])
    assert "namespace 'payments'" in err.details and secrets["billing-rw"] not in err.details
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks") == [(0,)]
    # By id: the stored task's namespace decides, and nothing of the task is answered.
    other = clients["ops"].submit("payments", "ok", {"card": "4111-secret-payload"}, delay=3600)
    for call in (rw.get, rw.cancel):
        err = refused(call, other.task_id)
        assert err.code == grpc.StatusCode.PERMISSION_DENIED and "namespace 'payments'" in err.details
        assert "4111" not in err.details
    assert clients["ops"].get(other.task_id).state == TaskState.QUEUED  # not cancelled
    assert denials(node)[("namespace", "submit")] == 2


def test_a_read_only_token_reads_but_cannot_submit_or_cancel(taskring_env, node, clients):
    ro, rw = clients["billing-ro"], clients["billing-rw"]
    assert refused(ro.submit, "billing", "ok").details == "token 'billing-ro' may not submit"
    assert "may not submit" in refused(ro.submit_batch, [TaskSpec("billing", "ok")]).details
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks") == [(0,)]
    # The calls a token is given work: submit, get, cancel in billing.
    task = rw.submit("billing", "ok", delay=3600)
    assert ro.get(task.task_id).state == TaskState.QUEUED
    assert refused(ro.cancel, task.task_id).details == "token 'billing-ro' may not cancel"
    assert ro.get(task.task_id).state == TaskState.QUEUED
    assert rw.cancel(task.task_id) == TaskState.CANCELLED
    assert rw.get(task.task_id).state == TaskState.CANCELLED
    assert taskring_env.sql("SELECT namespace, status FROM tasks") == [("billing", "cancelled")]
    assert denials(node)[("call", "cancel")] == 1


def test_cron_rules_need_cron_write_and_their_namespace(taskring_env, node, clients):
    rule = CronRuleSpec(namespace="billing", name="nightly", task_type="ok", schedule="0 3 * * *", time_zone="UTC")
    assert refused(clients["billing-rw"].cron.create, rule).details == "token 'billing-rw' may not cron_write"
    assert taskring_env.sql("SELECT COUNT(*) FROM cron_rules") == [(0,)]
    clients["ops"].cron.create(rule)
    ro = clients["billing-ro"]
    assert [r.spec.name for r in ro.cron.list("billing")] == ["nightly"]
    assert ro.cron.get("billing", "nightly").spec.schedule == "0 3 * * *"
    assert "namespace 'payments'" in refused(ro.cron.list, "payments").details
    assert "namespace '*'" in refused(ro.cron.list).details  # every namespace needs a token for "*"
    assert "may not cron_write" in refused(ro.cron.pause, "billing", "nightly").details
    assert not ro.cron.get("billing", "nightly").paused


def test_the_admin_endpoint_takes_the_viewer_token_of_the_file(node, secrets):
    def get(path: str, secret: str | None) -> int:
        request = urllib.request.Request(node.admin + path)
        if secret:
            request.add_header("Authorization", f"Bearer {secret}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
    assert get("/ring", secrets["sre-view"]) == 200
    assert get("/metrics", secrets["sre-view"]) == 200
    assert get("/ring", secrets["billing-rw"]) == 401   # a task API token has no admin role
    assert get("/ring", None) == 401
    assert get("/readyz", None) == 200                  # the probes stay open
    assert get("/ring", ADMIN) == 200                   # TASKRING_ADMIN_TOKEN: operator "admin"



def test_only_an_operator_acts_on_dead_letters(node, secrets):
    def call(method: str, path: str, secret: str | None, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(node.admin + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        if secret:
            request.add_header("Authorization", f"Bearer {secret}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
    # A viewer reads the dead letters and the audit trail, and may not act: 403, nothing done.
    assert call("GET", "/api/dead-letters/groups", secrets["sre-view"])[0] == 200
    assert call("GET", "/api/audit", secrets["sre-view"])[0] == 200
    status, answer = call("POST", "/api/bulk-replays", secrets["sre-view"],
                          {"reason": "x", "filter": {"namespace": "billing"}})
    assert status == 403 and "needs the operator role" in answer["error"], answer
    assert call("POST", "/api/dead-letters/t-1/replay", None, {"reason": "x"})[0] == 401
    # The operator is let through to the action itself, which answers that there is nothing
    # to replay; a refused or empty action leaves no audit record.
    status, answer = call("POST", "/api/bulk-replays", ADMIN, {"reason": "x", "filter": {"namespace": "billing"}})
    assert status == 400 and answer["error"].startswith("filter: matches no dead letter"), answer
    assert call("GET", "/api/audit", secrets["sre-view"])[1]["records"] == []



def test_the_shell_commands_send_the_token_of_their_environment(taskring_env, node, secrets):
    def taskring(*args: str, token: str | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "TASKRING_TOKEN"}
        env.update({"TASKRING_TARGET": node.target, **({"TASKRING_TOKEN": token} if token else {})})
        return subprocess.run([sys.executable, "-m", "taskring_cli.main", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)
    done = taskring("submit", "billing", "ok", "--delay", "3600", token=secrets["billing-rw"])
    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout)["task_id"]
    assert taskring("get", task_id, token=secrets["billing-ro"]).returncode == 0
    refused = taskring("submit", "billing", "ok", token=None)
    assert refused.returncode == 1 and "UNAUTHENTICATED" in refused.stderr
    listed = taskring("cron", "list", "billing", token=secrets["billing-rw"])
    assert listed.returncode == 0 and listed.stdout == "", listed.stderr
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks") == [(1,)]


def test_the_async_client_sends_its_token_too(node, secrets):
    async def run() -> tuple[TaskState, str]:
        async with AsyncClient(node.target, token=secrets["billing-rw"], overload_retry_s=0) as client:
            task = await client.submit("billing", "ok", delay=3600)
            state = (await client.get(task.task_id)).state
            with pytest.raises(PermissionDenied) as info:
                await client.submit("payments", "ok")
            return state, info.value.details
    state, denial = asyncio.run(run())
    assert state == TaskState.QUEUED and denial == "token 'billing-rw' may not submit in namespace 'payments'"


def test_a_changed_tokens_file_takes_effect_without_a_restart(taskring_env, tmp_path, secrets):
    from harness.wait import wait_until
    from taskring.errors import RpcError

    path = tmp_path / "tokens.json"
    n = NodeProcess(taskring_env, "acl-2", single=True, admin_token=secrets["sre-view"],
                    TASKRING_TOKENS_FILE=str(path), TASKRING_TOKENS_RELOAD_MS="200").start()
    try:
        n.wait_ready()

        def lists(secret: str) -> str:
            """"ok", or the status code of the refusal."""
            with Client(n.target, token=secret, overload_retry_s=0) as c:
                try:
                    c.cron.list("billing")
                    return "ok"
                except RpcError as exc:
                    return exc.code.name

        def reloads(result: str) -> float:
            m = re.search(rf'^taskring_tokens_reloads_total\{{result="{result}"\}} (\S+)$',
                          n.get_bytes("/metrics").decode(), re.M)
            return float(m.group(1)) if m else 0.0

        def session_status(cookie: str) -> int:
            request = urllib.request.Request(n.admin + "/api/session", headers={"Cookie": cookie})
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    return response.status
            except urllib.error.HTTPError as exc:
                return exc.code

        assert lists(secrets["billing-ro"]) == "ok"
        signin = urllib.request.Request(n.admin + "/api/session", method="POST",
                                        headers={"Authorization": f"Bearer {secrets['sre-view']}"})
        with urllib.request.urlopen(signin, timeout=5) as response:
            cookie = response.headers["Set-Cookie"].split(";")[0]
        assert session_status(cookie) == 200

        # Rotation: billing-ro revoked, a new token added, the viewer kept.
        entries = json.loads(path.read_text())["tokens"]
        late_secret, late = new_token("late", ["billing"], ["read"])
        path.write_text(json.dumps({"tokens": [e for e in entries if e["name"] != "billing-ro"] + [late]}))
        wait_until(lambda: lists(late_secret) == "ok", 15, "the new token in use")
        assert lists(secrets["billing-ro"]) == "UNAUTHENTICATED"
        assert lists(secrets["billing-rw"]) == "ok"
        assert reloads("loaded") == 1
        assert session_status(cookie) == 401   # the console signs in again after a change

        # A file that does not parse changes nothing, and says so.
        path.write_text('{"tokens": [{"name": "half"}]}')
        wait_until(lambda: reloads("failed") == 1, 15, "the refused read counted")
        assert lists(late_secret) == "ok" and lists(secrets["billing-ro"]) == "UNAUTHENTICATED"
        assert "tokens file changed but cannot be used" in n.log_path.read_text()
    finally:
        n.terminate()
