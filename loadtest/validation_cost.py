"""CPU per task of checking a submitted batch, and of serialising the envelopes it stores.

A benchmark, not a test, and it needs no servers. What the API does per SubmitBatch
before anything is written (dispatcher/api/service.py): `validate_batch` over the request's
tasks, then one envelope per task for the row (`to_pb().SerializeToString()`). Batches of 1,000 typical
tasks: namespace "bench", task_type "noop", a small JSON object as the payload, half of
them with a delay of 1-50 ms, everything else left to the defaults, no task_id (so one
is generated). The request is parsed from its bytes first, as the API receives it.

CPU is time.process_time around each batch; the figure is the median over the runs, in
µs per task. Two payload texts: "sdk", compact with its keys in order, as the SDKs'
encode_payload writes `{"i": n, "s": "abc"}` (already canonical), and "spaced", what
json.dumps writes by default (the server re-serialises it).

    .venv/bin/python -m loadtest.validation_cost             # 9 runs of each, ~2 s
    .venv/bin/python -m loadtest.validation_cost --runs 21 --payload sdk

To measure another version of the dispatcher (e.g. the last commit's), put a copy of
it first on the path: `git archive HEAD dispatcher | tar -x -C /tmp/before` and
`PYTHONPATH=/tmp/before .venv/bin/python -m loadtest.validation_cost`.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence

from dispatcher.api.validation import Limits, ValidTask, validate_batch
from dispatcher.base.clock import ms_to_aware
from taskring.wire import pb

PAYLOADS: dict[str, Callable[[int], str]] = {
    "sdk": lambda i: json.dumps({"i": i, "s": "abc"}, separators=(",", ":"), ensure_ascii=False),
    "spaced": lambda i: json.dumps({"i": i, "s": "abc"}),
}
"""Payload text of task i, by name."""

BATCHES = 5
"""Distinct batches, taken in turn: the same batch every run would flatter any cache."""


def typical_batch(size: int, seed: int, payload: Callable[[int], str]) -> Sequence[pb.Task]:
    """`size` typical tasks, as the API has them: parsed from a SubmitBatchRequest's bytes."""
    tasks = [pb.Task(namespace="bench", task_type="noop", payload_json=payload(seed * size + i),
                     delay_ms=1 + i % 50 if i % 2 else 0) for i in range(size)]
    raw = pb.SubmitBatchRequest(tasks=tasks).SerializeToString()
    return pb.SubmitBatchRequest.FromString(raw).tasks


def _to_pb_bytes(valid: Sequence[ValidTask]) -> list[bytes]:
    return [v.to_pb().SerializeToString() for v in valid]


def measure(payload: str, runs: int, size: int) -> dict[str, float]:
    """Median CPU µs per task of validate_batch and of each envelope serialisation."""
    limits = Limits(max_batch=max(size, Limits().max_batch))
    batches = [typical_batch(size, seed, PAYLOADS[payload]) for seed in range(BATCHES)]
    serialisers: dict[str, Callable[[Sequence[ValidTask]], list[bytes]]] = {
        "to_pb().SerializeToString()": _to_pb_bytes}
    samples: dict[str, list[float]] = {name: [] for name in ("validate_batch", *serialisers)}
    for run in range(runs):
        tasks = batches[run % BATCHES]
        now = ms_to_aware(int(time.time() * 1000))
        start = time.process_time()
        valid = validate_batch(tasks, now=now, limits=limits)
        samples["validate_batch"].append(time.process_time() - start)
        envelopes = None
        for name, serialise in serialisers.items():
            start = time.process_time()
            made = serialise(valid)
            samples[name].append(time.process_time() - start)
            if envelopes is not None and made != envelopes:
                raise AssertionError(f"{name} gives other bytes than {next(iter(serialisers))}")
            envelopes = made
    return {name: statistics.median(values) / size * 1e6 for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--runs", type=int, default=9, help="batches measured per payload (median)")
    p.add_argument("--batch", type=int, default=1000, help="tasks per batch")
    p.add_argument("--payload", choices=[*PAYLOADS, "both"], default="both")
    args = p.parse_args(argv)
    for payload in PAYLOADS if args.payload == "both" else [args.payload]:
        figures = measure(payload, args.runs, args.batch)
        print(f"payload {payload} ({PAYLOADS[payload](123)}), batches of {args.batch}, "
              f"median of {args.runs} runs, CPU µs per task:")
        for name, us in figures.items():
            print(f"  {name:30s} {us:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
