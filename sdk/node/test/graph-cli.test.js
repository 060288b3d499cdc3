'use strict';
// `cli.js graph submit|get|cancel` and the executor's `graph-results` behaviour
// (src/cli-graph.ts): argument parsing, GRAPH.json -> GraphSpec, the JSON
// lines (the contract shared with Go and Java, tests/integration/test_sdk_graphs.py),
// and the commands against an in-process fake GraphService.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const sdk = require('../dist/index');
const { cancelledGraphJson, graphArgs, graphFileSpec, graphInfoJson, graphResultsHandler, submittedGraphJson } = require('../dist/cli-graph');
const { handlerFor } = require('../dist/cli');
const { cancelledGraphFromWire, graphInfoFromWire, submittedGraphFromWire } = require('../dist/graph-info');
const { graphToWire } = require('../dist/graph');
const { parentResultsFromWire } = require('../dist/result');
const { fakeGraphNode } = require('./helpers');

const CLI = path.join(__dirname, '..', 'dist', 'cli.js');
const run = promisify(execFile);

/** The integration test's graph file. */
const ORDER = { namespace: 'shop', graph_id: 'order-7', tasks: [
  { key: 'charge', task_type: 'charge', payload: { order: 7 } },
  { key: 'ship', task_type: 'ship', after: [{ key: 'charge' }] },
  { key: 'email', task_type: 'email', payload: { fail: true }, after: [{ key: 'charge' }] },
  { key: 'close', task_type: 'close', after: [{ key: 'ship' }, { key: 'email', on_failure: 'ignore' }], join: { rule: 'all_succeeded' } },
] };

// ---- parsing ----

test('graphArgs: each action\'s flags', () => {
  const nodes = ['--nodes', '127.0.0.1:7070'];
  assert.deepEqual(graphArgs(['submit', ...nodes, '--file', 'g.json']), { action: 'submit', nodes: '127.0.0.1:7070',
    rpcTimeoutMs: 10_000, file: 'g.json', namespace: '', graphId: '', withResults: false, mode: 'graceful', reason: '' });
  assert.deepEqual(graphArgs(['get', ...nodes, '--namespace', 'shop', '--graph-id', 'order-7', '--with-results', '--rpc-timeout-ms', '500']),
    { action: 'get', nodes: '127.0.0.1:7070', rpcTimeoutMs: 500, file: '', namespace: 'shop', graphId: 'order-7', withResults: true,
      mode: 'graceful', reason: '' });
  assert.equal(graphArgs(['get', ...nodes, '--namespace', 'shop', '--graph-id', 'g']).withResults, false);
  assert.deepEqual(graphArgs(['cancel', ...nodes, '--namespace', 'shop', '--graph-id', 'order-7', '--mode', 'immediate',
    '--reason', 'customer left']), { action: 'cancel', nodes: '127.0.0.1:7070', rpcTimeoutMs: 10_000, file: '', namespace: 'shop',
    graphId: 'order-7', withResults: false, mode: 'immediate', reason: 'customer left' });
  const cancel = graphArgs(['cancel', ...nodes, '--namespace', 'shop', '--graph-id', 'g']);
  assert.deepEqual([cancel.mode, cancel.reason], ['graceful', '']);
});

test('graphArgs: a bad command line throws', () => {
  const nodes = ['--nodes', '127.0.0.1:7070'];
  for (const args of [
    [],
    ['list', ...nodes],
    ['submit', '--file', 'g.json'], // no --nodes
    ['submit', ...nodes], // no --file
    ['get', ...nodes, '--namespace', 'shop'], // no --graph-id
    ['get', ...nodes, '--graph-id', 'g'], // no --namespace
    ['submit', ...nodes, '--file', 'g.json', '--with-results'], // not an option of submit
    ['get', ...nodes, '--namespace', 'shop', '--graph-id', 'g', '--file', 'x'], // nor --file of get
    ['get', ...nodes, '--namespace', 'shop', '--graph-id', 'g', '--rpc-timeout-ms', 'soon'],
    ['get', ...nodes, '--namespace', 'shop', '--graph-id', 'g', 'extra'],
    ['cancel', ...nodes, '--namespace', 'shop'], // no --graph-id
    ['cancel', ...nodes, '--graph-id', 'g'], // no --namespace
    ['cancel', ...nodes, '--namespace', 'shop', '--graph-id', 'g', '--with-results'], // an option of get
    ['get', ...nodes, '--namespace', 'shop', '--graph-id', 'g', '--mode', 'graceful'], // an option of cancel
  ]) {
    assert.throws(() => graphArgs(args), Error, args.join(' '));
  }
  for (const mode of ['hard', 'IMMEDIATE', '']) {
    assert.throws(() => graphArgs(['cancel', ...nodes, '--namespace', 'shop', '--graph-id', 'g', '--mode', mode]),
      (e) => e.constructor.name === 'UsageError' && e.message === `--mode: must be graceful or immediate, got ${JSON.stringify(mode)}`, mode);
  }
});

test('graphFileSpec: the contract\'s file as a GraphSpec, every task of the graph\'s namespace', () => {
  const spec = graphFileSpec(JSON.stringify(ORDER));
  assert.deepEqual(spec, { namespace: 'shop', graphId: 'order-7', tasks: [
    { key: 'charge', task: { namespace: 'shop', taskType: 'charge', payload: { order: 7 } }, after: [] },
    { key: 'ship', task: { namespace: 'shop', taskType: 'ship', payload: undefined }, after: [{ key: 'charge' }] },
    { key: 'email', task: { namespace: 'shop', taskType: 'email', payload: { fail: true } }, after: [{ key: 'charge' }] },
    { key: 'close', task: { namespace: 'shop', taskType: 'close', payload: undefined },
      after: [{ key: 'ship' }, { key: 'email', onFailure: 'ignore' }], join: { rule: 'all_succeeded', atLeast: 0 } },
  ] });
  const req = graphToWire(spec);
  assert.deepEqual(req.tasks[3].depends_on, [{ key: 'ship', on_failure: 'ON_FAILURE_SKIP' }, { key: 'email', on_failure: 'ON_FAILURE_IGNORE' }]);
  assert.equal(req.tasks[1].task.payload_json, '{}');
  // A dependency on a later task goes on as it is: the server names the cycle.
  const cyclic = structuredClone(ORDER);
  cyclic.tasks[0].after = [{ key: 'close' }];
  assert.deepEqual(graphToWire(graphFileSpec(JSON.stringify(cyclic))).tasks[0].depends_on, [{ key: 'close', on_failure: 'ON_FAILURE_SKIP' }]);
  // continue goes on as skip and ignore do.
  const receipt = structuredClone(ORDER);
  receipt.tasks[3].after[1].on_failure = 'continue';
  assert.deepEqual(graphToWire(graphFileSpec(JSON.stringify(receipt))).tasks[3].depends_on[1], { key: 'email', on_failure: 'ON_FAILURE_CONTINUE' });
  const atLeast = graphFileSpec(JSON.stringify({ ...ORDER, tasks: [{ key: 'a', task_type: 't', join: { rule: 'at_least', at_least: 2 } }] }));
  assert.deepEqual(atLeast.tasks[0].join, { rule: 'at_least', atLeast: 2 });
});

test('graphFileSpec: a file that is not the contract\'s shape is a usage error naming where', () => {
  for (const [text, where] of [
    ['{nope', /--file: not JSON/],
    ['[1]', /--file: the graph: must be a JSON object/],
    [JSON.stringify({ ...ORDER, graphId: 'x' }), /--file: the graph: unknown key "graphId"/],
    [JSON.stringify({ ...ORDER, tasks: {} }), /--file: tasks: must be a JSON array/],
    [JSON.stringify({ ...ORDER, tasks: ['charge'] }), /--file: tasks\[0\]: must be a JSON object/],
    [JSON.stringify({ ...ORDER, tasks: [{ key: 'a', task_type: 't', depends_on: [] }] }), /--file: tasks\[0\]: unknown key "depends_on"/],
    [JSON.stringify({ ...ORDER, tasks: [{ key: 'a', task_type: 't', after: [{ key: 'b', policy: 'skip' }] }] }),
      /--file: tasks\[0\]\.after\[0\]: unknown key "policy"/],
    [JSON.stringify({ ...ORDER, tasks: [{ key: 'a', task_type: 't', join: 'all_done' }] }), /--file: tasks\[0\]\.join: must be a JSON object/],
  ]) {
    assert.throws(() => graphFileSpec(text), (e) => e.constructor.name === 'UsageError' && where.test(e.message), text);
  }
});

// ---- the JSON lines ----

test('submittedGraphJson: exactly graph_id, duplicate, tasks by key in order', () => {
  const out = submittedGraphJson(submittedGraphFromWire({ graph_id: 'order-7', duplicate: false, tasks: [
    { key: 'charge', task_id: 'id-c', state: 'TASK_STATE_QUEUED', slot: 4 },
    { key: 'ship', task_id: 'id-s', state: 'TASK_STATE_WAITING', slot: 9 }] }));
  assert.equal(JSON.stringify(out), '{"graph_id":"order-7","duplicate":false,"tasks":{'
    + '"charge":{"task_id":"id-c","state":"queued","slot":4},"ship":{"task_id":"id-s","state":"waiting","slot":9}}}');
});

test('graphInfoJson: the contract\'s keys; result decoded, null when none; edges as the server says', () => {
  const out = graphInfoJson(graphInfoFromWire({ graph_id: 'order-7', namespace: 'shop', state: 'finished',
    counts: { succeeded: 1, dead_lettered: 1 }, nodes: [
      { key: 'charge', task_id: 'id-c', state: 'TASK_STATE_SUCCEEDED', attempts: 1, join: null, depends_on: [], reason: '',
        result_json: '{"type":"charge","saw":{}}', waiting: '' },
      { key: 'email', task_id: 'id-e', state: 'TASK_STATE_DEAD_LETTERED', attempts: 1, join: { rule: 'JOIN_RULE_ALL_SUCCEEDED', at_least: 0 },
        depends_on: [{ parent_key: 'charge', on_failure: 'ON_FAILURE_IGNORE', outcome: 'succeeded' }],
        reason: 'NonRetryableError: no', result_json: '', waiting: '' },
      { key: 'receipt', task_id: 'id-r', state: 'TASK_STATE_SUCCEEDED', attempts: 1, join: null,
        depends_on: [{ parent_key: 'email', on_failure: 'ON_FAILURE_CONTINUE', outcome: 'continued' }],
        reason: '', result_json: '', waiting: '' }] }));
  assert.deepEqual(Object.keys(out), ['graph_id', 'namespace', 'state', 'counts', 'nodes']);
  assert.deepEqual(out.nodes.email, { task_id: 'id-e', state: 'dead_lettered', attempts: 1, reason: 'NonRetryableError: no',
    waiting: '', result: null, depends_on: [{ parent_key: 'charge', on_failure: 'ignore', outcome: 'succeeded' }] });
  assert.deepEqual(out.nodes.receipt.depends_on, [{ parent_key: 'email', on_failure: 'continue', outcome: 'continued' }]);
  assert.deepEqual(out.nodes.charge.result, { type: 'charge', saw: {} });
  assert.deepEqual([out.state, out.counts], ['finished', { succeeded: 1, dead_lettered: 1 }]);
});

test('cancelledGraphJson: exactly cancelled, running', () => {
  assert.equal(JSON.stringify(cancelledGraphJson(cancelledGraphFromWire({ cancelled: 2, running: ['ship', 'email'] }))),
    '{"cancelled":2,"running":["ship","email"]}');
  assert.equal(JSON.stringify(cancelledGraphJson(cancelledGraphFromWire({ cancelled: 0, running: [] }))), '{"cancelled":0,"running":[]}');
});

// ---- graph-results ----

/** A context as the runner makes one, for a handler called directly. */
function ctxOf(taskType, payload, parents = []) {
  return { taskId: `id-${taskType}`, taskType, payload, parentResults: parentResultsFromWire(parents, false) };
}

test('graph-results: prints its run, returns what it saw of its parents; {"fail": true} fails non-retryably after printing', async () => {
  const lines = [];
  const handler = handlerFor('graph-results', (l) => lines.push(l));
  assert.deepEqual(await handler(ctxOf('charge', { order: 7 })), { type: 'charge', saw: {} });
  const closeParents = [
    { key: 'ship', task_id: 'id-ship', outcome: 'succeeded', result_json: '{"type":"ship","saw":{}}', error: '' },
    { key: 'email', task_id: 'id-email', outcome: 'ignored', result_json: '', error: 'NonRetryableError: x' }];
  const saw = { ship: { outcome: 'succeeded', result: { type: 'ship', saw: {} } }, email: { outcome: 'ignored', result: null } };
  assert.deepEqual(await handler(ctxOf('close', {}, closeParents)), { type: 'close', saw });
  assert.throws(() => handler(ctxOf('email', { fail: true })), sdk.NonRetryableError);
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [
    { graph_run: 'charge', task_id: 'id-charge', parents: {} },
    { graph_run: 'close', task_id: 'id-close', parents: saw },
    { graph_run: 'email', task_id: 'id-email', parents: {} }]);
  assert.ok(lines.every((l) => l.startsWith('{"graph_run"'))); // how the test picks them out of stdout
  assert.equal(typeof graphResultsHandler(() => undefined), 'function');
  assert.throws(() => handlerFor('graph'), /graph-results/);
});

// ---- the commands ----

async function cli(args) {
  const env = { ...process.env };
  for (const k of ['TASKRING_TOKEN', 'TASKRING_CA_FILE', 'TASKRING_CLIENT_CERT_FILE', 'TASKRING_CLIENT_KEY_FILE']) delete env[k];
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'graph', ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('cli graph: submit and get print one JSON line; a refusal exits 1 with the status and message on stderr', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskring-node-graph-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'graph.json');
  const node = await fakeGraphNode('n0', {
    SubmitGraph: (req) => {
      if (req.tasks[0].depends_on.length > 0) {
        throw { code: grpc.status.INVALID_ARGUMENT, details: 'tasks[1].depends_on[0]: closes the cycle ship -> close -> charge -> ship' };
      }
      return { graph_id: req.graph_id, duplicate: false,
        tasks: req.tasks.map((x, i) => ({ key: x.key, task_id: `id-${x.key}`, state: i ? 'TASK_STATE_WAITING' : 'TASK_STATE_QUEUED', slot: i })) };
    },
    GetGraph: (req) => {
      if (req.graph_id !== 'order-7') throw { code: grpc.status.NOT_FOUND, details: `graph ${req.namespace}/${req.graph_id}: not found` };
      return { graph_id: req.graph_id, namespace: req.namespace, state: 'running', counts: { waiting: 1 }, nodes: [
        { key: 'charge', task_id: 'id-charge', state: 'TASK_STATE_WAITING', attempts: 0, depends_on: [], reason: '',
          result_json: req.with_results ? '{"n":1}' : '', waiting: 'for its graph to be complete' }] };
    },
  });
  try {
    fs.writeFileSync(file, JSON.stringify(ORDER));
    const submitted = await cli(['submit', '--nodes', node.address, '--file', file]);
    assert.equal(submitted.code, 0, submitted.stderr);
    const out = JSON.parse(submitted.stdout);
    assert.equal(submitted.stdout.trim().split('\n').length, 1);
    assert.deepEqual([out.graph_id, out.duplicate, Object.keys(out.tasks)], ['order-7', false, ['charge', 'ship', 'email', 'close']]);
    assert.deepEqual(out.tasks.ship, { task_id: 'id-ship', state: 'waiting', slot: 1 });
    const sent = node.calls[0].request;
    assert.deepEqual([sent.namespace, sent.tasks[0].task.namespace, sent.tasks[2].task.payload_json], ['shop', 'shop', '{"fail":true}']);

    const got = await cli(['get', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'order-7', '--with-results']);
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout), { graph_id: 'order-7', namespace: 'shop', state: 'running', counts: { waiting: 1 },
      nodes: { charge: { task_id: 'id-charge', state: 'waiting', attempts: 0, reason: '', waiting: 'for its graph to be complete',
        result: { n: 1 }, depends_on: [] } } });
    assert.equal(node.calls.at(-1).request.with_results, true);

    const cyclic = structuredClone(ORDER);
    cyclic.tasks[0].after = [{ key: 'close' }];
    fs.writeFileSync(file, JSON.stringify(cyclic));
    const refused = await cli(['submit', '--nodes', node.address, '--file', file]);
    assert.deepEqual([refused.code, refused.stdout], [1, '']);
    assert.equal(refused.stderr, 'graph submit: INVALID_ARGUMENT: tasks[1].depends_on[0]: closes the cycle ship -> close -> charge -> ship\n');
    const missing = await cli(['get', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^graph get: NOT_FOUND: graph shop\/nope: not found/);

    // Refused by the SDK before sending: exit 1, the field named.
    fs.writeFileSync(file, JSON.stringify({ ...ORDER, tasks: [{ key: 'a', task_type: 't', after: [{ key: 'b', on_failure: 'never' }] }] }));
    const local = await cli(['submit', '--nodes', node.address, '--file', file]);
    assert.equal(local.code, 1);
    assert.match(local.stderr, /^graph submit: tasks\[0\]\.depends_on\[0\]\.on_failure: must be skip, ignore or continue/);
    assert.equal(node.calls.length, 4);

    // A bad command line or file: exit 2 with the usage, nothing sent.
    fs.writeFileSync(file, '{not json');
    for (const args of [['submit', '--nodes', node.address, '--file', file], ['submit', '--nodes', node.address, '--file', path.join(dir, 'none.json')],
      ['submit', '--nodes', node.address], ['get', '--nodes', node.address, '--namespace', 'shop'], ['rename']]) {
      const r = await cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
    assert.equal(node.calls.length, 4);
  } finally {
    await node.close();
  }
});

test('cli graph cancel: sends the mode and reason, prints one JSON line; a refusal exits 1; a bad --mode exits 2 unsent', async () => {
  const node = await fakeGraphNode('n0', {
    CancelGraph: (req) => {
      if (req.graph_id !== 'order-7') throw { code: grpc.status.NOT_FOUND, details: `graph ${req.namespace}/${req.graph_id}: not found` };
      return req.mode === 'CANCEL_MODE_IMMEDIATE' ? { cancelled: 3, running: [] } : { cancelled: 2, running: ['ship', 'email'] };
    },
  });
  try {
    const graceful = await cli(['cancel', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'order-7', '--reason', 'customer left']);
    assert.equal(graceful.code, 0, graceful.stderr);
    assert.equal(graceful.stdout, '{"cancelled":2,"running":["ship","email"]}\n');
    assert.deepEqual(node.calls[0].request, { namespace: 'shop', graph_id: 'order-7', mode: 'CANCEL_MODE_GRACEFUL', reason: 'customer left' });

    const immediate = await cli(['cancel', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'order-7', '--mode', 'immediate']);
    assert.equal(immediate.code, 0, immediate.stderr);
    assert.equal(immediate.stdout, '{"cancelled":3,"running":[]}\n');
    assert.deepEqual(node.calls[1].request, { namespace: 'shop', graph_id: 'order-7', mode: 'CANCEL_MODE_IMMEDIATE', reason: '' });

    const missing = await cli(['cancel', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'nope']);
    assert.deepEqual([missing.code, missing.stdout], [1, '']);
    assert.equal(missing.stderr, 'graph cancel: NOT_FOUND: graph shop/nope: not found\n');
    assert.equal(node.calls.length, 3);

    for (const args of [['--mode', 'hard'], ['--mode', 'IMMEDIATE'], ['--with-results']]) {
      const r = await cli(['cancel', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'order-7', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
    const bad = await cli(['cancel', '--nodes', node.address, '--namespace', 'shop', '--graph-id', 'order-7', '--mode', 'hard']);
    assert.match(bad.stderr, /^graph cancel: --mode: must be graceful or immediate, got "hard"\n/);
    assert.match(bad.stderr, /cli\.js graph cancel --nodes H:P,\.\.\. --namespace NS --graph-id ID \[--mode graceful\|immediate\] \[--reason TEXT\]/);
    assert.equal(node.calls.length, 3);
  } finally {
    await node.close();
  }
});
