'use strict';
// Heartbeats, against a fake dispatcher that opens the Work stream to a real
// Executor over loopback, as a taskring node does: the SDK's own first heartbeat,
// ctx.heartbeat(details) reaching the stream, refused details, the answers
// (CANCEL and LOST stop the attempt, INVALID does not), the previous attempt's
// details, and nothing extra for deliveries without a heartbeat timeout.
const test = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { loadWire } = require('../dist/wire/load');
const { execute, delivery, until } = require('./helpers');

const CONTINUE = 'HEARTBEAT_VERDICT_CONTINUE';

async function started(handlers, logger = sdk.silentLogger) {
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, logger });
  for (const [type, fn] of Object.entries(handlers)) ex.handle(type, fn);
  await ex.start();
  return ex;
}

/** A delivery whose type heartbeats: the dispatcher times the attempt out after `heartbeatTimeoutMs` without one. */
function beating(taskId, taskType, { heartbeatTimeoutMs = 5_000, details = '', attempt = 1 } = {}) {
  return { ...delivery(taskId, taskType, { attempt }), heartbeat_timeout_ms: heartbeatTimeoutMs, heartbeat_details_json: details };
}

/**
 * The dispatcher's side of a Work stream to `ex`. Like a node, it answers every
 * heartbeat: with `verdictFor(heartbeat)` ([verdict, reason]), CONTINUE by
 * default. `messages` is every ExecuteResponse, `outcomes` and `heartbeats` their
 * contents in arrival order.
 */
function dispatcher(ex, verdictFor = () => [CONTINUE, '']) {
  const client = new (loadWire().ExecutorService)(ex.address, grpc.credentials.createInsecure());
  const call = client.Work();
  const messages = [];
  const outcomes = [];
  const heartbeats = [];
  const ended = new Promise((resolve, reject) => { call.on('end', resolve); call.on('error', reject); });
  call.on('data', (m) => {
    messages.push(m);
    outcomes.push(...m.outcomes);
    heartbeats.push(...m.heartbeats);
    const answers = m.heartbeats.map((h) => {
      const [verdict, reason] = verdictFor(h);
      return { sequence: h.sequence, task_id: h.task_id, attempt: h.attempt, verdict, reason };
    });
    if (answers.length > 0) call.write({ heartbeat_answers: answers });
  });
  return {
    messages, outcomes, heartbeats, ended,
    send: (...deliveries) => call.write({ deliveries, dispatcher_node: 'test' }),
    answer: (answers) => call.write({ heartbeat_answers: answers }),
    outcome: (taskId) => outcomes.find((o) => o.task_id === taskId),
    async close() {
      call.end();
      await ended;
      client.close();
    },
  };
}

/** A promise and the function that resolves it: a handler waits on it until the test lets it go. */
function gate() {
  let open;
  const opened = new Promise((resolve) => { open = resolve; });
  return { opened, open };
}

/** Resolves when `signal` aborts; a handler that never sees it runs into its timeout (TIMED_OUT, and the test fails). */
const aborted = (signal) => new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));

test('the SDK sends the first heartbeat itself as the handler starts, with no details', async () => {
  const g = gate();
  const ex = await started({ long: () => g.opened });
  const d = dispatcher(ex);
  try {
    d.send(beating('a', 'long', { attempt: 2 }));
    await until(() => d.heartbeats.length === 1);
    assert.equal(d.outcomes.length, 0, 'the heartbeat comes while the handler still runs');
    const [h] = d.heartbeats;
    assert.deepEqual([h.task_id, h.attempt, h.details_json], ['a', 2, '']);
    assert.ok(BigInt(h.sequence) > 0n);
    g.open();
    await until(() => d.outcomes.length === 1);
    assert.equal(d.outcome('a').kind, 'OUTCOME_KIND_SUCCEEDED'); // CONTINUE changed nothing
    assert.equal(d.heartbeats.length, 1);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('ctx.heartbeat(details) reaches the stream as JSON, at once, with sequences unique on the stream', async () => {
  const g = gate();
  const ex = await started({
    pages: async (ctx) => {
      assert.equal(ctx.heartbeatTimeoutMs, 5_000);
      ctx.heartbeat({ page: 3, cursor: 'é"x' });
      ctx.heartbeat(); // keep the last details
      ctx.heartbeat(null); // a JSON value like any other
      await g.opened;
    },
  });
  const d = dispatcher(ex);
  try {
    d.send(beating('a', 'pages'), beating('b', 'pages'));
    await until(() => d.heartbeats.length === 8); // the SDK's own + 3 calls, per delivery
    assert.equal(d.outcomes.length, 0, 'heartbeat() does not wait for the handler, nor for an answer');
    const ofA = d.heartbeats.filter((h) => h.task_id === 'a').map((h) => h.details_json);
    assert.deepEqual(ofA, ['', '{"page":3,"cursor":"é\\"x"}', '', 'null']);
    const sequences = d.heartbeats.map((h) => h.sequence);
    assert.equal(new Set(sequences).size, sequences.length);
    g.open();
    await until(() => d.outcomes.length === 2);
    assert.ok(d.outcomes.every((o) => o.kind === 'OUTCOME_KIND_SUCCEEDED'));
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('details too large or not JSON are refused, naming details, and nothing is sent', async () => {
  const errors = [];
  const ex = await started({
    big: (ctx) => {
      ctx.heartbeat('x'.repeat(65_534)); // 65,536 bytes of JSON with its quotes: the limit, allowed
      // One byte over; 32,770 characters but 65,538 bytes in UTF-8; a BigInt; a function.
      for (const details of ['x'.repeat(65_535), 'é'.repeat(32_768), 10n, () => 1]) {
        try {
          ctx.heartbeat(details);
        } catch (e) {
          errors.push(e);
        }
      }
      const cycle = {};
      cycle.self = cycle;
      assert.throws(() => ctx.heartbeat(cycle), (e) => e instanceof sdk.ValidationError && e.field === 'details');
    },
  });
  const d = dispatcher(ex);
  try {
    d.send(beating('a', 'big'));
    await until(() => d.outcomes.length === 1);
    assert.equal(d.outcome('a').kind, 'OUTCOME_KIND_SUCCEEDED');
    assert.equal(errors.length, 4);
    for (const e of errors) {
      assert.ok(e instanceof sdk.ValidationError, String(e));
      assert.equal(e.field, 'details');
      assert.match(e.message, /^details: /);
    }
    assert.match(errors[0].message, /65537 bytes of JSON, over the limit of 65536/);
    assert.match(errors[1].message, /65538 bytes/);
    assert.match(errors[2].message, /not serializable to JSON: .*BigInt/);
    assert.match(errors[3].message, /not serializable to JSON: a function/);
    assert.deepEqual(d.heartbeats.map((h) => h.details_json.length), [0, 65_536]);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('CANCEL: the signal aborts at once with TaskStoppedError, the outcome is STOPPED whatever the handler returns', async () => {
  let reason;
  const ex = await started({
    // Returns normally once aborted, as a handler that winds down tidily would.
    tidy: async (ctx) => {
      await aborted(ctx.signal);
      reason = ctx.signal.reason;
      return 'done';
    },
  });
  const d = dispatcher(ex, (h) => (h.task_id === 'c' ? ['HEARTBEAT_VERDICT_CANCEL', 'cancelled by ops'] : [CONTINUE, '']));
  try {
    d.send(beating('c', 'tidy'), beating('k', 'tidy'));
    await until(() => d.outcomes.length === 1, 3_000);
    const o = d.outcome('c');
    assert.equal(o.kind, 'OUTCOME_KIND_STOPPED');
    assert.equal(o.error, 'cancelled: cancelled by ops');
    assert.ok(reason instanceof sdk.TaskStoppedError);
    assert.equal(reason.verdict, 'cancelled');
    assert.equal(reason.reason, 'cancelled by ops');
    assert.equal(ex.inFlight, 1, 'the other attempt, answered CONTINUE, runs on');
    // An answer for an attempt no longer running (c) or not running here (k, attempt 9) is ignored.
    d.answer([{ sequence: '99', task_id: 'c', attempt: 1, verdict: 'HEARTBEAT_VERDICT_LOST', reason: 'late' },
      { sequence: '98', task_id: 'k', attempt: 9, verdict: 'HEARTBEAT_VERDICT_CANCEL', reason: 'other attempt' }]);
    d.answer([{ sequence: '97', task_id: 'k', attempt: 1, verdict: 'HEARTBEAT_VERDICT_CANCEL', reason: 'now k' }]);
    await until(() => d.outcomes.length === 2, 3_000);
    assert.equal(d.outcome('k').error, 'cancelled: now k');
    assert.equal(d.outcomes.length, 2);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('LOST: the signal aborts, heartbeat() then fails, and the outcome is STOPPED even when the handler throws', async () => {
  const after = [];
  let lost = false;
  const ex = await started({
    stubborn: async (ctx) => {
      await aborted(ctx.signal);
      lost = true;
      for (const details of [undefined, { page: 4 }]) {
        try {
          ctx.heartbeat(details);
        } catch (e) {
          after.push(e);
        }
      }
      throw new Error('upstream write failed'); // whatever it throws, the dispatcher asked for STOPPED
    },
  });
  const d = dispatcher(ex, () => ['HEARTBEAT_VERDICT_LOST', 'lease ran out; attempt 2 runs elsewhere']);
  try {
    d.send(beating('l', 'stubborn'));
    await until(() => d.outcomes.length === 1, 3_000);
    assert.ok(lost);
    const o = d.outcome('l');
    assert.equal(o.kind, 'OUTCOME_KIND_STOPPED');
    assert.equal(o.error, 'lost: lease ran out; attempt 2 runs elsewhere');
    assert.equal(after.length, 2);
    for (const e of after) {
      assert.ok(e instanceof sdk.TaskStoppedError, String(e));
      assert.equal(e.verdict, 'lost');
      assert.equal(e.message, 'lost: lease ran out; attempt 2 runs elsewhere');
      assert.match(e.stack, /heartbeat\.test\.js/, 'the stack shows the handler\'s call');
    }
    assert.equal(d.heartbeats.length, 1, 'nothing is sent after the stop');
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('heartbeat() without a heartbeat timeout is sent and answered; a handler that lets its TaskStoppedError out is STOPPED', async () => {
  const ex = await started({
    loop: async (ctx) => {
      assert.equal(ctx.heartbeatTimeoutMs, 0);
      ctx.heartbeat({ step: 1 }); // no timeout, yet on the stream: it is sent and its answer counts
      await aborted(ctx.signal);
      ctx.heartbeat({ step: 2 }); // throws: the first one's answer said CANCEL
    },
  });
  const d = dispatcher(ex, () => ['HEARTBEAT_VERDICT_CANCEL', 'order withdrawn']);
  try {
    d.send(delivery('r', 'loop'));
    await until(() => d.outcomes.length === 1, 3_000);
    assert.deepEqual(d.heartbeats.map((h) => h.details_json), ['{"step":1}']);
    assert.equal(d.outcome('r').kind, 'OUTCOME_KIND_STOPPED');
    assert.equal(d.outcome('r').error, 'cancelled: order withdrawn');
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('INVALID: a warning with the reason, and the attempt goes on', async () => {
  const warnings = [];
  const logger = { ...sdk.silentLogger, warn: (m) => warnings.push(m) };
  const g = gate();
  let abortedSeen;
  const ex = await started({
    odd: async (ctx) => {
      ctx.heartbeat({ n: 1 });
      await g.opened;
      ctx.heartbeat({ n: 2 }); // still allowed
      abortedSeen = ctx.signal.aborted;
    },
  }, logger);
  const d = dispatcher(ex, (h) => (h.details_json === '{"n":1}' ? ['HEARTBEAT_VERDICT_INVALID', 'details_json: not JSON'] : [CONTINUE, '']));
  try {
    d.send(beating('i', 'odd'));
    await until(() => warnings.length === 1);
    assert.match(warnings[0], /task i attempt 1 refused: details_json: not JSON/);
    g.open();
    await until(() => d.outcomes.length === 1);
    assert.equal(d.outcome('i').kind, 'OUTCOME_KIND_SUCCEEDED');
    assert.equal(abortedSeen, false);
    assert.deepEqual(d.heartbeats.map((h) => h.details_json), ['', '{"n":1}', '{"n":2}']);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('the context carries the previous attempt\'s last details, decoded, and the heartbeat timeout', async () => {
  const seen = {};
  const ex = await started({
    resume: (ctx) => { seen[ctx.taskId] = [ctx.lastHeartbeatDetails, ctx.heartbeatTimeoutMs]; },
  });
  const d = dispatcher(ex);
  try {
    d.send(beating('p', 'resume', { attempt: 2, heartbeatTimeoutMs: 30_000, details: '{"page":7,"ids":[1,2]}' }),
      beating('s', 'resume', { details: '"text"' }), beating('n', 'resume'), delivery('z', 'resume'));
    await until(() => d.outcomes.length === 4);
    assert.deepEqual(seen, {
      p: [{ page: 7, ids: [1, 2] }, 30_000],
      s: ['text', 5_000],
      n: [undefined, 5_000],
      z: [undefined, 0],
    });
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('deliveries without a heartbeat timeout send no heartbeat: outcomes only', async () => {
  const ex = await started({ tiny: () => undefined });
  const d = dispatcher(ex);
  try {
    const ids = Array.from({ length: 50 }, (_, i) => `t${i}`);
    d.send(...ids.map((id) => delivery(id, 'tiny')));
    await until(() => d.outcomes.length === ids.length);
    assert.ok(d.outcomes.every((o) => o.kind === 'OUTCOME_KIND_SUCCEEDED'));
    assert.deepEqual(d.heartbeats, []);
    assert.ok(d.messages.every((m) => m.heartbeats.length === 0));
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('an attempt answered TIMED_OUT sends no more heartbeats, though its handler runs on', async () => {
  let lateCall;
  const ex = await started({
    overdue: async (ctx) => {
      await aborted(ctx.signal); // its deadline
      ctx.heartbeat({ late: true }); // the attempt has been answered: nothing to send
      lateCall = 'returned';
    },
    next: () => undefined,
  });
  const d = dispatcher(ex);
  try {
    d.send({ ...beating('o', 'overdue'), timeout_ms: 200 });
    await until(() => lateCall !== undefined && d.outcomes.length === 1);
    assert.equal(d.outcome('o').kind, 'OUTCOME_KIND_TIMED_OUT');
    // The stream keeps order: once the next delivery's heartbeat is in, a late one would be too.
    d.send(beating('n', 'next'));
    await until(() => d.outcomes.length === 2);
    assert.deepEqual(d.heartbeats.map((h) => [h.task_id, h.details_json]), [['o', ''], ['n', '']]);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});

test('by an Execute call heartbeat() sends nothing and returns, and still checks its details', async () => {
  const results = [];
  const ex = await started({
    unary: (ctx) => {
      ctx.heartbeat({ page: 1 });
      ctx.heartbeat();
      results.push(ctx.lastHeartbeatDetails);
      assert.throws(() => ctx.heartbeat('x'.repeat(70_000)), (e) => e instanceof sdk.ValidationError && e.field === 'details');
    },
  });
  try {
    const [o] = await execute(ex.address, [beating('u', 'unary', { details: '{"page":0}' })]);
    assert.equal(o.kind, 'OUTCOME_KIND_SUCCEEDED', o.error);
    assert.deepEqual(results, [{ page: 0 }]);
  } finally {
    await ex.stop(1_000);
  }
});

test("dist/cli.js's heartbeat behaviour: {done_ms} every every_ms from the last details, a stopped line on CANCEL", async () => {
  const { handlerFor } = require('../dist/cli');
  const printed = [];
  const ex = await started({ hb: handlerFor('heartbeat', (line) => printed.push(line)) });
  const cancelled = new Set();
  const d = dispatcher(ex, (h) => (cancelled.has(h.task_id) ? ['HEARTBEAT_VERDICT_CANCEL', 'the task was cancelled'] : [CONTINUE, '']));
  const hb = (taskId, payload, details = '') => ({
    ...delivery(taskId, 'hb', { payload: JSON.stringify(payload), timeoutMs: 30_000 }),
    heartbeat_timeout_ms: 5_000, heartbeat_details_json: details,
  });
  try {
    // Resumed at 100 of 250 ms: about 150 ms of work left, a beat every 20 ms.
    d.send(hb('short', { ms: 250, every_ms: 20 }, '{"done_ms":100}'));
    await until(() => d.outcome('short') !== undefined, 5_000);
    assert.equal(d.outcome('short').kind, 'OUTCOME_KIND_SUCCEEDED', d.outcome('short').error);
    const done = d.heartbeats.filter((h) => h.task_id === 'short' && h.details_json !== '')
      .map((h) => JSON.parse(h.details_json).done_ms);
    assert.ok(done.length >= 3, `beats ${done}`);
    // Node's timers run on the loop's millisecond clock and may fire up to 1 ms early by performance.now().
    assert.ok(done[0] >= 100 + 20 - 1 && done.every((n, i) => n <= 250 && (i === 0 || n >= done[i - 1])), `beats ${done}`);
    assert.deepEqual(printed, []);

    cancelled.add('long');
    d.send(hb('long', { ms: 60_000 }));
    await until(() => d.outcome('long') !== undefined, 5_000);
    assert.equal(d.outcome('long').kind, 'OUTCOME_KIND_STOPPED');
    assert.deepEqual(printed, ['stopped long cancelled: the task was cancelled']);
  } finally {
    await d.close();
    await ex.stop(1_000);
  }
});
