package io.taskring.client;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import java.util.HashMap;
import java.util.Map;

/**
 * OpenTelemetry on the submitting side, as the Python ({@code _tracing.py}) and Go
 * ({@code tracing.go}) SDKs: a task submitted inside a span carries that span's W3C
 * {@code traceparent} in its {@code trace_id}, and the executor continues the trace around
 * its handler. Only the OpenTelemetry API is used; without an SDK there is never a valid span,
 * so nothing is added.
 */
final class CurrentTrace {
    private CurrentTrace() {}

    /** The W3C traceparent of the current span ("" outside a valid span). */
    static String traceparent() {
        Context current = Context.current();
        if (!Span.fromContext(current).getSpanContext().isValid()) {
            return ""; // the common case without tracing: no map, no propagator
        }
        Map<String, String> carrier = new HashMap<>(2);
        W3CTraceContextPropagator.getInstance().inject(current, carrier, Map::put);
        return carrier.getOrDefault("traceparent", "");
    }
}
