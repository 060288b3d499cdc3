"""The alert rules against promtool's rule unit tests (deploy/prometheus/tests/*.yml).

promtool evaluates rules.yml on the made-up series of each test and compares the alerts
it gets with those expected, labels and annotations included. Here: those tests pass, and
every alert has at least one case where it is expected to fire and one where it is
expected to stay silent (below its threshold, or not for long enough), so that neither
a threshold nor a `for:` can change unnoticed.
"""
from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import yaml

from tests.unit.test_deploy_artifacts import PROM, RULES, _alerts, _promtool

TESTS = PROM / "tests"


def _test_files() -> list[pathlib.Path]:
    return sorted(TESTS.glob("*.yml"))


def _cases() -> list[tuple[pathlib.Path, dict]]:
    """(file, alert_rule_test case) of every test group of every file."""
    out: list[tuple[pathlib.Path, dict]] = []
    for path in _test_files():
        for group in yaml.safe_load(path.read_text())["tests"]:
            out.extend((path, case) for case in group.get("alert_rule_test", []))
    return out


def test_the_rule_tests_load_the_rules_file_itself():
    assert _test_files(), "no promtool rule tests in deploy/prometheus/tests"
    for path in _test_files():
        doc = yaml.safe_load(path.read_text())
        assert [(path.parent / f).resolve() for f in doc["rule_files"]] == [RULES.resolve()], path.name


def test_every_alert_has_a_case_that_fires_and_one_that_stays_silent():
    alerts = {a["alert"] for a in _alerts()}
    firing: set[str] = set()
    silent: set[str] = set()
    for path, case in _cases():
        name = case["alertname"]
        assert name in alerts, f"{path.name}: tests {name}, which rules.yml does not define"
        (firing if case.get("exp_alerts") else silent).add(name)
    assert not alerts - firing, f"alerts no test expects to fire: {sorted(alerts - firing)}"
    assert not alerts - silent, f"alerts no test expects to stay silent: {sorted(alerts - silent)}"


def test_promtool_rule_tests_pass():
    promtool = _promtool()
    if promtool is None:
        # As for test_promtool_accepts_the_rules: in CI a missing promtool is a failure.
        assert os.environ.get("CI") != "true", "promtool not found: deploy/local/bootstrap.sh should have linked it"
        pytest.skip("promtool not installed (bash deploy/local/bootstrap.sh links it into .venv/bin)")
    files = [str(p.relative_to(PROM)) for p in _test_files()]
    out = subprocess.run([promtool, "test", "rules", *files], cwd=PROM, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == len(files), out.stdout  # every file was run
