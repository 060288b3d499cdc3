package taskring

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// OpenTelemetry, when the service uses it, as sdk/python/taskring/_tracing.py:
// a task submitted inside a traced request carries the W3C traceparent of the
// current span in its trace_id, and the executor runs its handler in a span
// whose parent is that one, so the request's trace goes on through the task.
//
// Only the OpenTelemetry API is used: spans go to the global TracerProvider,
// OpenTelemetry's no-op one unless the service configured an SDK. A TraceID the
// caller sets is kept as given (one that is not a traceparent is a plain
// correlation id, as before).

// tracerName is the instrumentation scope of the executor's spans.
const tracerName = "taskring"

var traceContext = propagation.TraceContext{}

// currentTraceparent is the W3C traceparent of the span in ctx ("" outside a valid span).
func currentTraceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// isTraceparent: a W3C traceparent as currentTraceparent writes it,
// `00-<32 hex>-<16 hex>-<2 hex>`. Only a length and prefix check, so an
// untraced task pays nothing; the propagator checks the rest.
func isTraceparent(v string) bool {
	return len(v) == 55 && v[:3] == "00-" && v[35] == '-' && v[52] == '-'
}

// startExecuteSpan starts the span a traced task's handler runs in,
// `taskring.execute <namespace>/<task_type>` (kind Consumer), as a child of the
// task's traceparent; the caller ends it when the handler returns.
func startExecuteSpan(ctx context.Context, t *Task) (context.Context, trace.Span) {
	ctx = traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": t.TraceID})
	return otel.Tracer(tracerName).Start(ctx, "taskring.execute "+t.Namespace+"/"+t.TaskType,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("taskring.task_id", t.TaskID),
			attribute.Int64("taskring.attempt", int64(t.Attempt)),
			attribute.String("taskring.namespace", t.Namespace),
			attribute.String("taskring.task_type", t.TaskType),
		))
}

// callHandler runs h, in an execute span when the task carries a traceparent,
// and exactly as before otherwise. A returned error is recorded on the span
// (status Error), as OpenTelemetry's Python SDK does with a handler's exception.
func callHandler(ctx context.Context, h HandlerFunc, t *Task) (err error) {
	if !isTraceparent(t.TraceID) {
		return h(ctx, t)
	}
	ctx, span := startExecuteSpan(ctx, t)
	defer func() { // also on a panic, which the runner then recovers
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	return h(ctx, t)
}
