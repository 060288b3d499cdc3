"""What a failure is, for grouping: its exception class and the shape of its message.

5,000 dead letters from one outage differ only in the values their messages quote (an
order id, an amount, a host:port), so the shape replaces those with placeholders and the
group is a digest of class and shape. Pure text work: both stores and the console share it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re

SHAPE_CHARS = 200
"""Most characters of a shape kept (and shown); the group is a digest of that much."""

_CLASS = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Failure|Timeout|Exit|Interrupt|Fault|Warning)?):\s")
# Order matters: quoted text first (it may hold anything), then ids, then numbers.
_PLACEHOLDERS = (
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b(?=[A-Za-z_.:-]*\d)[A-Za-z0-9_.:-]*[0-9][A-Za-z0-9_.:-]*\b"), "<n>"),
    (re.compile(r"\s+"), " "),
)


@dataclasses.dataclass(frozen=True)
class Failure:
    error_class: str
    """The exception's class ("ValueError", "payments.CardDeclined"), else the outcome's kind."""
    shape: str
    """The message with quoted values, ids and numbers replaced by placeholders."""
    group: str
    """16 hex characters naming (class, shape): the key dead letters are grouped by."""


def classify(error: str | None, fallback_class: str = "error") -> Failure:
    """The failure an error text describes. `fallback_class` names errors that do not start
    with a class (an outcome kind such as timed_out, or a dispatcher message)."""
    text = (error or "").strip()
    m = _CLASS.match(text)
    if m and (m.group(1)[0].isupper() or "." in m.group(1)):
        error_class, message = m.group(1), text[m.end():]
    else:
        error_class, message = fallback_class, text
    shape = message
    for pattern, placeholder in _PLACEHOLDERS:
        shape = pattern.sub(placeholder, shape)
    shape = shape.strip()[:SHAPE_CHARS]
    digest = hashlib.sha256(f"{error_class}\n{shape}".encode()).hexdigest()[:16]
    return Failure(error_class[:128], shape, digest)
