"""A key built from a task's payload, declared per task type as a template over its fields:
`order:{order_id}` (unique keys, dispatcher/policy/unique.py), `tenant:{shop.id}` (per-key limits,
dispatcher/policy/scheduling.py).

Pure: no I/O.
"""
from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=1024)
def _parts(template: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The template as (literal text, field path after it) pairs, the last path empty: split
    once, not matched by a regular expression for every task."""
    pieces = FIELD.split(template)   # literal, field, literal, field, ..., literal
    out = []
    for i in range(0, len(pieces), 2):
        path = tuple(pieces[i + 1].split(".")) if i + 1 < len(pieces) else ()
        out.append((pieces[i], path))
    return tuple(out)


def render_key(template: str, payload: Any, field: str, purpose: str) -> str:
    """The key of one task. A placeholder whose field is missing, or is not a string or an
    integer, is the caller's error, reported on `field` (the task's payload); `purpose` names
    what the key is for ("unique key", "limit key")."""
    out = []
    for text, path in _parts(template):
        out.append(text)
        if not path:
            continue
        value: Any = payload
        for part in path:
            if not isinstance(value, dict) or part not in value:
                raise InvalidArgument(field, f"has no field {'.'.join(path)!r}, which its task type's {purpose}"
                                             f" {quote(template)} is built from")
            value = value[part]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InvalidArgument(field, f"field {'.'.join(path)!r} must be a string or an integer to build the"
                                         f" {purpose} {quote(template)}, got {type(value).__name__}")
        out.append(value if isinstance(value, str) else str(value))
    return "".join(out)
