"""A key built from a task's payload, declared per task type as a template over its fields:
`order:{order_id}` (unique keys, dispatcher/policy/unique.py), `tenant:{shop.id}` (per-key limits,
dispatcher/policy/scheduling.py).

Pure: no I/O.
"""
from __future__ import annotations

import re
from typing import Any

from dispatcher.base.errors import InvalidArgument, quote

FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
"""A placeholder: `{field}` or `{field.sub}`."""
BRACES = re.compile(r"[{}]")


def template_problem(template: str) -> str | None:
    """What is wrong with a template, or None."""
    if not template:
        return "must not be empty"
    if not FIELD.search(template):
        return f"names no payload field ({{field}}): {quote(template)}"
    if BRACES.search(FIELD.sub("", template)):
        return f"has a brace that is not a {{field}}: {quote(template)}"
    return None


def render_key(template: str, payload: Any, field: str, purpose: str) -> str:
    """The key of one task. A placeholder whose field is missing, or is not a string or an
    integer, is the caller's error, reported on `field` (the task's payload); `purpose` names
    what the key is for ("unique key", "limit key")."""
    def value_of(match: re.Match[str]) -> str:
        value: Any = payload
        for part in match[1].split("."):
            if not isinstance(value, dict) or part not in value:
                raise InvalidArgument(field, f"has no field {match[1]!r}, which its task type's {purpose}"
                                             f" {quote(template)} is built from")
            value = value[part]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InvalidArgument(field, f"field {match[1]!r} must be a string or an integer to build the"
                                         f" {purpose} {quote(template)}, got {type(value).__name__}")
        return str(value)
    return FIELD.sub(value_of, template)
