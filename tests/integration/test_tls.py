"""TLS and mutual TLS on a real `taskring node --single`, with certificates made by
deploy/local/certs.sh (a CA, the node's certificate for 127.0.0.1, a client certificate,
and an unrelated CA with a client certificate of its own).

Given mutual TLS, then a client that verifies the node against the CA and shows the CA's
client certificate works; one without a certificate, with a certificate of another CA, or
trusting another CA is refused, as is a plain-text client. The admin endpoint is HTTPS: its
probes answer without a client certificate (Kubernetes shows none), its other routes do not.
"""
from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.processes import REPO, NodeProcess
from taskring import Client, TaskState, tls_credentials
from taskring.errors import RpcError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(where)], check=True, capture_output=True)
    return where


def https(certs: Path, ca: str = "ca", client: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs / f"{ca}.pem"))
    if client is not None:
        context.load_cert_chain(certs / f"{client}.pem", certs / f"{client}.key")
    return context


def start(world, certs: Path, node_id: str, mutual: bool) -> NodeProcess:
    return NodeProcess(world, node_id, single=True, admin_ssl_context=https(certs, client="client"),
                       TASKRING_TLS_CERT_FILE=str(certs / "server.pem"),
                       TASKRING_TLS_KEY_FILE=str(certs / "server.key"),
                       TASKRING_TLS_CLIENT_CA_FILE=str(certs / "ca.pem") if mutual else "").start().wait_ready()


def works(node: NodeProcess, **client) -> bool:
    with Client(node.target, rpc_timeout_s=5, overload_retry_s=0, **client) as c:
        try:
            task = c.submit("tests", "ok", delay=3600)
        except RpcError:
            return False
        assert c.get(task.task_id).state == TaskState.QUEUED
        return True


def admin_status(node: NodeProcess, path: str, context: ssl.SSLContext) -> int | str:
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{node.admin_port}{path}", timeout=5,
                                    context=context) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ssl.SSLError, ConnectionError) as exc:
        return f"refused: {exc}"


@pytest.fixture
def mtls_node(taskring_env, certs):
    node = start(taskring_env, certs, "mtls-1", mutual=True)
    try:
        yield node
    finally:
        node.terminate()


def test_mutual_tls_lets_in_only_clients_with_a_certificate_of_the_ca(taskring_env, mtls_node, certs):
    ca, other = str(certs / "ca.pem"), str(certs / "other-ca.pem")
    assert works(mtls_node, credentials=tls_credentials(ca, certs / "client.pem", certs / "client.key"))
    assert not works(mtls_node, credentials=tls_credentials(ca))                        # no client certificate
    assert not works(mtls_node, credentials=tls_credentials(ca, certs / "other-client.pem",
                                                            certs / "other-client.key"))  # another CA's
    assert not works(mtls_node, credentials=tls_credentials(other, certs / "client.pem",
                                                            certs / "client.key"))      # trusts another CA
    assert not works(mtls_node)                                                         # plain text
    assert taskring_env.sql("SELECT COUNT(*) FROM tasks") == [(1,)]


def test_the_admin_endpoint_is_https_with_open_probes_under_mutual_tls(mtls_node, certs):
    assert admin_status(mtls_node, "/ring", https(certs, client="client")) == 200
    assert admin_status(mtls_node, "/readyz", https(certs)) == 200       # a probe shows no certificate
    assert admin_status(mtls_node, "/ring", https(certs)) == 401
    assert str(admin_status(mtls_node, "/readyz", https(certs, ca="other-ca"))).startswith("refused")
    assert str(admin_status(mtls_node, "/ring", https(certs, client="other-client"))).startswith("refused")
    plain = f"http://127.0.0.1:{mtls_node.admin_port}/readyz"
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(plain, timeout=5)


def test_tls_without_client_certificates(taskring_env, certs):
    node = start(taskring_env, certs, "tls-1", mutual=False)
    try:
        assert works(node, credentials=tls_credentials(certs / "ca.pem"))
        assert not works(node, credentials=tls_credentials(certs / "other-ca.pem"))
        assert not works(node)
        assert admin_status(node, "/ring", https(certs)) == 200
        assert str(admin_status(node, "/ring", https(certs, ca="other-ca"))).startswith("refused")
    finally:
        node.terminate()


def test_the_shell_commands_take_tls_files_from_the_environment(mtls_node, certs):
    def submit(**tls: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKRING_CA", "TASKRING_CLIENT"))}
        env.update(TASKRING_TARGET=mtls_node.target, **tls)
        return subprocess.run([sys.executable, "-m", "taskring_cli.main", "submit", "tests", "ok", "--delay", "3600"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    done = submit(TASKRING_CA_FILE=str(certs / "ca.pem"), TASKRING_CLIENT_CERT_FILE=str(certs / "client.pem"),
                  TASKRING_CLIENT_KEY_FILE=str(certs / "client.key"))
    assert done.returncode == 0, done.stderr
    assert submit(TASKRING_CA_FILE=str(certs / "ca.pem")).returncode == 1   # no client certificate


def test_the_admin_commands_show_a_client_certificate_under_mutual_tls(mtls_node, certs):
    admin = f"https://127.0.0.1:{mtls_node.admin_port}"

    def taskring(*args: str, **env: str) -> subprocess.CompletedProcess:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TASKRING_ADMIN")}
        return subprocess.run([sys.executable, "-m", "taskring_cli.main", *args], cwd=REPO, env={**clean, **env},
                              capture_output=True, text=True, timeout=60)
    ca, cert, key = str(certs / "ca.pem"), str(certs / "client.pem"), str(certs / "client.key")
    ring = taskring("ring", "--admin", admin, "--ca-file", ca, "--cert-file", cert, "--key-file", key)
    assert ring.returncode == 0 and "slots per owner: mtls-1=16" in ring.stdout, ring.stderr
    listed = taskring("dlq", "list", "--json", TASKRING_ADMIN_URL=admin, TASKRING_ADMIN_CA_FILE=ca,
                      TASKRING_ADMIN_CERT_FILE=cert, TASKRING_ADMIN_KEY_FILE=key)
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), dict | list)
    # Without the certificate the endpoint answers 401; half of one is refused before any call
    refused = taskring("ring", "--admin", admin, "--ca-file", ca)
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr and "client certificate" in refused.stderr, \
        refused.stderr
    half = taskring("dlq", "list", "--admin", admin, "--ca-file", ca, "--cert-file", cert)
    assert half.returncode != 0 and "--key-file (TASKRING_ADMIN_KEY_FILE)" in half.stderr, half.stderr
