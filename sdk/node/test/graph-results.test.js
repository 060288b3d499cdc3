'use strict';
// A handler's result in a graph (src/result.ts, runner.ts, context.ts): the
// return value becomes Outcome.result_json only for a delivery with
// keep_result, within its limits (else NON_RETRYABLE "result: ..."), and the
// context hands over the parents' results, decoded, over Execute calls.
const test = require('node:test');
const assert = require('node:assert/strict');
const sdk = require('../dist/index');
const { resultJsonOf, parentResultsFromWire, MAX_RESULT_BYTES } = require('../dist/result');
const { execute, delivery } = require('./helpers');

// ---- serialization and its limits ----

test('resultJsonOf: compact JSON; undefined and null are no result', () => {
  assert.deepEqual(resultJsonOf({ type: 'charge', saw: {}, n: [1, 2.5, 'é'] }), { json: '{"type":"charge","saw":{},"n":[1,2.5,"é"]}', error: '' });
  assert.deepEqual(resultJsonOf('ok'), { json: '"ok"', error: '' });
  assert.deepEqual(resultJsonOf(0), { json: '0', error: '' });
  assert.deepEqual(resultJsonOf(false), { json: 'false', error: '' });
  assert.deepEqual(resultJsonOf(undefined), { json: '', error: '' });
  assert.deepEqual(resultJsonOf(null), { json: '', error: '' });
  assert.deepEqual(resultJsonOf(new Date(0)), { json: '"1970-01-01T00:00:00.000Z"', error: '' }); // its toJSON
});

test('resultJsonOf: what is not JSON, or would be written as something else, is refused with "result: "', () => {
  const cycle = {};
  cycle.self = cycle;
  for (const bad of [NaN, { x: Infinity }, 10n, cycle, () => 1, Symbol('s'), new Map([['a', 1]]), { s: new Set([1]) }]) {
    const { json, error } = resultJsonOf(bad);
    assert.equal(json, '');
    assert.match(error, /^result: the handler's return value is not JSON \(.+\)$/, String(error));
  }
});

test('resultJsonOf: at most 65,536 bytes of UTF-8, counted in bytes', () => {
  assert.equal(MAX_RESULT_BYTES, 65_536);
  const at = 'x'.repeat(MAX_RESULT_BYTES - 2); // with its quotes: exactly the limit
  assert.equal(resultJsonOf(at).json.length, MAX_RESULT_BYTES);
  assert.deepEqual(resultJsonOf(`${at}x`), { json: '', error: 'result: 65537 bytes as JSON, more than 65536' });
  const wide = 'é'.repeat(40_000); // 40,002 characters, 80,002 bytes
  assert.deepEqual(resultJsonOf(wide), { json: '', error: 'result: 80002 bytes as JSON, more than 65536' });
});

// ---- parent results ----

const parent = (key, over = {}) => ({ key, task_id: `id-${key}`, outcome: 'succeeded', result_json: '', error: '', ...over });

test('parentResultsFromWire: by key in order, results decoded once, none is null', () => {
  const parents = parentResultsFromWire([
    parent('charge', { result_json: '{"paid":12.5}' }),
    parent('email', { outcome: 'ignored', error: 'smtp down' }),
  ], false);
  assert.deepEqual([...parents.keys()], ['charge', 'email']);
  const charge = parents.get('charge');
  assert.deepEqual([charge.taskId, charge.outcome, charge.result, charge.truncated], ['id-charge', 'succeeded', { paid: 12.5 }, false]);
  assert.equal(charge.result, charge.result); // decoded once: the same object
  const email = parents.get('email');
  assert.deepEqual([email.outcome, email.error, email.result, email.resultJson], ['ignored', 'smtp down', null, '']);
  assert.throws(() => { charge.key = 'x'; }, TypeError); // frozen
  assert.deepEqual(JSON.parse(JSON.stringify(charge)),
    { key: 'charge', taskId: 'id-charge', outcome: 'succeeded', error: '', result: { paid: 12.5 }, truncated: false });
});

test('parentResultsFromWire: a truncated delivery marks the successes left without a result, whose result then throws', () => {
  const parents = parentResultsFromWire([
    parent('a', { result_json: '1' }), parent('b'), parent('c', { outcome: 'failed', error: 'boom' })], true);
  assert.deepEqual([...parents.values()].map((p) => p.truncated), [false, true, false]);
  assert.equal(parents.get('a').result, 1);
  assert.throws(() => parents.get('b').result, (e) => e instanceof sdk.TaskringError && /not delivered.*getGraph/.test(e.message));
  assert.equal(parents.get('c').result, null);
  assert.throws(() => parentResultsFromWire([parent('x', { result_json: '{bad' })], false).get('x').result, sdk.ProtocolError);
});

// ---- through the executor ----

async function started(handlers) {
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger });
  for (const [type, fn] of Object.entries(handlers)) ex.handle(type, fn);
  await ex.start();
  return ex;
}

const byId = (outcomes) => Object.fromEntries(outcomes.map((o) => [o.task_id, o]));
const kept = (id, type, over = {}) => ({ ...delivery(id, type), keep_result: true, ...over });

test('a result is sent only for a delivery with keep_result; one that cannot be kept fails non-retryably', async () => {
  const seen = {};
  const ex = await started({
    ret: (ctx) => {
      seen[ctx.taskId] = ctx.keepsResult;
      return { type: ctx.taskType, id: ctx.taskId };
    },
    none: async () => undefined,
    nan: async () => ({ total: NaN }),
    huge: async () => 'x'.repeat(MAX_RESULT_BYTES),
    fails: async () => { throw new Error('down'); },
  });
  try {
    const o = byId(await execute(ex.address, [
      delivery('plain', 'ret'), kept('k', 'ret'), kept('k-none', 'none'), kept('k-nan', 'nan'), kept('k-huge', 'huge'),
      delivery('plain-huge', 'huge'), kept('k-fails', 'fails')]));
    assert.deepEqual([o.plain.kind, o.plain.result_json], ['OUTCOME_KIND_SUCCEEDED', '']); // not wanted: not sent
    assert.deepEqual([o.k.kind, o.k.result_json], ['OUTCOME_KIND_SUCCEEDED', '{"type":"ret","id":"k"}']);
    assert.deepEqual(seen, { plain: false, k: true });
    assert.deepEqual([o['k-none'].kind, o['k-none'].result_json], ['OUTCOME_KIND_SUCCEEDED', '']);
    assert.equal(o['k-nan'].kind, 'OUTCOME_KIND_NON_RETRYABLE_FAILURE');
    assert.match(o['k-nan'].error, /^result: the handler's return value is not JSON \(NaN is not valid JSON\)$/);
    assert.deepEqual([o['k-huge'].kind, o['k-huge'].error, o['k-huge'].result_json],
      ['OUTCOME_KIND_NON_RETRYABLE_FAILURE', 'result: 65538 bytes as JSON, more than 65536', '']);
    assert.equal(o['plain-huge'].kind, 'OUTCOME_KIND_SUCCEEDED'); // nobody wants it: no limit
    assert.deepEqual([o['k-fails'].kind, o['k-fails'].result_json], ['OUTCOME_KIND_RETRYABLE_FAILURE', '']);
  } finally {
    await ex.stop(1_000);
  }
});

test('the context hands over the parents\' results by key, and whether the delivery was truncated', async () => {
  const seen = {};
  const ex = await started({
    child: (ctx) => {
      seen[ctx.taskId] = {
        parents: Object.fromEntries([...ctx.parentResults].map(([k, p]) => [k, [p.taskId, p.outcome, p.error, p.truncated ? '<left out>' : p.result]])),
        truncated: ctx.parentResultsTruncated,
        same: ctx.parentResults === ctx.parentResults,
      };
    },
  });
  try {
    await execute(ex.address, [
      { ...delivery('c1', 'child'), parent_results: [
        parent('charge', { result_json: '{"type":"charge","saw":{}}' }),
        parent('email', { outcome: 'ignored', error: 'NonRetryableError: no' })] },
      { ...delivery('c2', 'child'), parent_results: [parent('big')], parent_results_truncated: true },
      delivery('c3', 'child')]);
    assert.deepEqual(seen.c1, { parents: {
      charge: ['id-charge', 'succeeded', '', { type: 'charge', saw: {} }],
      email: ['id-email', 'ignored', 'NonRetryableError: no', null] }, truncated: false, same: true });
    assert.deepEqual(seen.c2, { parents: { big: ['id-big', 'succeeded', '', '<left out>'] }, truncated: true, same: true });
    assert.deepEqual(seen.c3, { parents: {}, truncated: false, same: true });
  } finally {
    await ex.stop(1_000);
  }
});
