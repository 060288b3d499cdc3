"""OpenTelemetry through a task, on a real node: a task submitted inside a traced request
carries the request's W3C traceparent, and the Python executor runs its handler in a span whose
parent is the request's span (one trace from the request through the handler). A task submitted
outside a span carries none and its handler runs in no span; a trace_id the caller gives is kept.
The node, with TASKRING_TRACES=console, writes `taskring.accept` and `taskring.dispatch` spans of
the traced task, children of the request's span. Spans are caught by the OpenTelemetry SDK's
in-memory exporter (the SDK's) and read from the node's console exporter (the node's)."""
from __future__ import annotations

import json
import threading

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Executor

pytestmark = pytest.mark.integration

NS, TYPE = "tracing", "ship"
_EXPORTER = InMemorySpanExporter()


def _provider() -> TracerProvider:
    """The process's one tracer provider (OpenTelemetry allows setting it once)."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    return provider


def test_a_task_continues_the_trace_it_was_submitted_in(taskring_env):
    provider = _provider()
    seen: dict[str, trace.SpanContext] = {}
    lock = threading.Lock()

    def ship(ctx) -> None:
        with lock:
            seen[ctx.task_id] = trace.get_current_span().get_span_context()

    node = NodeProcess(taskring_env, "tracing-1", single=True, TASKRING_TRACES="console").start()
    executor = Executor(NS, zk_hosts=taskring_env.zk_hosts)
    executor.add_handler(TYPE, ship)
    executor.start()
    try:
        node.wait_ready()
        with Client(node.target) as client:
            with provider.get_tracer("test").start_as_current_span("checkout") as request:
                client.submit(NS, TYPE, {"order": 1}, task_id="traced-1")
            client.submit(NS, TYPE, {"order": 2}, task_id="untraced-1")
            client.submit(NS, TYPE, {"order": 3}, task_id="given-1", trace_id="req-42")
            wait_until(lambda: len(seen) == 3, 30, "the three handlers to run")
            wanted = request.get_span_context()
            assert client.get("traced-1").trace_id == (
                f"00-{wanted.trace_id:032x}-{wanted.span_id:016x}-{int(wanted.trace_flags):02x}")
            assert client.get("untraced-1").trace_id == "" and client.get("given-1").trace_id == "req-42"
        assert seen["traced-1"].trace_id == wanted.trace_id, "the handler runs in the request's trace"
        assert not seen["untraced-1"].is_valid and not seen["given-1"].is_valid
        [execute] = [s for s in _EXPORTER.get_finished_spans() if s.name == f"taskring.execute {NS}/{TYPE}"]
        assert execute.parent is not None and execute.parent.span_id == wanted.span_id
        assert execute.context.span_id == seen["traced-1"].span_id
        attributes = dict(execute.attributes or {})
        assert attributes["taskring.task_id"] == "traced-1" and attributes["taskring.attempt"] == 1
        node.terminate()   # the node flushes its spans as it stops
        node_spans = _console_spans(node.log_path.read_text(errors="replace"))
        accept = [sp for sp in node_spans if sp["name"] == "taskring.accept"]
        dispatch = [sp for sp in node_spans if sp["name"] == "taskring.dispatch"]
        assert [sp["attributes"]["taskring.task_id"] for sp in accept] == ["traced-1"], node_spans
        assert [sp["attributes"]["taskring.task_id"] for sp in dispatch] == ["traced-1"], node_spans
        for sp in (*accept, *dispatch):
            assert sp["context"]["trace_id"] == f"0x{wanted.trace_id:032x}"
            assert sp["parent_id"] == f"0x{wanted.span_id:016x}"
        assert dispatch[0]["attributes"]["taskring.outcome"] == "OUTCOME_KIND_SUCCEEDED"
    finally:
        executor.stop()
        node.stop()


def _console_spans(log: str) -> list[dict]:
    """The spans OpenTelemetry's ConsoleSpanExporter printed (indented JSON objects) in a log."""
    spans, depth, start = [], 0, None
    for i, ch in enumerate(log):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                try:
                    found = json.loads(log[start:i + 1])
                except ValueError:
                    continue
                if isinstance(found, dict) and "context" in found and "name" in found:
                    spans.append(found)
    return spans
