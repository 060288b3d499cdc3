"""OpenTelemetry, when the service uses it: a task submitted inside a traced request carries
the W3C `traceparent` of the current span in its `trace_id`, and the executor runs its handler
in a span whose parent is that one, so the request's trace goes on through the task.

Optional: without the `opentelemetry-api` package nothing here does anything, and with it but
no SDK configured the spans are OpenTelemetry's no-op ones. A `trace_id` the caller sets is
kept as given (one that is not a traceparent is a plain correlation id, as before).
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the service does not use OpenTelemetry
    otel_trace = None  # type: ignore[assignment]

_PROPAGATOR = TraceContextTextMapPropagator() if otel_trace is not None else None
TRACER_NAME = "taskring"


def current_traceparent() -> str:
    """The W3C traceparent of the current span ("" without OpenTelemetry or outside a span)."""
    if _PROPAGATOR is None:
        return ""
    span_context = otel_trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return ""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


def is_traceparent(value: str) -> bool:
    """A W3C traceparent as this module writes it: `00-<32 hex>-<16 hex>-<2 hex>`."""
    return len(value) == 55 and value.startswith("00-") and value[35] == "-" and value[52] == "-"


def traced(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The handler run in a span (`taskring.execute <namespace>/<task_type>`) whose parent is the
    task's traceparent, when it has one; the handler itself otherwise. Without OpenTelemetry:
    `fn` unchanged, at no cost."""
    if otel_trace is None:
        return fn
    tracer = otel_trace.get_tracer(TRACER_NAME)

    def span_of(ctx: Any):
        parent = _PROPAGATOR.extract({"traceparent": ctx.trace_id}) if _PROPAGATOR is not None else None
        return tracer.start_as_current_span(
            f"taskring.execute {ctx.namespace}/{ctx.task_type}", context=parent,
            kind=otel_trace.SpanKind.CONSUMER,
            attributes={"taskring.task_id": ctx.task_id, "taskring.attempt": ctx.attempt,
                        "taskring.namespace": ctx.namespace, "taskring.task_type": ctx.task_type})

    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
    if is_async:
        @functools.wraps(fn)
        async def run_async(ctx: Any) -> Any:
            if not is_traceparent(ctx.trace_id):
                return await fn(ctx)
            with span_of(ctx):
                return await fn(ctx)
        return run_async

    @functools.wraps(fn)
    def run(ctx: Any) -> Any:
        if not is_traceparent(ctx.trace_id):
            return fn(ctx)
        with span_of(ctx):
            return fn(ctx)
    return run


__all__ = ["current_traceparent", "is_traceparent", "traced"]
