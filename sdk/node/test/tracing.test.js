'use strict';
// OpenTelemetry, as in the Python and Go SDKs: a submit inside a span sends its
// traceparent as trace_id, and the executor runs a traced task's handler in a
// child span of it. The spans go to the SDK's in-memory exporter; this file runs
// in a process of its own (node --test), so the global provider is its own.
const test = require('node:test');
const assert = require('node:assert/strict');
const { context, trace, defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const sdk = require('../dist/index');
const { currentTraceparent, isTraceparent } = require('../dist/tracing');
const { execute, delivery, fakeDispatcher } = require('./helpers');

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(contextManager);
const tracer = trace.getTracer('test');
test.beforeEach(() => exporter.reset());
test.after(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});

/** The traceparent OpenTelemetry's own W3C propagator writes for `span`. */
function traceparentOf(span) {
  const carrier = {};
  new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  assert.ok(carrier.traceparent, 'the propagator wrote a traceparent');
  return carrier.traceparent;
}

const accepted = (req) => ({ task_id: req.task.task_id || 'srv', duplicate: false, state: 'TASK_STATE_ACCEPTED', due_at: '', slot: 1 });
const acceptedBatch = (req) => ({ results: req.tasks.map((t, i) => accepted({ task: { task_id: t.task_id || `b${i}` } })) });

async function oneNode() {
  const node = await fakeDispatcher('n0', { Submit: accepted, SubmitBatch: acceptedBatch });
  const client = new sdk.Client({ nodes: [node.address], rpcTimeoutMs: 5_000 });
  return { node, client, close: async () => { client.close(); await node.close(); } };
}

test('currentTraceparent writes what the W3C propagator writes, and only inside a valid span', () => {
  assert.equal(currentTraceparent(), '');
  const span = tracer.startSpan('request');
  try {
    const want = traceparentOf(span);
    assert.match(want, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(context.with(trace.setSpan(context.active(), span), currentTraceparent), want);
    assert.ok(isTraceparent(want));
  } finally {
    span.end();
  }
  assert.equal(currentTraceparent(), '', 'a span that is not active is not the caller\'s');
});

test('isTraceparent checks the shape only', () => {
  assert.equal(isTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), true);
  for (const v of ['req-42', '', `00-${'x'.repeat(52)}`, '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0']) {
    assert.equal(isTraceparent(v), false, v);
  }
});

test('a submit inside a span sends its traceparent; a trace id the caller set is kept', async () => {
  const { node, client, close } = await oneNode();
  try {
    const want = await tracer.startActiveSpan('request', async (span) => {
      try {
        await client.submit({ namespace: 'shop', taskType: 't' });
        await client.submitBatch([{ namespace: 'shop', taskType: 't', taskId: '1' },
          { namespace: 'shop', taskType: 't', taskId: '2', traceId: 'req-42' }]);
        await client.submit({ namespace: 'shop', taskType: 't', traceId: 'req-43' });
        return traceparentOf(span);
      } finally {
        span.end();
      }
    });
    const [single, batch, own] = node.calls.map((c) => c.request);
    assert.equal(single.task.trace_id, want);
    assert.deepEqual(batch.tasks.map((t) => t.trace_id), [want, 'req-42']);
    assert.equal(own.task.trace_id, 'req-43');
  } finally {
    await close();
  }
});

test('outside a span the trace id stays empty', async () => {
  const { node, client, close } = await oneNode();
  const elsewhere = tracer.startSpan('elsewhere'); // started, never made active: not the caller's
  try {
    await client.submit({ namespace: 'shop', taskType: 't' });
    await client.submitBatch([{ namespace: 'shop', taskType: 't', taskId: '1' }]);
    const [single, batch] = node.calls.map((c) => c.request);
    assert.equal(single.task.trace_id, '');
    assert.equal(batch.tasks[0].trace_id, '');
  } finally {
    elsewhere.end();
    await close();
  }
});

async function startedExecutor(handlers) {
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger });
  for (const [type, fn] of Object.entries(handlers)) ex.handle(type, fn);
  await ex.start();
  return ex;
}

function tracedDelivery(taskId, taskType, traceparent, attempt = 1) {
  const d = delivery(taskId, taskType, { attempt });
  d.task.trace_id = traceparent;
  return d;
}

test('the executor runs a traced task\'s handler in a child span of the submitter\'s', async () => {
  const seen = new Map(); // task id -> the span context active in its handler
  const ex = await startedExecutor({
    ok: async (ctx) => {
      await new Promise((r) => setImmediate(r)); // still in the span after an await
      seen.set(ctx.taskId, trace.getActiveSpan()?.spanContext());
      tracer.startSpan('db').end(); // the handler's own span, beneath the execute span
    },
    rejects: async () => { throw new Error('upstream down'); },
    throws: () => { throw new TypeError('bug'); },
  });
  try {
    const request = tracer.startSpan('request');
    request.end();
    const parent = request.spanContext();
    const traceparent = traceparentOf(request);
    const outcomes = await execute(ex.address, [tracedDelivery('1', 'ok', traceparent, 3),
      tracedDelivery('2', 'rejects', traceparent), tracedDelivery('3', 'throws', traceparent)]);
    assert.deepEqual(Object.fromEntries(outcomes.map((o) => [o.task_id, o.kind])), {
      1: 'OUTCOME_KIND_SUCCEEDED', 2: 'OUTCOME_KIND_RETRYABLE_FAILURE', 3: 'OUTCOME_KIND_RETRYABLE_FAILURE',
    });

    const spans = exporter.getFinishedSpans();
    const byTask = new Map(spans.filter((s) => s.name.startsWith('taskring.execute ')).map((s) => [s.attributes['taskring.task_id'], s]));
    assert.deepEqual([...byTask.keys()].sort(), ['1', '2', '3']);
    const ok = byTask.get('1');
    assert.equal(ok.name, 'taskring.execute shop/ok');
    assert.equal(ok.kind, SpanKind.CONSUMER);
    assert.equal(ok.spanContext().traceId, parent.traceId);
    assert.equal(ok.parentSpanContext?.spanId, parent.spanId);
    assert.equal(ok.parentSpanContext?.isRemote, true, 'the parent came from the task, not this process');
    assert.deepEqual(ok.attributes, {
      'taskring.task_id': '1', 'taskring.attempt': 3, 'taskring.namespace': 'shop', 'taskring.task_type': 'ok',
    });
    assert.equal(ok.status.code, SpanStatusCode.UNSET);
    assert.equal(seen.get('1')?.spanId, ok.spanContext().spanId, 'the handler runs with the execute span active');
    const db = spans.find((s) => s.name === 'db');
    assert.equal(db?.parentSpanContext?.spanId, ok.spanContext().spanId);

    for (const [id, message] of [['2', 'Error: upstream down'], ['3', 'TypeError: bug']]) {
      const s = byTask.get(id);
      assert.equal(s.parentSpanContext?.spanId, parent.spanId);
      assert.deepEqual(s.status, { code: SpanStatusCode.ERROR, message });
      assert.ok(s.events.some((e) => e.name === 'exception'), `task ${id}: the exception is recorded`);
    }
  } finally {
    await ex.stop(1_000);
  }
});

test('a task without a traceparent runs without a span', async () => {
  const seen = [];
  const ex = await startedExecutor({ ok: (ctx) => { seen.push([ctx.traceId, trace.getActiveSpan()]); } });
  try {
    const outcomes = await execute(ex.address, [delivery('1', 'ok'), tracedDelivery('2', 'ok', '')]);
    assert.deepEqual(outcomes.map((o) => o.kind), ['OUTCOME_KIND_SUCCEEDED', 'OUTCOME_KIND_SUCCEEDED']);
    assert.deepEqual(seen.sort(), [['', undefined], ['tr', undefined]]);
    assert.deepEqual(exporter.getFinishedSpans(), []);
  } finally {
    await ex.stop(1_000);
  }
});
