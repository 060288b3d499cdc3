"""The policies in use: the policies file's entries, with the entries set through the API
(PolicyService, store/interface_policies.py) laid over them.

An API entry replaces the file's entry for its task type whole (not field by field), so what
a type runs under is always one entry a person wrote, readable in one place; deleting the API
entry gives the type back to the file. The file keeps the server default (`"default"`), which
the API does not set. The merged document is parsed as the file is (retry.parse_retry_policies),
so both sources are validated by one parser and refused naming the field.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from dispatcher.policy.retry import InvalidRetryPolicy, RetryPolicies, parse_retry_policies, policies_document

file_document = policies_document
"""The policies file as a JSON object (its entries are checked when merged)."""

MAX_ENTRY_CHARS = 65_536
"""The longest entry the API takes (a type's policy is a few hundred characters)."""


def entry_object(policy_json: str, field: str = "policy_json") -> dict:
    """One type's entry as the API takes it: a JSON object, bounded in size."""
    if len(policy_json) > MAX_ENTRY_CHARS:
        raise InvalidRetryPolicy(field, f"is {len(policy_json)} characters, more than {MAX_ENTRY_CHARS}")
    try:
        data = json.loads(policy_json)
    except ValueError as exc:
        raise InvalidRetryPolicy(field, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRetryPolicy(field, "must be a JSON object (the entry of one task type, as in the policies"
                                        " file)")
    return data


class ApiEntry(Protocol):
    """An entry set through the API, as its store keeps it (store/interface_policies.py StoredPolicy)."""

    @property
    def namespace(self) -> str: ...
    @property
    def task_type(self) -> str: ...
    @property
    def policy_json(self) -> str: ...
    @property
    def revision(self) -> int: ...
    @property
    def key(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class PolicyLayers:
    file: Mapping[str, object] = dataclasses.field(default_factory=dict)
    """The policies file's document ({} with no file)."""
    api: Sequence[ApiEntry] = ()
    """The entries set through the API."""

    def api_entry(self, namespace: str, task_type: str) -> ApiEntry | None:
        return next((p for p in self.api if (p.namespace, p.task_type) == (namespace, task_type)), None)

    def document(self, replace: Mapping[str, dict | None] | None = None) -> dict:
        """The merged document; `replace` sets ("ns/type" -> entry) or removes (-> None) entries
        of the API layer first (a change being checked before it is written)."""
        merged = dict(self.file)
        overrides: dict[str, dict | None] = {p.key: entry_object(p.policy_json) for p in self.api}
        overrides.update(replace or {})
        for key, entry in overrides.items():
            if entry is None:
                continue   # removed from the API layer: the file's entry, if any, shows again
            merged[key] = entry
        return merged

    def policies(self, replace: Mapping[str, dict | None] | None = None) -> RetryPolicies:
        """The policies in use; InvalidRetryPolicy naming the key and field when they cannot be."""
        return parse_retry_policies(json.dumps(self.document(replace)))

    def revisions(self) -> tuple[tuple[str, int], ...]:
        """What identifies the API layer's state (a change is a new revision)."""
        return tuple((p.key, p.revision) for p in self.api)
