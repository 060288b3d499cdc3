"""OpenTelemetry spans of traced tasks, as this node handles them: a task whose trace_id is a W3C
traceparent (the SDKs put the submitting request's there) gets `taskring.accept` (from the
Submit's start until its rows are written and its message produced) and `taskring.dispatch`
(one per attempt: from dispatch until its outcome came back), both children of the request's
span, so a trace shows the task between the request and the executor's handler span.

Off unless TASKRING_TRACES names an exporter: `console` (JSON on stdout) or `otlp` (the OTLP
HTTP exporter, configured by the standard OTEL_EXPORTER_OTLP_* variables; needs the
`opentelemetry-exporter-otlp-proto-http` package). Off, nothing here is imported and the hot
path pays one attribute check per batch.
"""
from __future__ import annotations

from collections.abc import Mapping

EXPORTERS = ("", "console", "otlp")


def is_traceparent(value: str) -> bool:
    """`00-<32 hex>-<16 hex>-<2 hex>`, the shape the SDKs write (cheap: no parsing)."""
    return len(value) == 55 and value.startswith("00-")


class NodeTracing:
    def __init__(self, exporter: str, node_id: str):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        chosen: SpanExporter
        if exporter == "console":
            chosen = ConsoleSpanExporter()
        elif exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            chosen = OTLPSpanExporter()
        else:
            raise ValueError(f"TASKRING_TRACES: {exporter!r} is not one of console, otlp")
        # A provider of the node's own (not the process-wide one): the node's spans go where
        # TASKRING_TRACES says, whatever else the process configures.
        self._provider = TracerProvider(resource=Resource.create({"service.name": "taskring-node",
                                                                  "service.instance.id": node_id}))
        self._provider.add_span_processor(BatchSpanProcessor(chosen))
        self._tracer = self._provider.get_tracer("taskring.node")
        self._propagator = TraceContextTextMapPropagator()

    def span(self, name: str, traceparent: str, start_ms: int, end_ms: int,
             attributes: Mapping[str, str | int]) -> None:
        """A finished span, child of `traceparent`'s span."""
        parent = self._propagator.extract({"traceparent": traceparent})
        span = self._tracer.start_span(name, context=parent, start_time=start_ms * 1_000_000,
                                       attributes=dict(attributes))
        span.end(end_time=max(start_ms, end_ms) * 1_000_000)

    def stop(self) -> None:
        """Export what is buffered, then stop."""
        self._provider.shutdown()


def tracing_of(exporter: str, node_id: str) -> NodeTracing | None:
    return NodeTracing(exporter, node_id) if exporter else None
