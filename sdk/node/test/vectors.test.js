'use strict';
// The shared vectors of sdk/vectors (the Python SDK is the reference):
// envelope encoding to the wire Task, RFC 3339 instants, GetTaskResponse
// decoding, client-side validation and retry delays.
const test = require('node:test');
const assert = require('node:assert/strict');
const { loadWire } = require('../dist/wire/load');
const { specToWire, taskInfoFromWire } = require('../dist/envelope');
const { parseInstant } = require('../dist/instant');
const { retryDelayMs, backoffCeilingMs } = require('../dist/retry');
const { ValidationError } = require('../dist/errors');
const { loadVector, type, toProto3Json, encodeProto3Json } = require('./helpers');

const wire = loadWire();
const envelope = loadVector('envelope.json');
const validation = loadVector('validation.json');
const retry = loadVector('retry.json');

/** The SDK-neutral input of the vectors -> this SDK's TaskSpec. */
function toSpec(input) {
  const names = {
    namespace: 'namespace', task_type: 'taskType', payload: 'payload', payload_version: 'payloadVersion',
    delay_ms: 'delayMs', schedule_time: 'scheduleTime', timeout_ms: 'timeoutMs', max_retries: 'maxRetries',
    priority: 'priority', task_id: 'taskId', trace_id: 'traceId', unique_key: 'uniqueKey',
  };
  const spec = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === 'retry_policy') {
      spec.retryPolicy = {};
      if ('initial_backoff_ms' in value) spec.retryPolicy.initialBackoffMs = value.initial_backoff_ms;
      if ('max_backoff_ms' in value) spec.retryPolicy.maxBackoffMs = value.max_backoff_ms;
      if ('multiplier' in value) spec.retryPolicy.multiplier = value.multiplier;
      if ('schedule_ms' in value) spec.retryPolicy.scheduleMs = value.schedule_ms;
    } else {
      assert.ok(names[key], `vector input key ${key} is not known to this test`);
      spec[names[key]] = value;
    }
  }
  return spec;
}

/** The Task as it leaves this SDK: serialized by the real request serializer, read back as proto3 JSON. */
function wireJson(spec) {
  const bytes = wire.TaskService.service.Submit.requestSerialize({ task: specToWire(spec) });
  const msg = type('SubmitRequest').decode(bytes);
  return toProto3Json(type('Task'), msg.task);
}

/** Compact: no whitespace outside strings. */
function compact(text) {
  return !/\s/.test(text.replace(/"(?:[^"\\]|\\.)*"/g, '""'));
}

test('envelope: every case encodes to the expected wire Task', async (t) => {
  for (const c of envelope.cases) {
    await t.test(c.name, () => {
      const got = wireJson(toSpec(c.input));
      const expected = { ...c.wire };
      const expectedPayload = expected.payload_json_parsed;
      delete expected.payload_json_parsed;
      expected.payloadJson = '(payload)';
      assert.deepEqual(Object.keys(got).sort(), Object.keys(expected).sort());
      for (const [key, value] of Object.entries(expected)) {
        if (key === 'payloadJson' || key === 'scheduleTime') continue;
        if (typeof value === 'number') assert.equal(Number(got[key]), value, key);
        else assert.deepEqual(got[key], value, key);
      }
      assert.deepEqual(JSON.parse(got.payloadJson), expectedPayload);
      assert.ok(compact(got.payloadJson), `payloadJson is not compact: ${got.payloadJson}`);
      if ('scheduleTime' in expected) {
        assert.match(got.scheduleTime, /(Z|[+-]\d{2}:\d{2})$/);
        assert.equal(parseInstant(got.scheduleTime), c.schedule_time_epoch_ms);
        // The input keeps its offset in this SDK, so the text matches Python's exactly.
        assert.equal(got.scheduleTime, expected.scheduleTime);
      }
    });
  }
});

test('envelope: a Date schedule time is written in UTC like Python writes an aware UTC datetime', () => {
  const got = wireJson({ namespace: 'billing', taskType: 'invoice.send', scheduleTime: new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 123)) });
  assert.equal(got.scheduleTime, '2030-01-02T03:04:05.123000+00:00');
  const whole = wireJson({ namespace: 'billing', taskType: 'invoice.send', scheduleTime: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)) });
  assert.equal(whole.scheduleTime, '2030-01-02T03:04:05+00:00');
});

test('instants: RFC 3339 text -> epoch milliseconds, floored', async (t) => {
  for (const c of envelope.instants) {
    await t.test(c.name, () => assert.equal(parseInstant(c.text), c.epoch_ms));
  }
});

test('decode: a GetTaskResponse off the wire is exposed as expected', async (t) => {
  const ms = (d) => (d === null ? null : d.getTime());
  for (const c of envelope.decode) {
    await t.test(c.name, () => {
      const bytes = encodeProto3Json('GetTaskResponse', c.response);
      const info = taskInfoFromWire(wire.TaskService.service.GetTask.responseDeserialize(bytes));
      const got = {
        task_id: info.taskId, namespace: info.namespace, task_type: info.taskType, state: info.state,
        attempts: info.attempts, due_at_epoch_ms: ms(info.dueAt), slot: info.slot, payload: info.payload,
        payload_version: info.payloadVersion, priority: info.priority, last_error: info.lastError,
        last_stack_trace: info.lastStackTrace, created_at_epoch_ms: ms(info.createdAt),
        schedule_time_epoch_ms: ms(info.scheduleTime), timeout_ms: info.timeoutMs, max_retries: info.maxRetries,
        unique_key: info.uniqueKey, trace_id: info.traceId,
        history: info.history.map((e) => ({ state: e.state, at_epoch_ms: ms(e.at), node: e.node, attempt: e.attempt, detail: e.detail })),
      };
      assert.deepEqual(got, c.expect);
    });
  }
});

test('validation: client-side cases are refused before sending, naming the field', async (t) => {
  const camel = (s) => s.replace(/_([a-z0-9])/g, (_, ch) => ch.toUpperCase());
  const cases = validation.cases.filter((c) => c.checked_by === 'client');
  assert.ok(cases.length > 0);
  for (const c of cases) {
    await t.test(c.name, () => {
      const spec = toSpec(c.input);
      if (c.ok) {
        wireJson(spec); // constructs and encodes
        return;
      }
      assert.throws(() => specToWire(spec), (err) => {
        assert.ok(err instanceof ValidationError, `expected a ValidationError, got ${err}`);
        // This SDK spells fields as its own API does (delayMs); the vectors allow that.
        const accepted = new Set([c.error_field, c.error_field.replace(/_ms$/, ''), camel(c.error_field),
          camel(c.error_field.replace(/_ms$/, ''))]);
        assert.ok(accepted.has(err.field), `field ${err.field}, expected ${c.error_field}`);
        return true;
      });
    });
  }
});

test('retry: delays and ceilings exactly as the dispatcher computes them', async (t) => {
  for (const c of retry.cases) {
    await t.test(c.name, () => {
      const p = c.policy;
      const policy = {
        initialBackoffMs: p.initial_backoff_ms, maxBackoffMs: p.max_backoff_ms, multiplier: p.multiplier,
        scheduleMs: p.schedule_ms,
      };
      assert.equal(backoffCeilingMs(policy, c.retry), c.ceiling_ms);
      assert.equal(retryDelayMs(policy, c.retry, c.jitter), c.delay_ms);
    });
  }
});

test('retry: a tiered policy draws no jitter', () => {
  const original = Math.random;
  Math.random = () => { throw new Error('drawn'); };
  try {
    assert.equal(retryDelayMs({ initialBackoffMs: 1, maxBackoffMs: 1, multiplier: 1, scheduleMs: [5] }, 3), 5);
  } finally {
    Math.random = original;
  }
});

test('envelope: an exponential policy sends all three fields, Python defaults for those left out', () => {
  const got = wireJson({ namespace: 'billing', taskType: 'invoice.send', retryPolicy: { maxBackoffMs: 60_000 } });
  assert.deepEqual(got.retryPolicy, { initialBackoffMs: '1000', maxBackoffMs: '60000', multiplier: 2 });
  assert.throws(() => specToWire({ namespace: 'b', taskType: 't', retryPolicy: { maxBackoffMs: 500 } }),
    (e) => e instanceof ValidationError && e.field === 'retryPolicy.maxBackoffMs');
});
