"""The policies followed (dispatcher/policy/follow.py): the file and the entries set through the
API, laid over it (layers.py). A change of either is read and applied; a file or a merge that no
longer parses is refused whole naming the field, the policies in use kept."""
from __future__ import annotations

import datetime as dt
import os

import pytest

from dispatcher.policy.follow import PolicyChange, PolicyFollower, changed_types, read_layers
from dispatcher.policy.layers import PolicyLayers, entry_object
from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
from dispatcher.store.interface_policies import StoredPolicy

AT = dt.datetime(2026, 1, 1)


def write(path, text: str) -> None:
    path.write_text(text)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))   # a new stamp even within one tick


class Entries:
    """The API's entries as the store gives them."""

    def __init__(self) -> None:
        self.rows: list[StoredPolicy] = []

    def set(self, key: str, policy_json: str) -> None:
        ns, task_type = key.split("/")
        old = next((p for p in self.rows if p.key == key), None)
        self.rows = [p for p in self.rows if p.key != key]
        self.rows.append(StoredPolicy(ns, task_type, policy_json, (old.revision if old else 0) + 1, "ann", AT))

    def all(self) -> list[StoredPolicy]:
        return list(self.rows)


def follower(path, entries=None):
    applied: list[PolicyChange] = []
    results: list[str] = []
    layers = read_layers(str(path) if path is not None else None, entries)
    follow = PolicyFollower(str(path) if path is not None else None, entries, layers, layers.policies(),
                            on_change=applied.append, on_reload=results.append)
    return follow, applied, results


def test_a_changed_file_is_applied_and_an_unchanged_one_is_not(tmp_path):
    path = tmp_path / "policies.json"
    write(path, '{"a/b": {"concurrency": {"per_type": 1}}}')
    follow, applied, results = follower(path)
    assert follow.check() is False and applied == []          # nothing changed
    write(path, '{"a/b": {"concurrency": {"per_type": 5}}, "a/c": {"retry_cap": 2}}')
    assert follow.check() is True
    assert applied[-1].policies.limits_by_type[("a", "b")].max_running == 5 and results == ["loaded"]
    assert (applied[-1].changed, applied[-1].source) == (["a/b", "a/c"], "file")
    write(path, '{"a/c": {"retry_cap": 2}, "a/b": {"concurrency": {"per_type": 5}}}')   # the same, reordered
    assert follow.check() is False and len(applied) == 1 and results == ["loaded", "loaded"]


def test_a_file_that_does_not_parse_is_refused_whole_and_the_policies_in_use_stay(tmp_path, caplog):
    path = tmp_path / "policies.json"
    write(path, '{"a/b": {"concurrency": {"per_type": 1}}}')
    follow, applied, results = follower(path)
    write(path, '{"a/b": {"concurrency": {"per_type": 0}}}')
    assert follow.check() is False
    assert applied == [] and results == ["failed"] and follow.current.limits_by_type[("a", "b")].max_running == 1
    assert "a/b.concurrency.per_type: must be a whole number >= 1, got 0" in caplog.text
    assert follow.check() is False and results == ["failed"], "a bad file is reported once"
    path.unlink()
    assert follow.check() is False and results == ["failed", "failed"]   # gone: refused too, policies kept


def test_an_api_entry_replaces_the_files_entry_whole_and_its_delete_gives_it_back(tmp_path):
    path = tmp_path / "policies.json"
    write(path, '{"a/b": {"concurrency": {"per_type": 1}, "retry_cap": 2}}')
    entries = Entries()
    follow, applied, results = follower(path, entries)
    entries.set("a/b", '{"concurrency": {"per_type": 7}}')
    entries.set("a/new", '{"heartbeat_timeout_ms": 5000}')
    assert follow.check() is True
    change = applied[-1]
    assert (change.changed, change.source) == (["a/b", "a/new"], "api")
    # Whole: the file's retry cap is not kept under the API's entry.
    limits = change.policies.limits_by_type[("a", "b")]
    assert (limits.max_running, limits.max_retrying) == (7, None)
    assert change.policies.heartbeat_by_type[("a", "new")] == 5000
    assert follow.check() is False, "the same revisions are no change"
    entries.rows = [p for p in entries.rows if p.key != "a/b"]
    assert follow.check() is True
    assert follow.current.limits_by_type[("a", "b")].max_retrying == 2 and applied[-1].changed == ["a/b"]
    assert results == ["loaded", "loaded"]


def test_without_a_file_the_api_entries_are_followed_alone():
    entries = Entries()
    follow, applied, _ = follower(None, entries)
    assert follow.current.limits_by_type == {}
    entries.set("a/b", '{"rate": {"per_type": {"starts": 5, "period_ms": 1000}}}')
    assert follow.check() is True and applied[-1].source == "api"
    assert ("a", "b") in follow.current.limits_by_type


def test_a_file_change_that_makes_an_api_entry_unusable_is_refused_and_reported_once(tmp_path):
    path = tmp_path / "policies.json"
    write(path, '{"default": {"max_backoff_ms": 60000}}')
    entries = Entries()
    entries.set("a/b", '{"initial_backoff_ms": 30000}')
    follow, applied, results = follower(path, entries)
    write(path, '{"default": {"max_backoff_ms": 10000}}')   # now below the API entry's initial backoff
    assert follow.check() is False and results == ["failed"]
    assert follow.current.for_type("a", "b").initial_backoff_ms == 30000
    assert follow.check() is False and results == ["failed"]
    entries.set("a/b", '{"initial_backoff_ms": 5000}')       # fixed on the API side: merged with the new file
    assert follow.check() is True
    assert follow.current.for_type("a", "b").max_backoff_ms == 10000


def test_a_change_is_checked_against_the_merged_document_naming_the_field():
    layers = PolicyLayers(file={"a/b": {"retry_cap": 1}})
    with pytest.raises(InvalidRetryPolicy) as refused:
        layers.policies({"a/c": {"concurrency": {"per_type": 0}}})
    assert refused.value.field == "a/c.concurrency.per_type"
    assert layers.policies({"a/b": None}).limits_by_type == {("a", "b"): layers.policies().limits_by_type[("a", "b")]}
    with pytest.raises(InvalidRetryPolicy) as not_object:
        entry_object("[1, 2]")
    assert not_object.value.field == "policy_json"


def test_changed_types_names_the_entries_that_differ():
    before = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 1}}, "a/c": {"heartbeat_timeout_ms": 5}}')
    after = parse_retry_policies('{"default": {"initial_backoff_ms": 7}, "a/b": {"concurrency": {"per_type": 2}},'
                                 ' "a/c": {"heartbeat_timeout_ms": 5}, "a/d": {"fairness": {"key": "t:{t}"}}}')
    # a/c's own entry is the same, but its retry policy takes the new default's backoff.
    assert changed_types(before, after) == ["default", "a/b", "a/c", "a/d"]
    same_default = parse_retry_policies('{"a/b": {"concurrency": {"per_type": 2}}, "a/c": {"heartbeat_timeout_ms": 5}}')
    assert changed_types(before, same_default) == ["a/b"]
