"""The shortcuts of batch validation agree with the full path, on what they take and on what they leave.

validate_batch takes a typical task through validation._TypicalTasks, a payload through
payload_json.fast_canonical_payload, and a batch's ids from ids.new_task_ids. Each must
give exactly what the full path gives (validate_task, _checked_canonical_payload,
new_task_id), and every error must still be the full path's own.
"""
from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from dispatcher.api import validation
from dispatcher.api.payload_json import _checked_canonical_payload, canonical_payload, fast_canonical_payload
from dispatcher.api.validation import Limits, ValidTask, validate_batch, validate_task
from dispatcher.base.errors import InvalidArgument
from dispatcher.base.ids import UuidV7Generator, new_task_ids, uuid7_unix_ms
from dispatcher.policy.retry import RetryPolicies, RetryPolicy
from dispatcher.policy.unique import UniqueRule
from taskring.wire import pb

UTC = dt.UTC
NOW = dt.datetime(2030, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
LIMITS = Limits()
MAX_BYTES = LIMITS.max_payload_bytes
MAX_DEPTH = LIMITS.max_payload_depth


def _ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"gen-{next(counter)}"


def _outcome(call: Callable[[], Any]) -> Any:
    """What a call returns, or the (field, problem) of the InvalidArgument it raises."""
    try:
        return call()
    except InvalidArgument as e:
        return ("error", e.field, e.problem)


def nested(depth: int) -> str:
    """An object whose innermost level is `depth` (the object itself is level 1)."""
    return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


# ---- The payload ----

PAYLOADS = [
    # canonical, flat: the pattern's case
    "{}", '{"a":1}', '{"i":123,"s":"abc"}', '{"a":true,"b":false,"c":null,"d":-5,"e":0,"f":""}',
    '{"é":"値","z":"\U0001f600"}', '{"a":"\\u0000"}', '{"a":"\\n","b":"\\"\\\\"}', '{"a":"\x7f\u2028"}',
    "{" + ",".join(f'"k{i:02d}":{i}' for i in range(16)) + "}",
    "{" + ",".join(f'"k{i:02d}":{i}' for i in range(17)) + "}",
    '{"a":' + "9" * 1000 + "}", '{"a":' + "9" * 1001 + "}", '{"a":-' + "9" * 999 + "}",
    # whitespace, key order, escapes
    '{"i": 123, "s": "abc"}', ' {"a":1}', '{"a":1} ', '{"a":1}\n', "\t{}", '{ }', '{"b":1,"a":2}', '{"B":1,"a":2}',
    '{"b" :1 ,\t"a":\n2}', '\r\n{"a":1}\r\n', '{"a":1\x0b}', '{"a":1\u00a0}', '\u00a0{"a":1}',
    '{"a" : "x y", "b" : "z"}',
    '{"c":1,"b":2,"a":3}', '{"c": 1, "b": 2, "c": 3}', '{"a":1,"B":2,"b":3,"A":4}', '{"é":1,"e":2,"z":3}',
    "{" + ", ".join(f'"k{i:02d}": {i}' for i in reversed(range(16))) + "}",
    "{" + ", ".join(f'"k{i:02d}": {i}' for i in reversed(range(17))) + "}",
    "{" + ",".join(f'"k{i % 15:02d}":{i}' for i in range(16)) + "}",
    '{"a":"\\u00e9"}', '{"\\u0061":1}', '{"a":"\\/"}', '{"a":"\\u001f"}', '{"a":"\\b\\f\\r\\t"}',
    '{"a":"\\ud83d\\ude00"}', '{"a":"\\ud800"}', '{"a":"\\udc00x"}', '{"a":"\\u00E9"}',
    # numbers
    '{"a":1.0}', '{"a":1.5}', '{"a":1e3}', '{"a":1E3}', '{"a":1e-7}', '{"a":-0}', '{"a":-0.0}', '{"a":0.1}',
    '{"a":1.5e300}', '{"a":1e400}', '{"a":-1e400}', '{"a":01}', '{"a":+1}', '{"a":.5}', '{"a":1.}',
    '{"a":' + "1" * 5000 + "}", '{"a":NaN}', '{"a":Infinity}', '{"a":-Infinity}', '{"a":[NaN]}',
    '{"a":123456789012345678901234567890}', '{"a":[1.0,2e0,3]}',
    # duplicate keys
    '{"a":1,"a":1}', '{"a":1,"a":2}', '{"a":1,"b":2,"a":1}', '{"x":{"a":1,"a":1}}', '{"x":[{"a":1,"a":2}]}',
    '{"a":{"b":1},"a":{"b":1}}', '{"a": 1, "a": 1}',
    # nesting
    nested(1), nested(2), nested(MAX_DEPTH), nested(MAX_DEPTH + 1), nested(1000),
    '{"a":"' + "[{" * 40 + '"}', '{"a":"' + "[{" * 40 + '","b":[[[]]]}', '{"a":{"b":{"c":{}}}}',
    '{"b":[1,{"d":2,"c":3}],"a":"x"}', '{"k":[]}', '{"k":[{}]}',
    # not an object, or not JSON
    "[]", "[1]", "1", '"s"', "null", "true", "{", "}", "{}x", "{}{}", '{"a"}', "{'a': 1}", '{"a":1,}', "  ",
    '{"a":"\x01"}', '{"a":"tab\there"}', '{"a":1}]',
]


@pytest.mark.parametrize("text", PAYLOADS)
def test_canonical_payload_agrees_with_the_full_path(text):
    # Given: what the full path alone makes of it
    expected = _outcome(lambda: _checked_canonical_payload(text, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH,
                                                           field="f"))

    # When
    got = _outcome(lambda: canonical_payload(text, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, field="f"))
    fast = fast_canonical_payload(text, MAX_BYTES, MAX_DEPTH)

    # Then: the same text, or the same error; the shortcut declines rather than err
    assert got == expected
    assert fast is None or fast == expected


@pytest.mark.parametrize("max_depth", [0, 1, 2, 3])
@pytest.mark.parametrize("text", ["{}", '{"a":1}', '{"a":[]}', '{"a":[[]]}', '{"a": {}}', '{"a":"[[["}'])
def test_small_depth_limits_agree(text, max_depth):
    def full() -> Any:
        return _checked_canonical_payload(text, max_bytes=MAX_BYTES, max_depth=max_depth, field="f")
    assert (_outcome(lambda: canonical_payload(text, max_bytes=MAX_BYTES, max_depth=max_depth, field="f"))
            == _outcome(full))


@pytest.mark.parametrize("text, max_bytes", [
    ('{"a":"' + "x" * 20 + '"}', 28), ('{"a":"' + "x" * 20 + '"}', 27), ('{"a":"' + "x" * 20 + '"}', 26),
    ('{"a":"' + "é" * 10 + '"}', 28), ('{"a":"' + "é" * 10 + '"}', 27),     # 28 bytes, 18 characters
    ('{"a": "xx"}', 10), ('{"a": "xx"}', 11),                             # 11 bytes as sent, 10 canonical
    ('{"a":1e2,"b":1e2}', 17), ('{"a":1e2,"b":1e2}', 21), ('{"a":1e2,"b":1e2}', 20),  # 17 sent, 21 canonical
    ('{"a":"\\u00e9"}', 10), ('{"a":"\\u00e9"}', 13), ('{"a":"\\u00e9"}', 9),          # 14 sent, 10 canonical
])
def test_size_limits_before_and_after_canonicalisation_agree(text, max_bytes):
    def full() -> Any:
        return _checked_canonical_payload(text, max_bytes=max_bytes, max_depth=MAX_DEPTH, field="f")
    assert (_outcome(lambda: canonical_payload(text, max_bytes=max_bytes, max_depth=MAX_DEPTH, field="f"))
            == _outcome(full))


def _random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(10 if depth < 4 else 7)
    if kind == 0:
        return rng.randrange(-10**6, 10**6)
    if kind == 1:
        return rng.choice([0.5, 1.0, -2.25, 1e20, 1e-5, 3.0])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind in (3, 4, 5, 6):
        return "".join(rng.choice('ab"\\\n\té値\x01/{[ ') for _ in range(rng.randrange(6)))
    if kind in (7, 8):
        return {rng.choice("abcdefgé"): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _random_text(rng: random.Random) -> str:
    obj = {rng.choice("abcdefgé"): _random_value(rng, 1) for _ in range(rng.randrange(6))}
    text = json.dumps(obj, sort_keys=rng.random() < 0.5, ensure_ascii=rng.random() < 0.3,
                      separators=rng.choice([(",", ":"), (", ", ": "), (",", ": ")]),
                      indent=rng.choice([None, None, None, 1, "\t", "\r\n"]))
    mutation = rng.randrange(8)
    if mutation == 0 and len(text) > 2:   # a duplicate key, most of the time
        text = text[:-1] + ("," if len(obj) else "") + text[1:]
    elif mutation == 1:
        text = " " + text
    elif mutation == 2 and len(text) > 2:
        cut = rng.randrange(1, len(text))
        text = text[:cut] + text[cut + 1:]
    return text


def test_random_payloads_agree_with_the_full_path():
    rng = random.Random(20301)
    for _ in range(3000):
        text = _random_text(rng)
        max_depth = rng.choice([1, 2, 3, MAX_DEPTH])
        max_bytes = rng.choice([MAX_BYTES, max(1, len(text.encode()) - 1), len(text.encode())])

        full = functools.partial(_checked_canonical_payload, text, max_bytes=max_bytes, max_depth=max_depth, field="f")
        got = functools.partial(canonical_payload, text, max_bytes=max_bytes, max_depth=max_depth, field="f")
        assert _outcome(got) == _outcome(full), (text, max_bytes, max_depth)


# ---- A batch ----

def _policies() -> RetryPolicies:
    return RetryPolicies(
        server_default=RetryPolicy(initial_backoff_ms=500),
        by_type={("billing", "typed"): RetryPolicy(schedule_ms=(1000, 2000))},
        unique_by_type={("billing", "keyed"): UniqueRule("order:{order}", ttl_ms=60_000)},
    )


POLICY_LIMITS = Limits(retry_policies=_policies())


def _variety() -> list[pb.Task]:
    """Tasks of every shape the shortcut takes or declines, all of them valid."""
    base: dict[str, Any] = dict(namespace="billing", task_type="invoice.send", payload_json='{"n":1}')
    shapes: list[dict[str, Any]] = [
        {}, dict(payload_json=""), dict(payload_json='{"b": 2, "a": 1}'), dict(payload_json='{"a":"é"}'),
        dict(payload_json='{"a":[1,{"c":2,"b":1}]}'), dict(payload_json='{"x":' + "7" * 200 + "}"),
        dict(payload_json='{"s":"' + "y" * 300 + '"}'), dict(delay_ms=1), dict(delay_ms=127), dict(delay_ms=128),
        dict(delay_ms=90 * 24 * 3600 * 1000), dict(priority=pb.PRIORITY_LOW), dict(priority=pb.PRIORITY_NORMAL),
        dict(priority=pb.PRIORITY_HIGH), dict(task_id="own-1"), dict(task_id="x" * 64), dict(trace_id="t-1"),
        dict(unique_key="u-1"), dict(unique_key="u" * 128, trace_id="t" * 128), dict(payload_version=7),
        dict(max_retries=0), dict(max_retries=5), dict(timeout_ms=1), dict(timeout_ms=3_600_000),
        dict(retry_policy=pb.RetryPolicy()), dict(retry_policy=pb.RetryPolicy(multiplier=1.5)),
        dict(unique_key="u-2", unique_ttl_ms=1000), dict(schedule_time="2030-01-02T03:04:07.000Z"),
        dict(schedule_time="2001-01-01T00:00:00Z"), dict(retry_count=4, created_at="1999-01-01T00:00:00Z"),
        dict(cron_rule="billing/nightly", cron_fire_time="2030-01-02T00:00:00Z"),
        dict(task_type="typed"), dict(task_type="keyed", payload_json='{"order":42}'),
        dict(task_type="keyed", payload_json='{"order":43}', unique_key="mine"), dict(namespace="n" * 64),
        dict(task_type="T" * 128), dict(task_type="t" * 127), dict(namespace="other", task_type="OrderPaid:v2"),
        # sizes that come close to the typical task's: a payload's bytes beyond ASCII, with a priority or not
        dict(payload_json='{"a":"€"}'), dict(payload_json='{"a":"é"}', priority=pb.PRIORITY_HIGH),
        dict(payload_json='{"a":"€"}', priority=pb.PRIORITY_LOW), dict(payload_version=1),
        dict(payload_version=1, priority=pb.PRIORITY_LOW), dict(max_retries=0, priority=pb.PRIORITY_NORMAL),
        dict(payload_json='{"s":"' + "é" * 100 + '"}', delay_ms=20),
    ]
    return [pb.Task(**{**base, **shape}) for shape in shapes]


def _as_received(tasks: list[pb.Task], unknown: bytes = b"") -> list[pb.Task]:
    """The tasks as the API has them: parsed from a request's bytes (each with `unknown` appended)."""
    return [pb.Task.FromString(t.SerializeToString() + unknown) for t in tasks]


@pytest.mark.parametrize("limits", [LIMITS, POLICY_LIMITS, Limits(max_key_chars=3, max_payload_bytes=100)],
                         ids=["default", "policies", "small"])
@pytest.mark.parametrize("unknown", [b"", b"\xa8\x06\x01"], ids=["plain", "unknown-field"])
def test_a_batch_validates_each_task_as_validate_task_does(limits, unknown):
    # Given: every shape, as built and as received, and the ids both ways draw
    tasks = _variety()
    received = _as_received(tasks, unknown)
    for t in received:
        if t.task_id:   # an id of its own, other than the built task's
            t.task_id = "r" + t.task_id[1:]
    tasks += received
    usable = [t for t in tasks if isinstance(_outcome(functools.partial(
        validate_task, t, now=NOW, limits=limits, new_id=_ids())), ValidTask)]
    assert len(usable) > len(tasks) // 2
    ids_one, ids_other = _ids(), _ids()

    # When
    batch = validate_batch(usable, now=NOW, limits=limits, new_id=ids_one)
    one_by_one = [validate_task(t, now=NOW, limits=limits, field_prefix=f"tasks[{i}]", new_id=ids_other)
                  for i, t in enumerate(usable)]

    # Then: equal field by field, ids included (drawn in the same order)
    for got, expected in zip(batch, one_by_one):
        assert {f: getattr(got, f) for f in ValidTask.__slots__} == {f: getattr(expected, f) for f in
                                                                    ValidTask.__slots__}
    assert batch == one_by_one


def test_an_explicit_zero_is_not_taken_for_a_default():
    # Given: optional fields set to 0, which proto3 still sends (and max_retries=0 is valid)
    tasks = _as_received([pb.Task(namespace="a", task_type="b", max_retries=0), pb.Task(namespace="a", task_type="b")])

    # When
    valid = validate_batch(tasks, now=NOW, limits=LIMITS, new_id=_ids())

    # Then
    assert [v.max_retries for v in valid] == [0, LIMITS.default_max_retries]


BAD: list[dict[str, Any]] = [
    dict(namespace=""), dict(namespace="Bad"), dict(task_type=""), dict(task_type="a b"), dict(task_id="a b"),
    dict(payload_json="[]"), dict(payload_json='{"a":1,"a":2}'), dict(payload_json="{"), dict(payload_json='{"a":NaN}'),
    dict(payload_json=nested(MAX_DEPTH + 1)), dict(payload_json='{"a":"' + "x" * MAX_BYTES + '"}'),
    dict(delay_ms=90 * 24 * 3600 * 1000 + 1), dict(delay_ms=5, schedule_time="2030-01-03T00:00:00Z"),
    dict(schedule_time="tomorrow"), dict(priority=9), dict(max_retries=51), dict(timeout_ms=0),
    dict(retry_policy=pb.RetryPolicy(multiplier=0.5)), dict(unique_ttl_ms=0), dict(unique_ttl_ms=5),
    dict(unique_key="k" * 129), dict(trace_id="t" * 129), dict(task_type="keyed", payload_json='{"other":1}'),
    dict(namespace="", payload_json="[]"), dict(task_type="bad type", priority=9, delay_ms=1),
]


@pytest.mark.parametrize("bad", BAD, ids=[",".join(b) for b in BAD])
@pytest.mark.parametrize("received", [False, True], ids=["built", "received"])
def test_an_error_in_a_batch_is_validate_tasks_own(bad, received):
    # Given: two good tasks, then the bad one, then one more good one
    good = pb.Task(namespace="billing", task_type="invoice.send", payload_json='{"n":1}')
    tasks = [good, good, pb.Task(**{"namespace": "billing", "task_type": "invoice.send", **bad}), good]
    if received:
        tasks = _as_received(tasks)
    drawn: list[str] = []

    def recording() -> str:
        drawn.append(f"id-{len(drawn)}")
        return drawn[-1]

    # When
    with pytest.raises(InvalidArgument) as in_batch:
        validate_batch(tasks, now=NOW, limits=POLICY_LIMITS, new_id=recording)
    with pytest.raises(InvalidArgument) as alone:
        validate_task(tasks[2], now=NOW, limits=POLICY_LIMITS, field_prefix="tasks[2]", new_id=lambda: "probe")

    # Then: the same field and message; ids drawn as validate_task draws them (one per task
    # it began without an id of its own)
    assert (in_batch.value.field, in_batch.value.problem) == (alone.value.field, alone.value.problem)
    assert drawn == ["id-0", "id-1"] + ([] if tasks[2].task_id else ["id-2"])


def test_a_repeated_own_id_and_a_naive_now_are_refused_as_before():
    tasks = _as_received([pb.Task(namespace="a", task_type="b", task_id="x"), pb.Task(namespace="a", task_type="b"),
                          pb.Task(namespace="a", task_type="b", task_id="x")])
    with pytest.raises(InvalidArgument) as e:
        validate_batch(tasks, now=NOW, limits=LIMITS)
    assert (e.value.field, e.value.problem) == ("tasks[2].task_id", "'x' is also the task_id of tasks[0]")
    with pytest.raises(ValueError):
        validate_batch(tasks, now=dt.datetime(2030, 1, 1), limits=LIMITS)


def test_a_batch_with_the_default_ids_gets_uuid7s_in_order():
    # Given
    tasks = _as_received([pb.Task(namespace="a", task_type="b", task_id="own" if i == 3 else "") for i in range(1000)])

    # When
    valid = validate_batch(tasks, now=NOW, limits=LIMITS)

    # Then
    ids = [v.task_id for i, v in enumerate(valid) if i != 3]
    assert valid[3].task_id == "own"
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {uuid.UUID(s).version for s in ids} == {7}
    assert all(str(uuid.UUID(s)) == s for s in ids)


def test_typical_tasks_take_the_shortcut_and_read_no_more_than_they_need(monkeypatch):
    # Given: the shortcut of one batch, told to fail if it reads the fields it need not read
    typical = validation._TypicalTasks(validation._utc_ms(NOW), LIMITS)
    lean: list[dict[str, Any]] = [
        dict(), dict(delay_ms=20), dict(priority=pb.PRIORITY_NORMAL), dict(payload_json=""),
        dict(payload_json='{"i": 1, "s": "abc"}'), dict(payload_json='{"b":[1],"a":{"c":null}}')]
    other: list[dict[str, Any]] = [
        dict(task_id="own"), dict(trace_id="t"), dict(payload_version=2), dict(payload_json='{"a":"é"}')]

    def build(shape: dict[str, Any]) -> pb.Task:
        return pb.Task(**{"namespace": "bench", "task_type": "noop", "payload_json": '{"i":1,"s":"abc"}', **shape})

    # When / Then: all taken; the lean ones without reading the other fields
    for shape in other:
        assert typical.check(build(shape), _ids()) is not None, shape
    monkeypatch.setattr(validation._TypicalTasks, "_with_other_fields", lambda self, task, *_: pytest.fail(str(task)))
    for shape in lean:
        assert typical.check(build(shape), _ids()) is not None, shape
        assert typical.check(_as_received([build(shape)])[0], _ids()) is not None, shape


@pytest.mark.parametrize("text", ['{"i":123,"s":"abc"}', '{"i": 123, "s": "abc"}', '{"s":"abc","i":123}',
                                  '{"a":{"b":[1,2.5]}}', '{"a":"\u00e9"}', "{" + ",".join(
                                      f'"k{i:02d}":{i}' for i in range(40)) + "}"])
def test_valid_payloads_take_the_shortcut(text):
    assert fast_canonical_payload(text, MAX_BYTES, MAX_DEPTH) == _checked_canonical_payload(
        text, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, field="f")


# ---- Ids drawn in bulk ----

@pytest.mark.parametrize("n", [1, 2, 100, 2047, 5000])
def test_ids_drawn_in_bulk_are_those_of_as_many_calls_with_the_clock_still(n):
    # Given: two generators on the same clock and randomness
    def make() -> UuidV7Generator:
        return UuidV7Generator(clock_ms=lambda: 1_700_000_000_123, randbytes=random.Random(n).randbytes)
    one_by_one, bulk = make(), make()

    # When
    singles = [one_by_one.new() for _ in range(n)]
    many = bulk.new_many(n)

    # Then: the same milliseconds and counters (the random bits are drawn in another order)
    assert [s[:18] for s in many] == [s[:18] for s in singles] or n > 2048
    assert many == sorted(many) and len(set(many)) == n
    for s in many:
        u = uuid.UUID(s)
        assert str(u) == s and u.version == 7 and u.variant == uuid.RFC_4122
    assert uuid7_unix_ms(many[0]) == 1_700_000_000_123


def test_ids_in_bulk_and_one_by_one_interleave_in_order():
    gen = UuidV7Generator(clock_ms=lambda: 5_000, randbytes=random.Random(7).randbytes)
    ids = gen.new_many(3000) + [gen.new()] + gen.new_many(5) + [gen.new()]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert uuid7_unix_ms(ids[-1]) > 5_000   # 3,000+ ids overflow one millisecond's counter


def test_bulk_ids_have_random_tails():
    ints = [uuid.UUID(s).int & ((1 << 62) - 1) for s in new_task_ids(2000)]
    assert len(set(ints)) == len(ints)
    for bit in range(62):
        assert 800 < sum((i >> bit) & 1 for i in ints) < 1200
