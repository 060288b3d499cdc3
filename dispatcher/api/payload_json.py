"""A task's payload as the store keeps it: one canonical JSON text per value.

Canonical (compact, keys sorted, no NaN or Infinity, no duplicate keys), so that two
submits of the same payload store the same bytes: unique keys declared over the payload and
the payload digest of an idempotent resubmit compare texts, not parsed values.
"""
from __future__ import annotations

import json
import math
import re
from _json import make_encoder, make_scanner
from json.encoder import encode_basestring
from typing import Any, cast

from dispatcher.base.errors import InvalidArgument, quote


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
    fast = fast_canonical_payload(text, max_bytes, max_depth)
    if fast is not None:
        return fast
    return _checked_canonical_payload(text, max_bytes=max_bytes, max_depth=max_depth, field=field)


# The hot path (every submitted task) takes a few C calls instead. JSONDecoder.decode
# and JSONEncoder.encode wrap the C scanner and encoder in Python (a whitespace regex on
# each side; a new C encoder built per call), which cost more than the scan itself, and
# the hooks below them call Python per object (_unique_keys) and per float.
#
# A flat object whose values need no re-encoding (strings with nothing to escape,
# integers as Python prints them, so no "-0", and the three literals) is read by a
# regular expression, with no parse and no encode. Compact, with keys that increase
# strictly (sorted, none twice), it is canonical already: what the SDKs send when the
# keys are in order. Otherwise (keys out of order, as the SDKs send them too; JSON
# whitespace around tokens, as json.dumps writes by default) its canonical form is its
# pairs sorted by key and joined compactly, no longer than the text; a duplicate key is
# left to the full path, which names it. Possessive quantifiers: a text that does not
# match fails where it stops matching, without backtracking into a long string. Up to
# _FLAT_KEYS keys; more, or anything else, takes the scanners.
_FLAT_KEYS = 16
_STRING = r'"[^"\\\x00-\x1f]*+"'
_VALUE = _STRING + r"|-?+[1-9][0-9]{0,999}+|0|true|false|null"


def _flat_pattern(keys: int, ws: str, value: str) -> re.Pattern[str]:
    """{"k1":v1,"k2":v2,...} with 0 to `keys` pairs and `ws` between tokens: the keys
    captured, and the values as `value` says."""
    pair = f'"([^"\\\\\\x00-\\x1f]*+)"{ws}:{ws}{value}'
    inner = ""
    for i in range(keys, 0, -1):
        inner = "(?:" + ("" if i == 1 else f"{ws},{ws}") + pair + inner + ")?+"
    return re.compile(f"{ws}\\{{{ws}{inner}{ws}\\}}{ws}")


# Compact, the keys captured (key i as group i): is it canonical already? The values
# are not captured, which a text that is canonical does not need.
_FLAT_COMPACT = _flat_pattern(_FLAT_KEYS, "", f"(?:{_VALUE})")
# JSON's whitespace anywhere between tokens, key i and its value's text captured as
# groups 2i-1 and 2i: the pairs to sort and join.
_FLAT_ANY = _flat_pattern(_FLAT_KEYS, "[ \t\n\r]*+", f"({_VALUE})")


def _flat_canonical(match: re.Match[str]) -> str | None:
    """The canonical text of a flat object _FLAT_ANY matched; None on a duplicate key.

    One or two pairs, the usual small payload, without the sort: each builtin call costs.
    """
    count = (match.lastindex or 0) // 2
    if count <= 2:
        if count == 0:
            return "{}"
        if count == 1:
            return f'{{"{match[1]}":{match[2]}}}'
        key, value, other_key, other_value = match.group(1, 2, 3, 4)
        if key < other_key:
            return f'{{"{key}":{value},"{other_key}":{other_value}}}'
        if other_key < key:
            return f'{{"{other_key}":{other_value},"{key}":{value}}}'
        return None
    groups = match.groups()[:2 * count]
    keys = groups[0::2]
    if len(set(keys)) != count:
        return None
    return "{" + ",".join([f'"{key}":{value}' for key, value in sorted(zip(keys, groups[1::2]))]) + "}"


# The scanners, without the decoder's Python wrapper. _PAIRS_SCAN reads an object as its
# list of (key, value) pairs (object_pairs_hook=list, a C call), so a flat object's
# duplicate keys show as fewer keys than pairs. _PLAIN_SCAN has no hooks at all: what the
# checked decoder's hooks refuse either makes the encoded text differ from the input
# (duplicates collapse), and then _CHECKED_SCAN decides, or fails to encode (NaN and
# infinities: allow_nan=False). Numbers parse the same (parse_float is float in both).
# markers=None: no cycle check (a parsed value has none), and no markers dict that an
# encode failing half way would leave dirty for the next call.
_PLAIN_SCAN = make_scanner(cast(Any, json.JSONDecoder()))
_PAIRS_SCAN = make_scanner(cast(Any, json.JSONDecoder(object_pairs_hook=list)))
_CHECKED_SCAN = make_scanner(cast(Any, _PAYLOAD_DECODER))
_ENCODE = make_encoder(None, _PAYLOAD_ENCODER.default, encode_basestring, None,
                       _PAYLOAD_ENCODER.key_separator, _PAYLOAD_ENCODER.item_separator,
                       _PAYLOAD_ENCODER.sort_keys, _PAYLOAD_ENCODER.skipkeys, _PAYLOAD_ENCODER.allow_nan)


def fast_canonical_payload(text: str, max_bytes: int, max_depth: int) -> str | None:
    """canonical_payload(text) when it would return without an error, else None (and then
    only the full path, _checked_canonical_payload, can say what is wrong). Positional:
    it runs once per task, and keywords cost.

    Taken only where it must agree with the full path: the text fits `max_bytes`, and
    either it is a flat object the patterns read whole (JSON whitespace allowed where the
    full path's decode allows it), or it opens with '{', ends with the object, has no
    more '{' and '[' than `max_depth` (so it nests no deeper, and the C scanner cannot
    recurse far either), and its canonical form fits `max_bytes` too.
    """
    if text.isascii():
        if len(text) > max_bytes:
            return None
    elif _utf8_size(text, max_bytes) is None:
        return None
    if max_depth >= 1:
        # json.dumps writes ": " by default, which cannot be canonical outside a string: go
        # straight to _FLAT_ANY then (a canonical text with ": " in a string gets there too).
        match = _FLAT_COMPACT.fullmatch(text) if ": " not in text else None
        if match is not None:
            count = match.lastindex   # the keys; they must increase strictly (sorted, none twice)
            if count is None or count == 1 or (match[1] < match[2] if count == 2 else _keys_in_order(match, count)):
                return text
        match = _FLAT_ANY.fullmatch(text)
        if match is not None:
            return _flat_canonical(match)   # no longer than the text: within max_bytes
    if text[:1] != "{":
        return None
    brackets = text.count("{") + text.count("[")
    if brackets > max_depth:
        return None
    try:
        # One bracket: the object's own, so nothing nests in it.
        canonical = _flat_scanned(text) if brackets == 1 else _nested_canonical(text)
    except (StopIteration, ValueError, RecursionError, _BadPayload):
        # No JSON at index 0, a JSON error, an over-long integer, NaN or infinity, a
        # duplicate key.
        return None
    if canonical is None or canonical == text:
        return canonical
    return canonical if _utf8_size(canonical, max_bytes) is not None else None


def _keys_in_order(match: re.Match[str], count: int) -> bool:
    """Whether the `count` keys _FLAT_COMPACT captured increase strictly."""
    keys = match.groups()[:count]
    return keys == tuple(sorted(set(keys)))


def _flat_scanned(text: str) -> str | None:
    """Canonical form of an object with no object or array in it; None on a duplicate key."""
    pairs, end = _PAIRS_SCAN(text, 0)
    if end != len(text):
        return None
    obj = dict(pairs)
    if len(obj) != len(pairs):
        return None
    return "".join(_ENCODE(obj, 0))


def _nested_canonical(text: str) -> str | None:
    """Canonical form of any object; raises _BadPayload on a duplicate key."""
    obj, end = _PLAIN_SCAN(text, 0)
    if end != len(text):
        return None
    canonical: str = "".join(_ENCODE(obj, 0))
    if canonical != text:
        _CHECKED_SCAN(text, 0)   # the plain scan merged duplicate keys; this one refuses them
    return canonical


def _utf8_size(text: str, max_bytes: int) -> int | None:
    """Size of `text` as UTF-8 when it is at most `max_bytes`; None when more, or not encodable."""
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            return None
    return size if size <= max_bytes else None


def _checked_canonical_payload(text: str, *, max_bytes: int, max_depth: int, field: str) -> str:
    """canonical_payload of a non-empty text, every check in turn: the full path, and the
    one that names what is wrong."""
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
