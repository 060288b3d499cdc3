"""Parsing a request's bytes so that a bad one says what is wrong with it.

protobuf's own DecodeError says only that a message did not parse. `decode_request` parses
the same way, and on a failure walks the wire format once to name the first bad field by its
path in the request ("tasks[3].payload_json: is not valid UTF-8 (byte 5 of the string)") or
the framing fault ("request: is not a valid protobuf message: the field at byte 12 runs past
the end of the message"), as an InvalidArgument: a caller with a broken encoder can fix it
without our logs. The walk runs only on the failure path.
"""
from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from dispatcher.base.errors import InvalidArgument

_T = TypeVar("_T", bound=Message)


def decode_request(message_type: type[_T], data: bytes) -> _T:
    """Parse `data` as `message_type`; raise InvalidArgument naming the first bad field."""
    try:
        return message_type.FromString(data)
    except DecodeError:
        field, problem = _wire_problem(message_type.DESCRIPTOR, data, "") or (
            "request", f"is not a valid {message_type.DESCRIPTOR.full_name} message")
        raise InvalidArgument(field, problem) from None


class _Corrupt(Exception):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(pos, min(pos + 10, len(data))):  # a varint has at most 10 bytes
        value |= (data[i] & 0x7F) << shift
        if not data[i] & 0x80:
            return value, i + 1
        shift += 7
    raise _Corrupt(f"a varint at byte {pos} is truncated or longer than 10 bytes")


def _skip_group(data: bytes, pos: int, number: int) -> int:
    """Past the end-group tag of the (deprecated, but valid) group `number` opened before `pos`."""
    while pos < len(data):
        at = pos
        key, pos = _varint(data, pos)
        if key & 7 == 4:
            if key >> 3 != number:
                raise _Corrupt(f"an end-group tag at byte {at} closes no open group")
            return pos
        pos = _skip(data, pos, key, at)
    raise _Corrupt(f"group {number} is not closed")


def _skip(data: bytes, pos: int, key: int, at: int) -> int:
    wire_type = key & 7
    if wire_type == 0:
        return _varint(data, pos)[1]
    if wire_type in (1, 5):
        end = pos + (8 if wire_type == 1 else 4)
    elif wire_type == 2:
        length, pos = _varint(data, pos)
        end = pos + length
    elif wire_type == 3:
        return _skip_group(data, pos, key >> 3)
    else:
        raise _Corrupt(f"the tag at byte {at} has wire type {wire_type}, which does not exist")
    if end > len(data):
        raise _Corrupt(f"the field at byte {at} runs past the end of the message")
    return end


def _wire_problem(descriptor: Any, data: bytes, prefix: str) -> tuple[str, str] | None:
    """(field path, problem) of the first fault in `data` read as `descriptor`, or None."""
    seen: dict[int, int] = {}
    pos = 0
    try:
        while pos < len(data):
            at = pos
            key, pos = _varint(data, pos)
            if key >> 3 == 0:
                raise _Corrupt(f"the tag at byte {at} has field number 0")
            if key & 7 == 4:
                raise _Corrupt(f"an end-group tag at byte {at} closes no open group")
            field = descriptor.fields_by_number.get(key >> 3)
            if field is None or key & 7 != 2:
                # Unknown fields, and known ones sent with another wire type, are kept
                # as unknown fields by protobuf: only their framing can be at fault.
                pos = _skip(data, pos, key, at)
                continue
            length, start = _varint(data, pos)
            pos = start + length
            if pos > len(data):
                raise _Corrupt(f"the field at byte {at} runs past the end of the message")
            index = seen[field.number] = seen.get(field.number, -1) + 1
            name = f"{prefix}{field.name}" + (f"[{index}]" if _repeated(field) else "")
            if field.type == FieldDescriptor.TYPE_STRING:
                try:
                    data[start:pos].decode("utf-8")
                except UnicodeDecodeError as e:
                    return name, f"is not valid UTF-8 (byte {e.start} of the string)"
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                found = _wire_problem(field.message_type, data[start:pos], name + ".")
                if found is not None:
                    return found
    except _Corrupt as e:
        return prefix.rstrip(".") or "request", f"is not a valid protobuf message: {e}"
    return None


def _repeated(field: Any) -> bool:
    # FieldDescriptor.label is deprecated in newer protobuf releases; is_repeated replaces it.
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED
