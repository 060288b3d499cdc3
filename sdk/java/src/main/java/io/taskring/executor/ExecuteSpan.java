package io.taskring.executor;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;

/**
 * OpenTelemetry on the executor's side, as the Python ({@code _tracing.py}) and Go
 * ({@code tracing.go}) SDKs: a task whose {@code trace_id} is a W3C traceparent (its
 * submitter was inside a span) has its handler run in a span
 * {@code taskring.execute <namespace>/<task_type>} (kind CONSUMER) whose parent is that one,
 * so one trace runs from the request through the handler. Any other task runs as before.
 *
 * <p>Only the OpenTelemetry API is used: spans go to {@link GlobalOpenTelemetry}, a no-op
 * unless the application installed an SDK. It is looked up per traced task, never before
 * one arrives, so the SDK never fixes the global to the no-op before the application sets it.
 */
final class ExecuteSpan {
    /** The instrumentation scope of the spans, as in the other SDKs. */
    static final String TRACER_NAME = "taskring";

    private ExecuteSpan() {}

    /**
     * A W3C traceparent as the SDKs write it, {@code 00-<32 hex>-<16 hex>-<2 hex>}. Only a
     * length and prefix check, so an untraced task pays nothing; the propagator checks the rest.
     */
    static boolean isTraceparent(String v) {
        return v != null && v.length() == 55 && v.startsWith("00-") && v.charAt(35) == '-' && v.charAt(52) == '-';
    }

    /** A sync handler, in a span when the task carries a traceparent; ended when it returns or throws. */
    static void run(TaskHandler handler, TaskContext ctx) throws Exception {
        if (!isTraceparent(ctx.traceId())) {
            handler.handle(ctx);
            return;
        }
        Span span = start(ctx);
        try (Scope ignored = span.makeCurrent()) {
            handler.handle(ctx);
        } catch (Throwable t) { // an Error too: the outcome counts it as a failure, so does the span
            fail(span, t);
            throw t;
        } finally {
            span.end();
        }
    }

    /**
     * An async handler, in a span when the task carries a traceparent: current while the handler
     * builds its future (spans it starts there are children), ended when the future completes.
     */
    static CompletableFuture<Void> run(AsyncTaskHandler handler, TaskContext ctx) throws Exception {
        if (!isTraceparent(ctx.traceId())) {
            return handler.handle(ctx);
        }
        Span span = start(ctx);
        CompletableFuture<Void> f;
        try (Scope ignored = span.makeCurrent()) {
            f = handler.handle(ctx);
        } catch (Throwable t) {
            fail(span, t);
            span.end();
            throw t;
        }
        if (f == null) { // the runner reports this as the handler's failure
            span.setStatus(StatusCode.ERROR, "the async handler returned null instead of a future");
            span.end();
            return null;
        }
        // Observe without chaining: the runner keeps `f` itself, to cancel it at the deadline.
        f.whenComplete((v, t) -> {
            if (t != null) {
                fail(span, t);
            }
            span.end();
        });
        return f;
    }

    private static Span start(TaskContext ctx) {
        Context parent = W3CTraceContextPropagator.getInstance()
                .extract(Context.current(), ctx.traceId(), TRACEPARENT);
        return GlobalOpenTelemetry.getTracer(TRACER_NAME)
                .spanBuilder("taskring.execute " + ctx.namespace() + "/" + ctx.taskType())
                .setParent(parent)
                .setSpanKind(SpanKind.CONSUMER)
                .setAllAttributes(Attributes.builder()
                        .put("taskring.task_id", ctx.taskId())
                        .put("taskring.attempt", ctx.attempt())
                        .put("taskring.namespace", ctx.namespace())
                        .put("taskring.task_type", ctx.taskType())
                        .build())
                .startSpan();
    }

    /** As OpenTelemetry's Python SDK does with a handler's exception: recorded, status ERROR. */
    private static void fail(Span span, Throwable t) {
        Throwable e = Outcomes.unwrap(t);
        span.recordException(e);
        span.setStatus(StatusCode.ERROR, Outcomes.describe(e));
    }

    /** The carrier is the traceparent itself: the propagator asks for nothing else. */
    private static final TextMapGetter<String> TRACEPARENT = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(String carrier) {
            return Collections.singletonList("traceparent");
        }

        @Override
        public String get(String carrier, String key) {
            return "traceparent".equals(key) ? carrier : null;
        }
    };
}
