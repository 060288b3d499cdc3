'use strict';
// Graphs (src/graph.ts, src/graph-info.ts, Client.submitGraph/getGraph): the
// builder's local checks and the fields they name, the SubmitGraphRequest it
// becomes, the answers read back, and the calls against an in-process fake
// GraphService (what is sent, the error mapping, failover, the token).
const test = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { graphToWire } = require('../dist/graph');
const { graphInfoFromWire, submittedGraphFromWire } = require('../dist/graph-info');
const { fakeGraphNode } = require('./helpers');

const { Graph, Join, ValidationError } = sdk;
const spec = (taskType, payload) => ({ namespace: 'shop', taskType, ...(payload ? { payload } : {}) });

/** The order of the README: charge -> ship, email (a failure ignored) -> close. */
function order(graphId = 'order-7') {
  const g = new Graph(graphId);
  const charge = g.task('charge', spec('charge', { order: 7 }));
  const ship = g.task('ship', spec('ship'), { after: [charge] });
  const email = g.task('email', spec('email'), { after: [charge] });
  g.task('close', spec('close'), { after: [ship, email.onFailure('ignore')], join: Join.noneFailed() });
  return g;
}

/** A check that throws a ValidationError naming `field` with a message matching `problem`. */
function refused(fn, field, problem) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.equal(e.field, field);
    if (problem) assert.match(e.problem, problem);
    return true;
  });
}

// ---- the builder ----

test('Graph: the request of the order, in the order the tasks were added', () => {
  const req = graphToWire(order().toSpec());
  assert.equal(req.namespace, 'shop');
  assert.equal(req.graph_id, 'order-7');
  assert.deepEqual(req.tasks.map((t) => [t.key, t.task.task_type, t.task.payload_json]), [
    ['charge', 'charge', '{"order":7}'], ['ship', 'ship', '{}'], ['email', 'email', '{}'], ['close', 'close', '{}']]);
  assert.deepEqual(req.tasks.map((t) => t.depends_on), [
    [],
    [{ key: 'charge', on_failure: 'ON_FAILURE_SKIP' }],
    [{ key: 'charge', on_failure: 'ON_FAILURE_SKIP' }],
    [{ key: 'ship', on_failure: 'ON_FAILURE_SKIP' }, { key: 'email', on_failure: 'ON_FAILURE_IGNORE' }],
  ]);
  assert.deepEqual(req.tasks.map((t) => t.join), [
    { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 }, { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 },
    { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 }, { rule: 'JOIN_RULE_NONE_FAILED', at_least: 0 }]);
});

test('Join: each rule on the wire; atLeast(k) only for a whole k >= 1', () => {
  const g = new Graph('g');
  const a = g.task('a', spec('t'));
  const b = g.task('b', spec('t'));
  const joins = [Join.allSucceeded(), Join.allDone(), Join.noneFailed(), Join.anySucceeded(), Join.atLeast(2)];
  joins.forEach((join, i) => g.task(`c${i}`, spec('t'), { after: [a, b], join }));
  assert.deepEqual(graphToWire(g.toSpec()).tasks.slice(2).map((t) => [t.join.rule, t.join.at_least]), [
    ['JOIN_RULE_ALL_SUCCEEDED', 0], ['JOIN_RULE_ALL_DONE', 0], ['JOIN_RULE_NONE_FAILED', 0],
    ['JOIN_RULE_ANY_SUCCEEDED', 0], ['JOIN_RULE_AT_LEAST', 2]]);
  for (const bad of [0, -1, 1.5, NaN, '2', undefined]) refused(() => Join.atLeast(bad), 'at_least', /whole number >= 1/);
});

test('Graph: a repeated key is refused naming tasks[i].key, and nothing is added', () => {
  const g = new Graph('g');
  g.task('charge', spec('charge'));
  refused(() => g.task('charge', spec('other')), 'tasks[1].key', /repeats tasks\[0\]\.key "charge"/);
  refused(() => g.task('', spec('x')), 'tasks[1].key');
  g.task('ship', spec('ship'), { after: [{ key: 'charge' }] }); // still index 1
  assert.deepEqual(g.toSpec().tasks.map((t) => t.key), ['charge', 'ship']);
});

test('Graph: a dependency on a task not added before is refused naming tasks[i].depends_on[j]', () => {
  const g = new Graph('g');
  const charge = g.task('charge', spec('charge'));
  g.task('ship', spec('ship'), { after: [charge] });
  refused(() => g.task('close', spec('close'), { after: [charge, { key: 'later' }] }), 'tasks[2].depends_on[1]',
    /"later", which is no task added before this one/);
  refused(() => g.task('close', spec('close'), { after: [{ key: 'close' }] }), 'tasks[2].depends_on[0]'); // itself
  refused(() => g.task('close', spec('close'), { after: [charge, charge.onFailure('ignore')] }), 'tasks[2].depends_on[1]',
    /repeats tasks\[2\]\.depends_on\[0\]/);
  const other = new Graph('other').task('charge', spec('charge'));
  refused(() => g.task('close', spec('close'), { after: [other] }), 'tasks[2].depends_on[0]', /another graph/);
  refused(() => g.task('close', spec('close'), { after: [{ key: 'charge', onFailure: 'retry' }] }),
    'tasks[2].depends_on[0].on_failure', /^must be skip, ignore or continue, got "retry"$/);
  refused(() => g.task('close', spec('close'), { after: [charge], join: { rule: 'most' } }), 'tasks[2].join.rule');
  refused(() => g.task('close', spec('close', [1])), 'tasks[2].task.payload'); // the spec's own check, prefixed
  assert.deepEqual(g.toSpec().tasks.map((t) => t.key), ['charge', 'ship']); // none of them was added
});

test('Graph: every failure policy goes on the wire as itself, continue too', () => {
  const g = new Graph('receipt-7');
  const charge = g.task('charge', spec('charge'));
  g.task('receipt', spec('receipt'), { after: [charge.onFailure('continue')] });
  g.task('close', spec('close'), { after: [charge.onFailure('skip'), { key: 'receipt', onFailure: 'ignore' }] });
  assert.deepEqual(graphToWire(g.toSpec()).tasks.map((t) => t.depends_on), [
    [],
    [{ key: 'charge', on_failure: 'ON_FAILURE_CONTINUE' }],
    [{ key: 'charge', on_failure: 'ON_FAILURE_SKIP' }, { key: 'receipt', on_failure: 'ON_FAILURE_IGNORE' }]]);
});

test('Graph: an empty graph id or graph is refused', () => {
  refused(() => new Graph(''), 'graph_id');
  refused(() => new Graph('g').toSpec(), 'tasks', /at least one task/);
  refused(() => graphToWire({ namespace: 'shop', graphId: 'g', tasks: 'x' }), 'tasks');
});

// ---- a plain GraphSpec: only what the wire cannot carry ----

test('graphToWire: a plain spec goes as it is (a cycle is the server\'s to refuse); wire-level problems name the field', () => {
  const cyclic = { namespace: 'shop', graphId: 'c', tasks: [
    { key: 'a', task: spec('t'), after: [{ key: 'b' }] },
    { key: 'b', task: spec('t'), after: [{ key: 'a', onFailure: 'ignore' }], join: { rule: 'at_least', atLeast: 1 } },
  ] };
  const req = graphToWire(cyclic, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  assert.deepEqual(req.tasks.map((t) => [t.key, t.depends_on, t.join]), [
    ['a', [{ key: 'b', on_failure: 'ON_FAILURE_SKIP' }], { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 }],
    ['b', [{ key: 'a', on_failure: 'ON_FAILURE_IGNORE' }], { rule: 'JOIN_RULE_AT_LEAST', at_least: 1 }]]);
  assert.ok(req.tasks.every((t) => t.task.trace_id === '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'));
  const withTask = (task) => ({ namespace: 'shop', graphId: 'g', tasks: [{ key: 'a', task: spec('t') }, task] });
  refused(() => graphToWire(withTask({ key: 'b', task: spec('t'), after: [{ key: 'a', onFailure: 'SKIP' }] })),
    'tasks[1].depends_on[0].on_failure');
  refused(() => graphToWire(withTask({ key: 'b', task: spec('t'), after: [{}] })), 'tasks[1].depends_on[0].key');
  refused(() => graphToWire(withTask({ key: 'b', task: spec('t'), join: { rule: 'at_least', atLeast: -1 } })),
    'tasks[1].join.at_least');
  refused(() => graphToWire(withTask({ key: 'b', task: { ...spec('t'), delayMs: -5 } })), 'tasks[1].task.delayMs');
  refused(() => graphToWire(withTask({ key: 7, task: spec('t') })), 'tasks[1].key');
});

// ---- answers ----

const REF = (key, state = 'TASK_STATE_WAITING') => ({ key, task_id: `id-${key}`, state, slot: 3 });

test('submittedGraphFromWire: tasks by key in order, states mapped', () => {
  const s = submittedGraphFromWire({ graph_id: 'g', duplicate: true, tasks: [REF('charge', 'TASK_STATE_QUEUED'), REF('constructor')] });
  assert.equal(s.duplicate, true);
  assert.deepEqual([...s.tasks.keys()], ['charge', 'constructor']);
  assert.deepEqual(s.tasks.get('charge'), { key: 'charge', taskId: 'id-charge', state: 'queued', slot: 3 });
  assert.equal(s.tasks.get('constructor').state, 'waiting');
  assert.throws(() => submittedGraphFromWire({ graph_id: 'g', duplicate: false, tasks: [REF('a', 'TASK_STATE_NEW')] }),
    sdk.ProtocolError);
});

function wireNode(key, over = {}) {
  return { key, task_id: `id-${key}`, state: 'TASK_STATE_SUCCEEDED', attempts: 1,
    join: { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 }, depends_on: [], reason: '', result_json: '', waiting: '', ...over };
}

test('graphInfoFromWire: states, edges, joins, results decoded (null when none)', () => {
  const g = graphInfoFromWire({ graph_id: 'g', namespace: 'shop', state: 'running', counts: { succeeded: 1, waiting: 1 }, nodes: [
    wireNode('charge', { result_json: '{"type":"charge","n":[1,2]}' }),
    wireNode('close', { state: 'TASK_STATE_WAITING', attempts: 0, join: { rule: 'JOIN_RULE_AT_LEAST', at_least: 1 },
      waiting: 'for 1 of 2 parent(s): ship (running)', depends_on: [
        { parent_key: 'charge', on_failure: 'ON_FAILURE_IGNORE', outcome: 'succeeded' },
        { parent_key: 'ship', on_failure: 'ON_FAILURE_UNSPECIFIED', outcome: '' },
        { parent_key: 'receipt', on_failure: 'ON_FAILURE_CONTINUE', outcome: 'continued' }] }),
    wireNode('plain', { join: null }),
  ] });
  assert.deepEqual([g.graphId, g.namespace, g.state, g.counts], ['g', 'shop', 'running', { succeeded: 1, waiting: 1 }]);
  assert.deepEqual([...g.nodes.keys()], ['charge', 'close', 'plain']);
  const charge = g.nodes.get('charge');
  assert.deepEqual([charge.result, charge.resultJson], [{ type: 'charge', n: [1, 2] }, '{"type":"charge","n":[1,2]}']);
  const close = g.nodes.get('close');
  assert.deepEqual(close, { key: 'close', taskId: 'id-close', state: 'waiting', attempts: 0, join: { rule: 'at_least', atLeast: 1 },
    dependsOn: [{ parentKey: 'charge', onFailure: 'ignore', outcome: 'succeeded' }, { parentKey: 'ship', onFailure: 'skip', outcome: '' },
      { parentKey: 'receipt', onFailure: 'continue', outcome: 'continued' }],
    reason: '', waiting: 'for 1 of 2 parent(s): ship (running)', resultJson: '', result: null });
  assert.deepEqual(g.nodes.get('plain').join, { rule: 'all_succeeded', atLeast: 0 });
});

test('graphInfoFromWire: what this SDK cannot read is a ProtocolError', () => {
  for (const over of [{ result_json: '{nope' }, { state: 'TASK_STATE_LATER' }, { join: { rule: 'JOIN_RULE_MAJORITY', at_least: 0 } },
    { depends_on: [{ parent_key: 'a', on_failure: 'ON_FAILURE_RETRY', outcome: '' }] }]) {
    assert.throws(() => graphInfoFromWire({ graph_id: 'g', namespace: 'shop', state: 'running', counts: {}, nodes: [wireNode('x', over)] }),
      sdk.ProtocolError, JSON.stringify(over));
  }
});

// ---- the client against a fake GraphService ----

const echoSubmit = (req) => ({ graph_id: req.graph_id, duplicate: false, tasks: req.tasks.map((t) => REF(t.key)) });

test('submitGraph and getGraph: what is sent over the real wire, what comes back', async () => {
  const node = await fakeGraphNode('n0', {
    SubmitGraph: echoSubmit,
    GetGraph: (req) => ({ graph_id: req.graph_id, namespace: req.namespace, state: 'finished', counts: { succeeded: 1 },
      nodes: [wireNode('charge', { result_json: req.with_results ? '{"ok":true}' : '' })] }),
  });
  const client = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, token: 'trk_graph' });
  try {
    const s = await client.submitGraph(order());
    assert.deepEqual([s.graphId, s.duplicate, [...s.tasks.keys()]], ['order-7', false, ['charge', 'ship', 'email', 'close']]);
    const sent = node.calls[0].request;
    assert.deepEqual([sent.namespace, sent.graph_id, sent.tasks.length], ['shop', 'order-7', 4]);
    assert.deepEqual(sent.tasks[3].depends_on, [{ key: 'ship', on_failure: 'ON_FAILURE_SKIP' }, { key: 'email', on_failure: 'ON_FAILURE_IGNORE' }]);
    assert.deepEqual(sent.tasks[3].join, { rule: 'JOIN_RULE_NONE_FAILED', at_least: 0 });
    await client.submitGraph({ namespace: 'shop', graphId: 'plain', tasks: [{ key: 'a', task: spec('t') }] }); // a GraphSpec too

    assert.equal((await client.getGraph('shop', 'order-7')).nodes.get('charge').result, null);
    assert.deepEqual((await client.getGraph('shop', 'order-7', { withResults: true })).nodes.get('charge').result, { ok: true });
    assert.deepEqual(node.calls.slice(2).map((c) => [c.method, c.request]), [
      ['GetGraph', { namespace: 'shop', graph_id: 'order-7', with_results: false }],
      ['GetGraph', { namespace: 'shop', graph_id: 'order-7', with_results: true }]]);
    assert.ok(node.calls.every((c) => c.authorization[0] === 'Bearer trk_graph'));

    // Refused on the client: nothing sent.
    await assert.rejects(client.submitGraph(new Graph('empty')), ValidationError);
    await assert.rejects(client.getGraph('shop', 42), ValidationError);
    assert.equal(node.calls.length, 4);
  } finally {
    client.close();
    await node.close();
  }
});

test('graph refusals come out as the client\'s RpcError classes, the field named', async () => {
  const node = await fakeGraphNode('n0', {
    SubmitGraph: () => { throw { code: grpc.status.INVALID_ARGUMENT, details: 'tasks[0].depends_on[0]: closes the cycle a -> b -> a' }; },
    GetGraph: () => { throw { code: grpc.status.NOT_FOUND, details: 'graph shop/x: not found' }; },
  });
  const client = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000 });
  try {
    const bad = await client.submitGraph(order()).catch((e) => e);
    assert.ok(bad instanceof sdk.InvalidArgumentError, String(bad));
    assert.deepEqual([bad.field, bad.problem], ['tasks[0].depends_on[0]', 'closes the cycle a -> b -> a']);
    assert.ok((await client.getGraph('shop', 'x').catch((e) => e)) instanceof sdk.NotFoundError);
  } finally {
    client.close();
    await node.close();
  }
});

test('UNAVAILABLE: submitGraph (idempotent by graph id) and getGraph are tried on the next node; a short answer is a ProtocolError', async () => {
  const down = () => { throw { code: grpc.status.UNAVAILABLE, details: 'restarting' }; };
  const a = await fakeGraphNode('a', { SubmitGraph: down, GetGraph: down });
  const b = await fakeGraphNode('b', {
    SubmitGraph: (req) => ({ ...echoSubmit(req), tasks: req.graph_id === 'short' ? [] : echoSubmit(req).tasks }),
    GetGraph: (req) => ({ graph_id: req.graph_id, namespace: req.namespace, state: 'running', counts: {}, nodes: [] }),
  });
  const client = new sdk.Client({ nodes: [a.address, b.address], rpcTimeoutMs: 5_000 });
  try {
    assert.equal((await client.submitGraph(order())).graphId, 'order-7'); // a, then b
    assert.equal((await client.getGraph('shop', 'order-7')).state, 'running'); // a, then b
    await assert.rejects(client.submitGraph(order('short')), sdk.ProtocolError);
    assert.deepEqual([a.calls.length, b.calls.length], [3, 3]);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});

test('cancelGraph: the mode and reason sent over the real wire, what comes back, the errors mapped', async () => {
  const node = await fakeGraphNode('n0', {
    CancelGraph: (req) => {
      if (req.graph_id === 'nope') throw { code: grpc.status.NOT_FOUND, details: 'graph shop/nope: not found' };
      if (req.reason.length > 1000) throw { code: grpc.status.INVALID_ARGUMENT, details: `reason: is ${req.reason.length} characters, at most 1000` };
      return req.mode === 'CANCEL_MODE_IMMEDIATE' ? { cancelled: 3, running: [] } : { cancelled: 2, running: ['ship'] };
    },
  });
  const client = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, token: 'trk_graph' });
  try {
    assert.deepEqual(await client.cancelGraph('shop', 'order-7'), { cancelled: 2, running: ['ship'] });
    assert.deepEqual(await client.cancelGraph('shop', 'order-7', { mode: 'immediate', reason: 'customer left' }), { cancelled: 3, running: [] });
    assert.deepEqual(await client.cancelGraph('shop', 'order-7', { mode: 'graceful' }), { cancelled: 2, running: ['ship'] });
    assert.deepEqual(node.calls.map((c) => [c.method, c.request]), [
      ['CancelGraph', { namespace: 'shop', graph_id: 'order-7', mode: 'CANCEL_MODE_GRACEFUL', reason: '' }],
      ['CancelGraph', { namespace: 'shop', graph_id: 'order-7', mode: 'CANCEL_MODE_IMMEDIATE', reason: 'customer left' }],
      ['CancelGraph', { namespace: 'shop', graph_id: 'order-7', mode: 'CANCEL_MODE_GRACEFUL', reason: '' }]]);
    assert.ok(node.calls.every((c) => c.authorization[0] === 'Bearer trk_graph'));

    // Refused on the client, naming the field: nothing sent.
    for (const [options, field] of [[{ mode: 'hard' }, 'mode'], [{ mode: 'IMMEDIATE' }, 'mode'], [{ mode: null }, 'mode'],
      [{ reason: 7 }, 'reason']]) {
      await assert.rejects(client.cancelGraph('shop', 'order-7', options), (e) => e instanceof ValidationError && e.field === field,
        JSON.stringify(options));
    }
    const bad = await client.cancelGraph('shop', 'order-7', { mode: 'hard' }).catch((e) => e);
    assert.equal(bad.problem, 'must be graceful or immediate, got "hard"');
    await assert.rejects(client.cancelGraph('shop', 42), ValidationError);
    assert.equal(node.calls.length, 3);

    // The server's refusals are the client's RpcError classes.
    assert.ok((await client.cancelGraph('shop', 'nope').catch((e) => e)) instanceof sdk.NotFoundError);
    const long = await client.cancelGraph('shop', 'order-7', { reason: 'x'.repeat(1001) }).catch((e) => e);
    assert.ok(long instanceof sdk.InvalidArgumentError, String(long));
    assert.deepEqual([long.field, long.problem], ['reason', 'is 1001 characters, at most 1000']);
  } finally {
    client.close();
    await node.close();
  }
});

test('UNAVAILABLE: cancelGraph (a repeat cancels nothing more) is tried on the next node', async () => {
  const a = await fakeGraphNode('a', { CancelGraph: () => { throw { code: grpc.status.UNAVAILABLE, details: 'restarting' }; } });
  const b = await fakeGraphNode('b', { CancelGraph: () => ({ cancelled: 1, running: [] }) });
  const client = new sdk.Client({ nodes: [a.address, b.address], rpcTimeoutMs: 5_000 });
  try {
    assert.deepEqual(await client.cancelGraph('shop', 'order-7'), { cancelled: 1, running: [] });
    assert.deepEqual([a.calls.length, b.calls.length], [1, 1]);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});
