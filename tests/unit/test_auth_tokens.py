"""The tokens file: parsed with every problem named by its field; secrets found by digest;
`python -m dispatcher.auth.tokens new` makes an entry the file takes; the admin endpoint's
roles come from the same file."""
from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from dispatcher.admin import routes as rt
from dispatcher.admin.auth import admin_authenticator
from dispatcher.admin.server import AdminServer
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.auth.identity import Identity, Role
from dispatcher.auth.tokens import (
    CALLS,
    TokensFileError,
    load_tokens,
    main,
    new_token,
    parse_tokens,
)
from dispatcher.base.errors import PermissionDenied, Unauthenticated
from dispatcher.base.metrics import NodeMetrics

SHA = hashlib.sha256(b"s3cret").hexdigest()


def entry(**fields: Any) -> dict:
    return {"name": "billing", "sha256": SHA, "namespaces": ["billing"], "calls": ["submit"], **fields}


def refused(data: object) -> TokensFileError:
    with pytest.raises(TokensFileError) as info:
        parse_tokens(data, "tokens.json")
    return info.value


def test_a_good_file_gives_tokens_found_by_their_secret():
    tokens = parse_tokens({"tokens": [entry(), entry(name="sre", sha256=hashlib.sha256(b"x").hexdigest(),
                                                     namespaces="*", calls="*", admin_role="viewer")]})
    billing = tokens.find("s3cret")
    assert billing is not None and billing.name == "billing" and billing.may_use("billing")
    assert not billing.may_use("payments") and billing.may_call("submit") and not billing.may_call("cancel")
    sre = tokens.find("x")
    assert sre is not None and sre.namespaces is None and sre.calls == frozenset(CALLS)
    assert sre.admin_role is Role.VIEWER and sre.may_use("anything")
    assert tokens.find("S3cret") is None and tokens.find("") is None
    assert "s3cret" not in repr(billing) and SHA not in repr(billing)


@pytest.mark.parametrize("data, field, words", [
    ([], "tokens", "one key"),
    ({"tokens": {}}, "tokens", "must be a list"),
    ({"tokens": ["x"]}, "tokens[0]", "must be an object"),
    ({"tokens": [{"sha256": SHA, "calls": ["read"], "namespaces": "*"}]}, "tokens[0].name", "is required"),
    ({"tokens": [entry(name="a b")]}, "tokens[0].name", "letters"),
    ({"tokens": [entry(sha256="s3cret")]}, "tokens[0].sha256", "64 lowercase hex"),
    ({"tokens": [entry(sha256=SHA.upper())]}, "tokens[0].sha256", "64 lowercase hex"),
    ({"tokens": [entry(calls=["submit", "delete"])]}, "tokens[0].calls[1]", "'delete' is not a call"),
    ({"tokens": [entry(calls="submit")]}, "tokens[0].calls", 'must be a list or "*"'),
    ({"tokens": [entry(namespaces=["billing", "*"])]}, "tokens[0].namespaces[1]", "stands alone"),
    ({"tokens": [entry(namespaces=[""])]}, "tokens[0].namespaces[0]", "non-empty"),
    ({"tokens": [entry(namespaces=[])]}, "tokens[0].namespaces", "is required with calls"),
    ({"tokens": [entry(calls=[])]}, "tokens[0].calls", "grants nothing"),
    ({"tokens": [entry(admin_role="root")]}, "tokens[0].admin_role", "viewer, operator"),
    ({"tokens": [entry(secret="s3cret")]}, "tokens[0].secret", "is not a field"),
    ({"tokens": [entry(), entry()]}, "tokens[1].name", "used twice"),
    ({"tokens": [entry(), entry(name="other")]}, "tokens[1].sha256", "another token's secret"),
])
def test_every_problem_names_its_field(data, field, words):
    err = refused(data)
    assert err.field == field and words in err.problem, str(err)
    assert str(err).startswith(f"tokens.json: {field}: ")


def test_an_admin_only_token_needs_no_calls():
    tokens = parse_tokens({"tokens": [{"name": "sre", "sha256": SHA, "admin_role": "operator"}]})
    token = tokens.find("s3cret")
    assert token is not None and token.calls == frozenset() and token.admin_role is Role.OPERATOR


def test_files_json_and_yaml(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps({"tokens": [entry()]}))
    assert len(load_tokens(tmp_path / "t.json")) == 1
    (tmp_path / "t.yaml").write_text(f"tokens:\n  - name: billing\n    sha256: {SHA}\n    namespaces: '*'\n"
                                     "    calls: [read]\n")
    yaml_token = load_tokens(tmp_path / "t.yaml").find("s3cret")
    assert yaml_token is not None and yaml_token.namespaces is None
    (tmp_path / "bad.json").write_text("{tokens: 1")
    with pytest.raises(TokensFileError, match=r"bad.json: file: is not JSON"):
        load_tokens(tmp_path / "bad.json")
    with pytest.raises(TokensFileError, match=r"missing.json: file: cannot be read"):
        load_tokens(tmp_path / "missing.json")


def test_new_prints_the_secret_once_and_an_entry_the_file_takes(capsys):
    secret, made = new_token("ci", ["a", "b"], ["submit", "read"])
    assert made["sha256"] == hashlib.sha256(secret.encode()).hexdigest() and secret not in json.dumps(made)
    assert main(["new", "--name", "billing-api", "--namespaces", "billing,shop", "--calls", "submit,cancel,read",
                 "--admin-role", "viewer"]) == 0
    out = capsys.readouterr().out.splitlines()
    secret = out[1].strip()
    file_entry = json.loads(out[3])
    token = parse_tokens({"tokens": [file_entry]}).find(secret)
    assert token is not None and token.namespaces == {"billing", "shop"} and token.admin_role is Role.VIEWER
    assert main(["new", "--name", "x", "--namespaces", "a", "--calls", "submit,delete"]) == 2
    assert "calls[1]: 'delete' is not a call" in capsys.readouterr().err


# ---------------------------------------------------------------- the check of the task API

class Context:
    def __init__(self, *metadata: tuple[str, str]):
        self._metadata = metadata

    def invocation_metadata(self):
        return self._metadata


def denied(metrics: NodeMetrics, reason: str, call: str) -> float:
    return metrics.registry.get_sample_value("taskring_auth_denied_total", {"reason": reason, "call": call}) or 0


def test_the_check_counts_and_names_every_denial():
    metrics = NodeMetrics()
    auth = Authorizer(parse_tokens({"tokens": [entry(calls=["submit", "read"])]}), metrics)
    with pytest.raises(Unauthenticated, match="a token is required"):
        auth.token(Context(), "submit")
    with pytest.raises(Unauthenticated, match="not known") as info:
        auth.token(Context(("authorization", "Bearer wrong-secret")), "submit")
    assert "wrong-secret" not in str(info.value)
    good = Context(("user-agent", "x"), ("authorization", "Bearer s3cret"))
    with pytest.raises(PermissionDenied, match="token 'billing' may not cancel$"):
        auth.token(good, "cancel")
    token = auth.token(good, "submit")
    auth.check_namespaces(token, "submit", ["billing", "billing"])
    with pytest.raises(PermissionDenied, match="token 'billing' may not submit in namespace 'payments'"):
        auth.check_namespaces(token, "submit", ["billing", "payments"])
    assert [denied(metrics, r, c) for r, c in [("no_token", "submit"), ("unknown_token", "submit"),
                                               ("call", "cancel"), ("namespace", "submit")]] == [1, 1, 1, 1]


def test_an_open_api_checks_nothing():
    auth = Authorizer(None)
    assert auth.open and auth.token(Context(), "submit") is None
    auth.check_namespaces(None, "submit", ["anything"])


def test_denials_are_logged_at_most_once_a_second_per_reason(caplog):
    now = [0.0]
    auth = Authorizer(parse_tokens({"tokens": [entry()]}), monotonic=lambda: now[0])
    for _ in range(5):
        with pytest.raises(Unauthenticated):
            auth.token(Context(), "submit")
    with pytest.raises(Unauthenticated):
        auth.token(Context(("authorization", "Bearer nope")), "submit")
    now[0] = 1.5
    with pytest.raises(Unauthenticated):
        auth.token(Context(), "submit")
    lines = [r.getMessage() for r in caplog.records if r.name == "dispatcher.auth.grpc_auth"]
    assert len(lines) == 3, lines
    assert "no_token" in lines[0] and "unknown_token" in lines[1] and "and 4 more" in lines[2]


# ---------------------------------------------------------------- the admin endpoint's roles

def admin_server(authenticate) -> AdminServer:
    from prometheus_client import CollectorRegistry

    def act(req: rt.Request) -> rt.Response:
        return rt.Response.of_json({"by": req.identity.name})
    return AdminServer(host="127.0.0.1", port=0, ring=lambda: {"slots": []}, ready=lambda: (True, "ready"),
                       alive=lambda: (True, "serving"), registry=CollectorRegistry(), authenticate=authenticate,
                       routes=[rt.route("POST", "/act", Role.OPERATOR, act)])


class Headers(dict):
    def get(self, name, failobj=None, /):
        return super().get(name, failobj)


def call(server: AdminServer, method: str, path: str, secret: str | None = None, client_cert: bool = False):
    headers = Headers({"Authorization": f"Bearer {secret}"} if secret else {})
    response = server.handle(method, path, headers, b"", "127.0.0.1", client_cert)
    return response.status, json.loads(response.body)


def test_admin_roles_come_from_the_tokens_file_and_the_admin_token():
    viewer, operator, api_only = (hashlib.sha256(s).hexdigest() for s in (b"v", b"o", b"a"))
    tokens = parse_tokens({"tokens": [
        {"name": "sre-view", "sha256": viewer, "admin_role": "viewer"},
        {"name": "sre-op", "sha256": operator, "admin_role": "operator"},
        {"name": "billing", "sha256": api_only, "namespaces": "*", "calls": ["read"]}]})
    server = admin_server(admin_authenticator(tokens, "legacy"))
    assert call(server, "GET", "/ring", "v")[0] == 200
    status, body = call(server, "POST", "/act", "v")
    assert status == 403 and body["error"] == "sre-view is a viewer; POST /act needs the operator role"
    assert call(server, "POST", "/act", "o") == (200, {"by": "sre-op"})
    assert call(server, "POST", "/act", "legacy") == (200, {"by": "admin"})
    assert call(server, "GET", "/ring", "a")[0] == 401   # a task API token without an admin role
    assert call(server, "GET", "/ring")[0] == 401
    assert call(server, "GET", "/healthz")[0] == 200      # probes stay open


def test_without_any_token_the_admin_endpoint_stays_open_as_before():
    authenticate = admin_authenticator(None, None)
    assert authenticate(Headers(), {}) == Identity("anonymous", Role.OPERATOR)
    assert admin_authenticator(None, "t")(Headers({"Authorization": "Bearer t"}), {}) == Identity("admin",
                                                                                                Role.OPERATOR)


def test_under_mutual_tls_every_route_but_the_probes_wants_a_client_certificate():
    server = AdminServer(host="127.0.0.1", port=0, ring=lambda: {}, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=NodeMetrics().registry,
                         authenticate=admin_authenticator(None, None), require_client_cert=True)
    assert call(server, "GET", "/readyz")[0] == 200
    status, body = call(server, "GET", "/ring")
    assert status == 401 and "client certificate" in body["error"]
    assert call(server, "GET", "/ring", client_cert=True)[0] == 200
