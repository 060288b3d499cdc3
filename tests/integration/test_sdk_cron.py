"""The Go, Java and Node SDKs' cron clients, through their CLIs, against a real
`taskring node --single`: the same rule lifecycle the Python client has (tests/integration/
test_cron.py), so a service in any of the four languages can own its schedules in code.

Each CLI has the same `cron` command (see each SDK's README):

    <cli> cron create|update --nodes HOST:PORT --namespace NS --name NAME --type T --schedule S
                             [--zone Z] [--payload JSON] [--owner-team X] [--description X]
                             [--catch-up P] [--catch-up-limit N] [--overlap P]
                             [--on-repeated-hour P] [--on-skipped-hour P]
                             [--timeout-ms N] [--max-retries N]
    <cli> cron get|pause|resume|delete --nodes HOST:PORT --namespace NS --name NAME
    <cli> cron list --nodes HOST:PORT [--namespace NS]

printing one JSON object per rule and line (list: one line per rule, none for no rule) with
the keys of RULE_KEYS; a refusal exits non-zero with the server's status and message (which
names the field) on stderr.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from zoneinfo import ZoneInfo

import pytest

from harness.processes import NodeProcess
from tests.integration.polyglot import CliResult, Tools, build_tools, run_cli

pytestmark = pytest.mark.integration

LANGUAGES = ("go", "java", "node")
RULE_KEYS = {"namespace", "name", "task_type", "schedule", "time_zone", "payload", "on_repeated_hour",
             "on_skipped_hour", "catch_up", "catch_up_limit", "overlap", "owner_team", "description",
             "timeout_ms", "max_retries", "paused", "next_fire_time", "last_fire_time", "last_fire_task_id",
             "last_fire_state", "created_at", "updated_at"}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Tools:
    return build_tools(tmp_path_factory.mktemp("sdk-cron-build"))


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "cron-sdk-1", single=True).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


def cron_cli(tools: Tools, language: str, node: NodeProcess, log) -> Callable[..., CliResult]:
    def run(action: str, *flags: str) -> CliResult:
        return run_cli(tools.cli(language, "cron", action, "--nodes", node.target, *flags), log)
    return run


def instant(text: str | None) -> dt.datetime:
    assert text is not None, "a time the rule must have"
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_rule_is_created_read_listed_refused_updated_paused_resumed_and_deleted(taskring_env, node, tools,
                                                                                   language):
    cron = cron_cli(tools, language, node, taskring_env.logs / f"cron-{language}.log")
    ns, name = f"{language}-billing", "nightly"
    ref = ("--namespace", ns, "--name", name)

    created = cron("create", *ref, "--type", "reconcile", "--schedule", "0 0 * * *", "--zone", "Asia/Singapore",
                   "--payload", '{"scope": "all"}', "--owner-team", "payments", "--description", "midnight SGT",
                   "--overlap", "skip", "--timeout-ms", "30000", "--max-retries", "2").json()
    assert set(created) == RULE_KEYS, set(created) ^ RULE_KEYS
    assert (created["namespace"], created["name"], created["task_type"], created["schedule"]) == (
        ns, name, "reconcile", "0 0 * * *")
    assert created["time_zone"] == "Asia/Singapore" and created["payload"] == {"scope": "all"}
    assert (created["owner_team"], created["description"], created["overlap"]) == ("payments", "midnight SGT", "skip")
    assert (created["timeout_ms"], created["max_retries"], created["paused"]) == (30000, 2, False)
    # Normalised by the server: the policies it filled in, and the next midnight in Singapore.
    assert created["catch_up"] == "latest" and created["last_fire_task_id"] == ""
    assert created["last_fire_time"] is None and created["last_fire_state"] is None
    nxt = instant(created["next_fire_time"])
    assert nxt > dt.datetime.now(dt.UTC)
    local = nxt.astimezone(ZoneInfo("Asia/Singapore"))
    assert (local.hour, local.minute, local.second) == (0, 0, 0) and nxt - dt.datetime.now(dt.UTC) <= dt.timedelta(
        days=1)

    assert cron("get", *ref).json() == created
    assert [json.loads(line) for line in cron("list", "--namespace", ns).stdout.splitlines()] == [created]
    assert cron("list", "--namespace", f"{language}-nothing-here").stdout.strip() == ""

    # Refused, naming why, and nothing written.
    again = cron("create", *ref, "--type", "reconcile", "--schedule", "0 0 * * *", "--zone", "UTC")
    assert again.returncode != 0 and "already" in again.stderr.lower(), again.describe()
    bad = cron("create", "--namespace", ns, "--name", "bad", "--type", "reconcile", "--schedule", "0 0 * * *",
               "--zone", "Mars/Olympus_Mons")
    assert bad.returncode != 0 and "rule.time_zone" in bad.stderr, bad.describe()
    missing = cron("get", "--namespace", ns, "--name", "no-such-rule")
    said = missing.stderr.lower()
    assert missing.returncode != 0 and ("not found" in said or "not_found" in said), missing.describe()
    assert taskring_env.sql("SELECT name FROM cron_rules WHERE namespace = %s", (ns,)) == [(name,)]

    updated = cron("update", *ref, "--type", "reconcile", "--schedule", "30 1 * * *", "--zone", "Europe/London",
                   "--payload", '{"scope": "eu"}').json()
    assert (updated["schedule"], updated["time_zone"], updated["payload"]) == ("30 1 * * *", "Europe/London",
                                                                              {"scope": "eu"})
    assert updated["overlap"] == "allow" and updated["owner_team"] == ""   # the whole rule is replaced
    london = instant(updated["next_fire_time"]).astimezone(ZoneInfo("Europe/London"))
    assert (london.hour, london.minute) == (1, 30)

    paused = cron("pause", *ref).json()
    assert paused["paused"] is True and paused["next_fire_time"] is None
    resumed = cron("resume", *ref).json()
    assert resumed["paused"] is False and instant(resumed["next_fire_time"]) > dt.datetime.now(dt.UTC)

    deleted = cron("delete", *ref).json()
    assert deleted["name"] == name
    assert cron("list", "--namespace", ns).stdout.strip() == ""
    assert taskring_env.sql("SELECT COUNT(*) FROM cron_rules WHERE namespace = %s", (ns,)) == [(0,)]
