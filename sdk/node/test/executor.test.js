'use strict';
// The executor against Execute calls over loopback gRPC: outcomes, deadlines
// with AbortSignal, the in-flight cap, failures of every shape (none may take
// the process down), NO_HANDLER and graceful stop.
const test = require('node:test');
const assert = require('node:assert/strict');
const sdk = require('../dist/index');
const grpc = require('@grpc/grpc-js');
const { loadWire } = require('../dist/wire/load');
const { execute, delivery, sleep, until } = require('./helpers');

async function started(handlers, options = {}) {
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger, ...options });
  for (const [type, fn] of Object.entries(handlers)) ex.handle(type, fn);
  await ex.start();
  return ex;
}

const byId = (outcomes) => Object.fromEntries(outcomes.map((o) => [o.task_id, o]));

// A handler's stray rejection must never reach the process; fail loudly if one does.
const stray = [];
const onStray = (reason) => stray.push(reason);
process.on('unhandledRejection', onStray);
test.after(() => {
  process.off('unhandledRejection', onStray);
  assert.deepEqual(stray, [], 'no unhandled rejection may escape a handler');
});

test('a batch: success, context fields, and an outcome per delivery', async () => {
  const seen = [];
  const ex = await started({
    cancel_order: async (ctx) => {
      seen.push({ id: ctx.taskId, attempt: ctx.attempt, epoch: ctx.epoch, payload: ctx.payload, trace: ctx.traceId });
      assert.ok(ctx.remainingMs() > 0 && ctx.remainingMs() <= 5_000);
      assert.equal(ctx.signal.aborted, false);
    },
  });
  try {
    const outcomes = await execute(ex.address, [
      delivery('a', 'cancel_order', { epoch: '18446744073709551615' }), delivery('b', 'cancel_order', { attempt: 3 })]);
    assert.equal(outcomes.length, 2);
    for (const o of outcomes) {
      assert.equal(o.kind, 'OUTCOME_KIND_SUCCEEDED');
      assert.ok(Number(o.finished_at_ms) >= Number(o.started_at_ms) && Number(o.started_at_ms) > 1.7e12);
    }
    assert.equal(byId(outcomes).b.attempt, 3);
    // uint64 epoch arrives exactly (a number would read 18446744073709552000).
    assert.deepEqual(seen.find((s) => s.id === 'a'), { id: 'a', attempt: 1, epoch: '18446744073709551615', payload: { n: 1 }, trace: 'tr' });
  } finally {
    await ex.stop(1_000);
  }
});

test('failures of every shape are outcomes, never crashes', async () => {
  const ex = await started({
    rejects: () => Promise.reject(new Error('upstream down')),
    throws: () => { throw new TypeError('bug'); },
    throws_string: () => { throw 'just a string'; }, // eslint-disable-line no-throw-literal
    rejects_undefined: () => Promise.reject(undefined),
    non_retryable: async () => { throw new sdk.NonRetryableError('order does not exist'); },
    retryable: async () => { throw new sdk.RetryableError('try later'); },
    sync_ok: () => 'ignored',
  });
  try {
    const o = byId(await execute(ex.address, ['rejects', 'throws', 'throws_string', 'rejects_undefined', 'non_retryable',
      'retryable', 'sync_ok'].map((t) => delivery(t, t))));
    assert.equal(o.rejects.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(o.rejects.error, 'Error: upstream down');
    assert.match(o.rejects.stack_trace, /upstream down\n\s+at /);
    assert.equal(o.throws.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(o.throws.error, 'TypeError: bug');
    assert.equal(o.throws_string.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(o.throws_string.error, "non-Error value thrown: 'just a string'");
    assert.equal(o.rejects_undefined.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(o.non_retryable.kind, 'OUTCOME_KIND_NON_RETRYABLE_FAILURE');
    assert.equal(o.non_retryable.error, 'NonRetryableError: order does not exist');
    assert.equal(o.retryable.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(o.sync_ok.kind, 'OUTCOME_KIND_SUCCEEDED');
  } finally {
    await ex.stop(1_000);
  }
});

test('unknown task type: NO_HANDLER; a payload that is not an object: NON_RETRYABLE', async () => {
  const ex = await started({ known: async () => undefined });
  try {
    const o = byId(await execute(ex.address, [delivery('u', 'unknown'), delivery('p', 'known', { payload: '[1]' })]));
    assert.equal(o.u.kind, 'OUTCOME_KIND_NO_HANDLER');
    assert.equal(o.u.error, "no handler for task type 'unknown' in this executor");
    assert.equal(o.p.kind, 'OUTCOME_KIND_NON_RETRYABLE_FAILURE');
    assert.match(o.p.error, /^payload_json: /);
  } finally {
    await ex.stop(1_000);
  }
});

test('deadline: TIMED_OUT at timeout_ms, the signal aborts, a late rejection is swallowed', async () => {
  let signalReason;
  const ex = await started({
    honours: (ctx) => new Promise((resolve, reject) => {
      ctx.signal.addEventListener('abort', () => { signalReason = ctx.signal.reason; reject(ctx.signal.reason); });
    }),
    ignores: () => sleep(1_500).then(() => { throw new Error('late failure after the deadline'); }),
  });
  try {
    const t0 = Date.now();
    const o = byId(await execute(ex.address, [delivery('h', 'honours', { timeoutMs: 200 }), delivery('i', 'ignores', { timeoutMs: 200 })]));
    const took = Date.now() - t0;
    assert.equal(o.h.kind, 'OUTCOME_KIND_TIMED_OUT');
    assert.equal(o.i.kind, 'OUTCOME_KIND_TIMED_OUT');
    assert.match(o.h.error, /timeout of 200 ms/);
    assert.ok(took >= 190 && took < 1_200, `answered after ${took} ms`);
    assert.equal(signalReason.name, 'TimeoutError');
    // The ignoring handler still runs and holds its slot until it settles.
    assert.equal(ex.inFlight, 1);
    await until(() => ex.inFlight === 0, 3_000);
  } finally {
    await ex.stop(1_000);
  }
});

test('max_in_flight: never more handlers at once; a wait past the deadline is TIMED_OUT without running', async () => {
  let running = 0;
  let peak = 0;
  const ran = [];
  const track = (ms) => async (ctx) => {
    ran.push(ctx.taskId);
    running += 1;
    peak = Math.max(peak, running);
    await sleep(ms);
    running -= 1;
  };
  const ex = await started({ work: track(150), slow: track(600) }, { maxInFlight: 2 });
  try {
    const outcomes = await execute(ex.address, ['a', 'b', 'c', 'd', 'e'].map((id) => delivery(id, 'work', { timeoutMs: 2_000 })));
    assert.ok(outcomes.every((o) => o.kind === 'OUTCOME_KIND_SUCCEEDED'));
    assert.equal(peak, 2);
    // Two batches compete for the same slots; the second one's short deadline passes while waiting.
    const slow = execute(ex.address, ['s1', 's2'].map((id) => delivery(id, 'slow', { timeoutMs: 5_000 })));
    await until(() => ex.inFlight === 2);
    const waiting = execute(ex.address, [delivery('w', 'work', { timeoutMs: 200 })]);
    await until(() => ex.waiting === 1, 190);
    const [w] = await waiting;
    assert.equal(w.kind, 'OUTCOME_KIND_TIMED_OUT');
    assert.match(w.error, /waiting for a free slot \(max_in_flight is reached\)/);
    assert.ok(!ran.includes('w'), 'a delivery that never got a slot must not run');
    assert.ok((await slow).every((o) => o.kind === 'OUTCOME_KIND_SUCCEEDED'));
    assert.equal(peak, 2);
  } finally {
    await ex.stop(1_000);
  }
});

test('a delivery that cannot start within start_within_ms is answered NOT_STARTED and not run', async () => {
  const ran = [];
  let release;
  const released = new Promise((r) => { release = r; });
  let busy = false;
  const ex = await started({
    hold: async () => { busy = true; await Promise.race([released, sleep(5_000)]); },
    ok: (ctx) => { ran.push(ctx.taskId); },
  }, { maxInFlight: 1 });
  try {
    // Given the only slot busy until `release` is called
    const holder = execute(ex.address, [delivery('h', 'hold', { timeoutMs: 10_000 })]);
    await until(() => busy);
    // When a delivery that must start within 100 ms waits behind it for longer
    const late = { ...delivery('late', 'ok', { timeoutMs: 10_000 }), start_within_ms: 100 };
    const timer = setTimeout(release, 500);
    const [out] = await execute(ex.address, [late]);
    clearTimeout(timer);
    await holder;
    // Then it was never run, and says so (the dispatcher gives it back unspent)
    assert.equal(out.kind, 'OUTCOME_KIND_NOT_STARTED');
    assert.equal(Number(out.started_at_ms), 0);
    assert.match(out.error, /^not started within 100 ms of arrival/);
    assert.deepEqual(ran, []);
    // While one that starts in time runs as usual
    const onTime = { ...delivery('on-time', 'ok'), start_within_ms: 5_000 };
    const [o] = await execute(ex.address, [onTime]);
    assert.equal(o.kind, 'OUTCOME_KIND_SUCCEEDED');
    assert.deepEqual(ran, ['on-time']);
  } finally {
    await ex.stop(1_000);
  }
});

test('a delivery arriving after its start_by_unix_ms instant is answered NOT_STARTED and not run', async () => {
  const ran = [];
  const ex = await started({ ok: (ctx) => { ran.push(ctx.taskId); } });
  try {
    // A batch held up on its way (its dispatcher froze as it sent it): the lease it
    // carries had run out before it arrived, however long start_within_ms says.
    const late = { ...delivery('late', 'ok'), start_within_ms: 60_000, start_by_unix_ms: String(Date.now() - 1) };
    const onTime = { ...delivery('on-time', 'ok'), start_within_ms: 60_000, start_by_unix_ms: String(Date.now() + 60_000) };
    const o = byId(await execute(ex.address, [late, onTime]));
    assert.equal(o.late.kind, 'OUTCOME_KIND_NOT_STARTED');
    assert.equal(Number(o.late.started_at_ms), 0);
    assert.match(o.late.error, /not started by/);
    assert.equal(o['on-time'].kind, 'OUTCOME_KIND_SUCCEEDED');
    assert.deepEqual(ran, ['on-time']);
  } finally {
    await ex.stop(1_000);
  }
});

test('graceful stop: in-flight work finishes, new deliveries are handed back', async () => {
  const ex = await started({ work: () => sleep(300) });
  const inflight = execute(ex.address, [delivery('x', 'work')]);
  await until(() => ex.inFlight === 1);
  const stopping = ex.stop(5_000);
  await sleep(20);
  const late = await execute(ex.address, [delivery('late', 'work')]).catch((e) => e);
  const [x] = await inflight;
  assert.equal(x.kind, 'OUTCOME_KIND_SUCCEEDED');
  await stopping;
  // Either answered "stopping" or refused by a closing server: both make the dispatcher re-queue it.
  if (Array.isArray(late)) {
    assert.equal(late[0].kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    assert.equal(late[0].error, 'executor is stopping');
  } else {
    assert.ok(late.code !== undefined, String(late));
  }
});

test('graceful stop past its timeout: what is left is answered RETRYABLE at once and signals abort', async () => {
  let aborted = false;
  const ex = await started({
    quick: () => sleep(20),
    hangs: (ctx) => new Promise(() => { ctx.signal.addEventListener('abort', () => { aborted = true; }); }),
  }, { maxInFlight: 1 });
  const batch = execute(ex.address, [delivery('q', 'quick', { timeoutMs: 10_000 }), delivery('h', 'hangs', { timeoutMs: 10_000 }),
    delivery('w', 'quick', { timeoutMs: 10_000 })]);
  await until(() => ex.inFlight === 1 && ex.waiting === 1);
  const t0 = Date.now();
  await ex.stop(300);
  const took = Date.now() - t0;
  const o = byId(await batch);
  assert.ok(took < 2_000, `stop took ${took} ms`);
  assert.equal(o.q.kind, 'OUTCOME_KIND_SUCCEEDED');
  assert.equal(o.h.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
  assert.match(o.h.error, /graceful stop of 300 ms ran out/);
  assert.equal(o.w.kind, 'OUTCOME_KIND_RETRYABLE_FAILURE'); // was waiting for the one slot
  assert.ok(aborted);
});

test('stop before start, and twice', async () => {
  const ex = new sdk.Executor({ namespace: 'shop', zk: null });
  await ex.stop();
  await ex.stop();
  await assert.rejects(ex.start(), /starts once/);
  const ex2 = await started({ t: async () => undefined });
  await Promise.all([ex2.stop(100), ex2.stop(100)]);
});

test('configuration is checked', () => {
  assert.throws(() => new sdk.Executor({ namespace: 'Shop', zk: null }), /namespace/);
  assert.throws(() => new sdk.Executor({ namespace: 'shop', zk: null, maxInFlight: 0 }), /maxInFlight/);
  const ex = new sdk.Executor({ namespace: 'shop', zk: null });
  ex.handle('Invoice:Send-v2', async () => undefined); // the server's syntax allows ':'
  assert.throws(() => ex.handle('Invoice:Send-v2', async () => undefined), /already has a handler/);
  assert.throws(() => ex.handle('bad/type', async () => undefined), /taskType/);
  assert.rejects(new sdk.Executor({ namespace: 'shop', zk: null }).start(), /no handlers/);
});

test('advertisePort: the address written for the dispatchers, not the bound port', async () => {
  const ex = await started({ t: async () => undefined }, { advertisePort: 7443, advertiseHost: 'executor.local' });
  try {
    assert.equal(ex.address, 'executor.local:7443');
  } finally {
    await ex.stop(100);
  }
  assert.throws(() => new sdk.Executor({ namespace: 'shop', zk: null, advertisePort: 0 }), /advertisePort/);
});

/** A Work stream to `ex` as a dispatcher opens one: the call, the outcomes that came, and its end. */
function openWork(ex) {
  const client = new (loadWire().ExecutorService)(ex.address, grpc.credentials.createInsecure());
  const call = client.Work();
  const got = [];
  const ended = new Promise((resolve, reject) => { call.on('end', resolve); call.on('error', reject); });
  call.on('data', (m) => got.push(...m.outcomes));
  return { client, call, got, ended };
}

test('Work stream: each outcome comes when its task ends, not with a slow one sent beside it; ends after what runs', async () => {
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  const ex = await started({ fast: async () => {}, slow: async () => { await gate; } });
  const { client, call, got, ended } = openWork(ex);
  try {
    call.write({ deliveries: [delivery('s1', 'slow')], dispatcher_node: 'test' });
    call.write({ deliveries: [delivery('f1', 'fast'), delivery('f2', 'fast'), delivery('x', 'nope')], dispatcher_node: 'test' });
    await until(() => got.length === 3);
    assert.deepEqual(got.map((o) => o.task_id).sort(), ['f1', 'f2', 'x']);
    assert.equal(byId(got).x.kind, 'OUTCOME_KIND_NO_HANDLER');
    call.end(); // the dispatcher closes its side: the stream ends once s1 has answered
    await sleep(20);
    assert.equal(got.length, 3);
    release();
    await ended;
    assert.equal(byId(got).s1.kind, 'OUTCOME_KIND_SUCCEEDED');
  } finally {
    client.close();
    await ex.stop(1_000);
  }
});

test('Work stream: a stopping executor finishes what runs, writes its outcome, and ends the stream', async () => {
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  const ex = await started({ slow: async () => { await gate; } });
  const { client, call, got, ended } = openWork(ex);
  try {
    call.write({ deliveries: [delivery('s1', 'slow')], dispatcher_node: 'test' });
    await until(() => ex.inFlight === 1);
    const stopped = ex.stop(5_000);
    release();
    await ended;
    await stopped;
    assert.deepEqual(got.map((o) => [o.task_id, o.kind]), [['s1', 'OUTCOME_KIND_SUCCEEDED']]);
  } finally {
    client.close();
  }
});
