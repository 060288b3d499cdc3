"""The SDK's OpenTelemetry glue (taskring/_tracing.py): a task built inside a span carries its
traceparent, one built outside carries none, a caller's trace_id is kept, and a handler is run
in a span only for a task that carries a traceparent."""
from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from taskring import TaskSpec
from taskring._envelope import spec_to_pb
from taskring._tracing import current_traceparent, is_traceparent, traced


class Ctx:
    def __init__(self, trace_id: str):
        self.trace_id, self.namespace, self.task_type, self.task_id, self.attempt = trace_id, "ns", "t", "id", 1


def test_a_task_carries_the_traceparent_of_the_span_it_is_built_in():
    tracer = TracerProvider().get_tracer("test")
    assert current_traceparent() == "" and spec_to_pb(TaskSpec("ns", "t")).trace_id == ""
    with tracer.start_as_current_span("request") as span:
        built = spec_to_pb(TaskSpec("ns", "t"))
        kept = spec_to_pb(TaskSpec("ns", "t", trace_id="req-42"))
    context = span.get_span_context()
    assert built.trace_id.startswith(f"00-{context.trace_id:032x}-{context.span_id:016x}-")
    assert is_traceparent(built.trace_id) and kept.trace_id == "req-42"
    assert not is_traceparent("req-42") and not is_traceparent("00-" + "x" * 52)


def test_a_handler_runs_in_a_child_span_only_for_a_traced_task():
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    seen: list[trace.SpanContext] = []
    handler = traced(lambda ctx: seen.append(trace.get_current_span().get_span_context()))
    with tracer.start_as_current_span("request") as span:
        traceparent = current_traceparent()
    handler(Ctx(traceparent))
    handler(Ctx("req-42"))
    assert seen[0].trace_id == span.get_span_context().trace_id
    assert not seen[1].is_valid
