"""The Go, Java and Node CLIs against a real `taskring node --single` with a tokens file
(docs/security.md): each reads TASKRING_TOKEN (and the TLS files) from its environment, as
the Python commands do.

Given a token for namespace `billing` (submit, read) and one for `payments` only, then, for
each CLI: with the billing token a submit succeeds and its `get` reads the task back; without
a token the submit exits non-zero with UNAUTHENTICATED; with the payments token the submit
and the get exit non-zero with PERMISSION_DENIED naming the namespace, never the secret; and
nothing was written by a refused call. Then the same CLIs over mutual TLS (certs.sh) with the
token.
"""
from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from dispatcher.auth.tokens import new_token
from harness.processes import REPO, NodeProcess
from tests.integration.polyglot import CliResult, Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

NS = "billing"
LANGUAGES = ("go", "java", "node")
SECURITY_ENV = ("TASKRING_TOKEN", "TASKRING_CA_FILE", "TASKRING_CLIENT_CERT_FILE", "TASKRING_CLIENT_KEY_FILE")


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-tokens-build"))


@pytest.fixture
def secrets(tmp_path) -> dict[str, str]:
    made = {name: new_token(name, namespaces, calls, None) for name, namespaces, calls in [
        ("billing-api", [NS], ["submit", "read"]),
        ("payments-api", ["payments"], "*"),
    ]}
    (tmp_path / "tokens.json").write_text(json.dumps({"tokens": [entry for _, entry in made.values()]}))
    return {name: secret for name, (secret, _) in made.items()}


def cli(tools: Tools, language: str) -> Callable[..., list[str]]:
    """The command line of `language`'s CLI in one mode (submit or get) with its flags."""
    def command(mode: str, *flags: str) -> list[str]:
        if language == "go":
            return [str(tools.go_cli), mode, *flags]
        if language == "node":
            return ["node", str(tools.node_cli), mode, *flags]
        return tools.java(mode, *flags)
    return command


def env_with(**security: str) -> dict[str, str]:
    """This process's environment without any TASKRING_TOKEN/TLS setting of its own, plus `security`."""
    env = {k: v for k, v in os.environ.items() if k not in SECURITY_ENV}
    env.update(security)
    return env


def submit_and_get(tools: Tools, language: str, node: NodeProcess, log: Path, env: dict[str, str]) -> str:
    command = cli(tools, language)
    submitted = run_cli(command("submit", "--nodes", node.target, "--namespace", NS, "--type", "ok",
                                "--delay-ms", "3600000"), log, env=env)
    task_id = submitted.line()
    got = run_cli(command("get", "--nodes", node.target, "--task-id", task_id), log, env=env).json()
    assert got["task_id"] == task_id and got["state"] == "queued", (language, got)
    return task_id


def refused(result: CliResult, code: str, message: str, secret: str | None = None) -> None:
    assert result.returncode != 0, result.describe()
    assert re.search(code, result.stderr, re.I) and message in result.stderr, result.describe()
    if secret is not None:
        assert secret not in result.stderr + result.stdout, result.describe()


def test_go_java_node_clis_send_the_token_and_are_refused_without_it(taskring_env, tmp_path, secrets, tools):
    log = taskring_env.logs / "cli.log"
    node = NodeProcess(taskring_env, "tok-1", single=True,
                       TASKRING_TOKENS_FILE=str(tmp_path / "tokens.json")).start()
    try:
        node.wait_ready()
        allowed = env_with(TASKRING_TOKEN=secrets["billing-api"])
        other = env_with(TASKRING_TOKEN=secrets["payments-api"])
        ids = {}
        for language in LANGUAGES:
            command = cli(tools, language)
            ids[language] = submit_and_get(tools, language, node, log, allowed)
            submit = command("submit", "--nodes", node.target, "--namespace", NS, "--type", "ok")
            refused(run_cli(submit, log, env=env_with()), "unauthenticated", "a token is required")
            refused(run_cli(submit, log, env=other), "permission_?denied",
                    "token 'payments-api' may not submit in namespace 'billing'", secrets["payments-api"])
            refused(run_cli(command("get", "--nodes", node.target, "--task-id", ids[language]), log, env=other),
                    "permission_?denied", "may not read in namespace 'billing'", secrets["payments-api"])
        # Only the allowed submits were written.
        rows = taskring_env.sql_all("SELECT task_id, namespace FROM tasks")
        assert sorted(rows) == sorted((task_id, NS) for task_id in ids.values()), rows
    finally:
        node.terminate()


def test_go_java_node_clis_over_mutual_tls_with_a_token(taskring_env, tmp_path, secrets, tools):
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(REPO / "deploy/local/certs.sh"), str(certs)], check=True, capture_output=True)
    admin = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    admin.load_cert_chain(certs / "client.pem", certs / "client.key")
    node = NodeProcess(taskring_env, "tok-tls-1", single=True, admin_ssl_context=admin,
                       TASKRING_TOKENS_FILE=str(tmp_path / "tokens.json"),
                       TASKRING_TLS_CERT_FILE=str(certs / "server.pem"),
                       TASKRING_TLS_KEY_FILE=str(certs / "server.key"),
                       TASKRING_TLS_CLIENT_CA_FILE=str(certs / "ca.pem")).start()
    log = taskring_env.logs / "cli-tls.log"
    try:
        node.wait_ready()
        tls = env_with(TASKRING_TOKEN=secrets["billing-api"], TASKRING_CA_FILE=str(certs / "ca.pem"),
                       TASKRING_CLIENT_CERT_FILE=str(certs / "client.pem"),
                       TASKRING_CLIENT_KEY_FILE=str(certs / "client.key"))
        for language in LANGUAGES:
            submit_and_get(tools, language, node, log, tls)
        # The token alone, in plain text, does not reach a TLS node.
        plain = run_cli(cli(tools, "go")("submit", "--nodes", node.target, "--namespace", NS, "--type", "ok",
                                         "--rpc-timeout", "5s"),
                        log, env=env_with(TASKRING_TOKEN=secrets["billing-api"]))
        assert plain.returncode != 0 and secrets["billing-api"] not in plain.stderr, plain.describe()
        assert len(taskring_env.sql_all("SELECT task_id FROM tasks")) == len(LANGUAGES)
    finally:
        node.terminate()
