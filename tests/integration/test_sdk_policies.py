"""The Go, Java and Node SDKs' policies clients, through their CLIs, against a real
`taskring node --single`: a task type's entry put, read, listed, refused, changed on a stale
revision (refused), and deleted, as the Python client does (tests/integration/test_policy_api.py),
so a service in any of the four languages can own its limits in code.

Each CLI has the same `policies` command (see each SDK's README):

    <cli> policies put --nodes HOST:PORT --namespace NS --type T --policy JSON --reason R [--if-revision N]
    <cli> policies get --nodes HOST:PORT --namespace NS --type T
    <cli> policies delete --nodes HOST:PORT --namespace NS --type T --reason R [--if-revision N]
    <cli> policies list --nodes HOST:PORT [--namespace NS]

printing one JSON object per entry and line with the keys of KEYS; a refusal exits non-zero with
the server's status and message (which names the field) on stderr.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pytest

from harness.processes import NodeProcess
from tests.integration.polyglot import CliResult, Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

LANGUAGES = ("go", "java", "node")
KEYS = {"namespace", "task_type", "policy", "source", "revision", "updated_by", "updated_at", "file_policy"}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-policies-build"))


@pytest.fixture
def node(taskring_env, tmp_path):
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({f"{lang}-shop/export": {"retry_cap": 2} for lang in LANGUAGES}))
    n = NodeProcess(taskring_env, "policies-sdk-1", single=True, TASKRING_RETRY_POLICIES=str(policies)).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


def policies_cli(tools: Tools, language: str, node: NodeProcess, log) -> Callable[..., CliResult]:
    def run(action: str, *flags: str) -> CliResult:
        return run_cli(tools.cli(language, "policies", action, "--nodes", node.target, *flags), log)
    return run


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_entry_is_put_read_listed_refused_and_deleted(taskring_env, node, tools, language):
    cli = policies_cli(tools, language, node, taskring_env.logs / f"policies-{language}.log")
    ns = f"{language}-shop"
    ref = ("--namespace", ns, "--type", "export")

    from_file = cli("get", *ref).json()
    assert set(from_file) == KEYS, set(from_file) ^ KEYS
    assert (from_file["source"], from_file["revision"], from_file["policy"]) == ("file", 0, {"retry_cap": 2})
    assert from_file["updated_at"] is None and from_file["file_policy"] == {"retry_cap": 2}

    put = cli("put", *ref, "--policy", '{"concurrency": {"per_type": 3, "per_key": 1, "key": "shop:{shop_id}"}}',
              "--reason", f"{language} client", "--if-revision", "0").json()
    assert set(put) == KEYS
    assert (put["source"], put["revision"], put["updated_by"]) == ("api", 1, "anonymous")
    assert put["policy"] == {"concurrency": {"per_type": 3, "per_key": 1, "key": "shop:{shop_id}"}}
    assert put["file_policy"] == {"retry_cap": 2}
    written = dt.datetime.fromisoformat(put["updated_at"].replace("Z", "+00:00"))
    assert abs(dt.datetime.now(dt.UTC) - written) < dt.timedelta(minutes=1)
    assert cli("get", *ref).json()["revision"] == 1
    assert [json.loads(line)["task_type"] for line in cli("list", "--namespace", ns).stdout.splitlines()] == [
        "export"]

    bad = cli("put", *ref, "--policy", '{"concurrency": {"per_type": 0}}', "--reason", "zero")
    assert bad.returncode != 0 and "policy_json.concurrency.per_type" in bad.stderr, bad.describe()
    stale = cli("put", *ref, "--policy", '{"retry_cap": 1}', "--reason", "stale", "--if-revision", "0")
    assert stale.returncode != 0 and "FAILED_PRECONDITION" in stale.stderr.upper().replace(" ", "_"), stale.describe()
    no_reason = cli("delete", *ref, "--reason", "")
    assert no_reason.returncode != 0 and "reason" in no_reason.stderr, no_reason.describe()
    assert cli("get", *ref).json()["revision"] == 1, "nothing refused was written"

    deleted = cli("delete", *ref, "--reason", "back to the file", "--if-revision", "1").json()
    assert (deleted["source"], deleted["revision"]) == ("api", 1)
    back = cli("get", *ref).json()
    assert (back["source"], back["policy"]) == ("file", {"retry_cap": 2})
    assert taskring_env.sql("SELECT revision, deleted FROM type_policies WHERE namespace = %s", (ns,)) == [(1, 1)]
