"""The policies file followed (dispatcher/policy/follow.py): a change is read and applied, a file
that no longer parses is refused whole naming the field, the policies in use kept."""
from __future__ import annotations

import os

from dispatcher.policy.follow import PolicyFile, changed_types, read_policies
from dispatcher.policy.retry import RetryPolicies, parse_retry_policies


def write(path, text: str) -> None:
    path.write_text(text)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))   # a new stamp even within one tick


def test_a_changed_file_is_applied_and_an_unchanged_one_is_not(tmp_path):
    path = tmp_path / "policies.json"
    write(path, '{"a/b": {"concurrency": {"per_type": 1}}}')
    applied: list[RetryPolicies] = []
    results: list[str] = []
    follow = PolicyFile(str(path), read_policies(str(path)), on_change=applied.append, on_reload=results.append)
    assert follow.check() is False and applied == []          # nothing changed
    write(path, '{"a/b": {"concurrency": {"per_type": 5}}, "a/c": {"retry_cap": 2}}')
    assert follow.check() is True
    assert applied[-1].limits_by_type[("a", "b")].max_running == 5 and results == ["loaded"]
    write(path, '{"a/c": {"retry_cap": 2}, "a/b": {"concurrency": {"per_type": 5}}}')   # the same, reordered
    assert follow.check() is False and len(applied) == 1 and results == ["loaded", "loaded"]


def test_a_file_that_does_not_parse_is_refused_whole_and_the_policies_in_use_stay(tmp_path, caplog):
    path = tmp_path / "policies.json"
    write(path, '{"a/b": {"concurrency": {"per_type": 1}}}')
    applied: list[RetryPolicies] = []
    results: list[str] = []
    follow = PolicyFile(str(path), read_policies(str(path)), on_change=applied.append, on_reload=results.append)
    write(path, '{"a/b": {"concurrency": {"per_type": 0}}}')
    assert follow.check() is False
    assert applied == [] and results == ["failed"] and follow.current.limits_by_type[("a", "b")].max_running == 1
    assert "a/b.concurrency.per_type: must be a whole number >= 1, got 0" in caplog.text
    assert follow.check() is False and results == ["failed"], "a bad file is reported once"
    path.unlink()
    assert follow.check() is False and results == ["failed", "failed"]   # gone: refused too, policies kept


def test_changed_types_names_the_entries_that_differ():
    before = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 1}}, "a/c": {"heartbeat_timeout_ms": 5}}')
    after = parse_retry_policies('{"default": {"initial_backoff_ms": 7}, "a/b": {"concurrency": {"per_type": 2}},'
                                 ' "a/c": {"heartbeat_timeout_ms": 5}, "a/d": {"fairness": {"key": "t:{t}"}}}')
    # a/c's own entry is the same, but its retry policy takes the new default's backoff.
    assert changed_types(before, after) == ["default", "a/b", "a/c", "a/d"]
    same_default = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 2}}, "a/c": {"heartbeat_timeout_ms": 5}}')
    assert changed_types(before, same_default) == ["a/b"]
