/**
 * OpenTelemetry, when the service uses it, as the Python (_tracing.py) and Go
 * (tracing.go) SDKs: a task submitted inside a traced request carries the W3C
 * `traceparent` of the current span in its `trace_id`, and the executor runs
 * its handler in a span whose parent is that one, so the request's trace goes
 * on through the task.
 *
 * Only `@opentelemetry/api` is used: spans go to the global TracerProvider,
 * OpenTelemetry's no-op one unless the service registered an SDK. A `traceId`
 * the caller sets is kept as given (one that is not a traceparent is a plain
 * correlation id, as before).
 *
 * The W3C TraceContext propagator lives in @opentelemetry/core, an SDK
 * package, not in the API; so the traceparent (version 00, the only one this
 * SDK writes or reads) is written and read here. The tests hold it to core's
 * propagator.
 */
import {
  context,
  isSpanContextValid,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { TaskContext } from './context';

/** The instrumentation scope of the executor's spans, as in the other SDKs. */
export const TRACER_NAME = 'taskring';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C traceparent of the active span ('' outside a valid span). */
export function currentTraceparent(): string {
  const sc = trace.getSpanContext(context.active());
  if (sc === undefined || !isSpanContextValid(sc)) return '';
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${sc.traceId}-${sc.spanId}-${flags}`;
}

/**
 * A W3C traceparent as currentTraceparent writes it, `00-<32 hex>-<16 hex>-<2 hex>`.
 * Only a length and prefix check, so an untraced task pays nothing; parsing checks the rest.
 */
export function isTraceparent(v: string): boolean {
  return v.length === 55 && v.startsWith('00-') && v[35] === '-' && v[52] === '-';
}

/**
 * `parent` with the remote span of a traceparent in it; `parent` itself when the
 * traceparent is malformed (the span is then a root, as the propagators do).
 */
function withTraceparent(parent: Context, traceparent: string): Context {
  const m = TRACEPARENT.exec(traceparent);
  if (m === null) return parent;
  const sc: SpanContext = {
    traceId: m[1] as string, spanId: m[2] as string,
    traceFlags: parseInt(m[3] as string, 16), isRemote: true,
  };
  return isSpanContextValid(sc) ? trace.setSpanContext(parent, sc) : parent;
}

/**
 * As OpenTelemetry's Python SDK does with a handler's exception: recorded, status
 * ERROR with `<name>: <message>` (the outcome's error says the same).
 */
function fail(span: Span, thrown: unknown): void {
  if (thrown instanceof Error) {
    span.recordException(thrown);
    span.setStatus({ code: SpanStatusCode.ERROR, message: `${thrown.name}: ${thrown.message}` });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'non-Error value thrown' });
  }
}

/**
 * `run()` (the handler's call), in a span `taskring.execute <namespace>/<task_type>`
 * (kind CONSUMER), a child of the task's traceparent, when it has one; exactly
 * as before otherwise. The span is active while the handler runs (spans it
 * starts are children, with a context manager registered) and ends when its
 * result settles, or when it throws.
 */
export function callTraced(ctx: TaskContext, run: () => unknown): unknown {
  if (!isTraceparent(ctx.traceId)) return run();
  const parent = withTraceparent(context.active(), ctx.traceId);
  return trace.getTracer(TRACER_NAME).startActiveSpan(`taskring.execute ${ctx.namespace}/${ctx.taskType}`, {
    kind: SpanKind.CONSUMER,
    attributes: {
      'taskring.task_id': ctx.taskId, 'taskring.attempt': ctx.attempt,
      'taskring.namespace': ctx.namespace, 'taskring.task_type': ctx.taskType,
    },
  }, parent, (span) => {
    let result: unknown;
    try {
      result = run();
    } catch (e) {
      fail(span, e);
      span.end();
      throw e;
    }
    if (!isThenable(result)) {
      span.end();
      return result;
    }
    return Promise.resolve(result).then(
      (value) => { span.end(); return value; },
      (e: unknown) => { fail(span, e); span.end(); throw e; },
    );
  });
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
