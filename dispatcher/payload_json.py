"""A task's payload as the store keeps it: one canonical JSON text per value.

Canonical (compact, keys sorted, no NaN or Infinity, no duplicate keys), so that two
submits of the same payload store the same bytes: unique keys declared over the payload and
the payload digest of an idempotent resubmit compare texts, not parsed values.
"""
from __future__ import annotations

import json
import math
from typing import Any

from dispatcher.errors import InvalidArgument, quote


class _BadPayload(Exception):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadPayload(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadPayload(f"number {text[:40]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _BadPayload(f"duplicate key {quote(key, 40)}")
            seen.add(key)
    return obj


# Built once: json.loads and json.dumps with options build a decoder and an encoder
# on every call, which cost more than the parse of a small payload.
_PAYLOAD_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_reject_constant,
                                    parse_float=_finite_float)
_PAYLOAD_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)


def canonical_payload(text: str, *, max_bytes: int, max_depth: int, field: str) -> str:
    """The payload as compact JSON with sorted keys; InvalidArgument naming `field` for
    anything else than a JSON object of at most `max_bytes` (before and after) and
    `max_depth` levels, with unique keys and finite numbers."""
    if not text:
        return "{}"
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(field, "is not valid UTF-8") from None
    if size > max_bytes:
        raise InvalidArgument(field, f"is {size} bytes, more than the maximum {max_bytes}")
    try:
        obj = _PAYLOAD_DECODER.decode(text)
    except RecursionError:
        # The C decoder recurses per level; thousands of levels end here.
        raise InvalidArgument(field, f"is nested too deep (more than {max_depth} levels)") from None
    except _BadPayload as e:
        raise InvalidArgument(field, f"is not valid JSON: {e}") from None
    except ValueError as e:  # JSONDecodeError, and over-long integers
        raise InvalidArgument(field, f"is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise InvalidArgument(field, f"must be a JSON object, got a JSON {_json_kind(obj)}")
    # Every level opens with '{' or '['; when there are not enough of them in the
    # whole text, no walk is needed (the common case on the hot path).
    if text.count("{") + text.count("[") > max_depth and _too_deep(obj, max_depth):
        raise InvalidArgument(field, f"is nested too deep (more than {max_depth} levels)")
    canonical = _PAYLOAD_ENCODER.encode(obj)
    try:
        size = len(canonical.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(field, "contains a string with an unpaired surrogate (\\ud800-\\udfff)") from None
    if size > max_bytes:
        raise InvalidArgument(field,
                              f"is {size} bytes once canonicalised, more than the maximum {max_bytes}")
    return canonical


def _too_deep(obj: Any, limit: int) -> bool:
    """True when containers nest more than `limit` levels; iterative, stops early."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _json_kind(obj: Any) -> str:
    if isinstance(obj, list):
        return "array"
    if isinstance(obj, str):
        return "string"
    if isinstance(obj, bool):
        return "boolean"
    if obj is None:
        return "null"
    return "number"


def parse_canonical(text: str) -> Any:
    """The value of a text canonical_payload made (it parses back to the same object)."""
    return _PAYLOAD_DECODER.decode(text)
