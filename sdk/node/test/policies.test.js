'use strict';
// client.policies (src/policies.ts) and `cli.js policies`: the policy ->
// policy_json and TypePolicy -> TypePolicy mappings, the calls against an
// in-process fake PolicyService (what is sent, presence of if_revision over
// the real wire, the error mapping, failover, the shared channel), the CLI's
// argument parsing and its JSON lines (the contract shared with Go and Java).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { encodePolicy, revisionToWire, typePolicyFromWire } = require('../dist/policies');
const { typePolicyJson, policyArgs } = require('../dist/cli');
const { fakePolicyNode, memoryPolicies } = require('./helpers');

const CLI = path.join(__dirname, '..', 'dist', 'cli.js');
const run = promisify(execFile);

const POLICY = { retry: { max_retries: 5 }, concurrency: { per_type: 4 }, heartbeat_timeout_ms: 30_000 };

/** A TypePolicy as the server returns it (proto-loader output shape: int64 as a string). */
function wirePolicy(over = {}) {
  return {
    namespace: 'billing', task_type: 'reconcile', policy_json: JSON.stringify(POLICY), source: 'api', revision: '3',
    updated_by: 'ops-token', updated_at: '2030-01-02T03:04:05.123Z', file_policy_json: '{"retry":{"max_retries":1}}',
    ...over,
  };
}

/** A type with no entry anywhere, as Get answers it. */
const NONE = { policy_json: '{}', source: 'none', revision: '0', updated_by: '', updated_at: '', file_policy_json: '' };

// ---- policy -> wire ----

test('encodePolicy: compact JSON of a plain object', () => {
  assert.equal(encodePolicy(POLICY), '{"retry":{"max_retries":5},"concurrency":{"per_type":4},"heartbeat_timeout_ms":30000}');
  assert.equal(encodePolicy({}), '{}');
});

test('encodePolicy refuses what is not a JSON object, naming policy_json', () => {
  for (const bad of [null, undefined, [], [POLICY], 'x', '{"a":1}', 4, true, new Date(0), { x: NaN }, { x: Infinity }]) {
    assert.throws(() => encodePolicy(bad), (e) => e instanceof sdk.ValidationError && e.field === 'policy_json'
      && /policy_json: /.test(e.message), `${String(bad)}`);
  }
});

test('revisionToWire: int64 as a decimal string, 0 kept, absent/null not sent; not an integer refused', () => {
  assert.equal(revisionToWire(7), '7');
  assert.equal(revisionToWire(0), '0');
  assert.equal(revisionToWire(undefined), undefined);
  assert.equal(revisionToWire(null), undefined);
  for (const bad of [1.5, '3', NaN, 2 ** 53, 3n]) {
    assert.throws(() => revisionToWire(bad), (e) => e instanceof sdk.ValidationError && e.field === 'if_revision', String(bad));
  }
});

// ---- wire -> TypePolicy ----

test('typePolicyFromWire: an API entry over a file entry', () => {
  assert.deepEqual(typePolicyFromWire(wirePolicy()), {
    namespace: 'billing', taskType: 'reconcile', policy: POLICY, source: 'api', revision: 3, updatedBy: 'ops-token',
    updatedAt: new Date('2030-01-02T03:04:05.123Z'), filePolicy: { retry: { max_retries: 1 } },
  });
});

test('typePolicyFromWire: empty updated_at and file_policy_json are null; empty policy_json is {}', () => {
  const none = typePolicyFromWire(wirePolicy(NONE));
  assert.deepEqual(none, {
    namespace: 'billing', taskType: 'reconcile', policy: {}, source: 'none', revision: 0, updatedBy: '',
    updatedAt: null, filePolicy: null,
  });
  const fromFile = typePolicyFromWire(wirePolicy({ ...NONE, source: 'file', policy_json: '{"retry":{"max_retries":1}}',
    file_policy_json: '{"retry":{"max_retries":1}}' }));
  assert.deepEqual([fromFile.source, fromFile.policy, fromFile.filePolicy, fromFile.updatedAt],
    ['file', { retry: { max_retries: 1 } }, { retry: { max_retries: 1 } }, null]);
  assert.deepEqual(typePolicyFromWire(wirePolicy({ policy_json: '' })).policy, {});
  assert.equal(typePolicyFromWire(wirePolicy({ revision: '' })).revision, 0);
  assert.equal(typePolicyFromWire(wirePolicy({ updated_at: '2030-01-02T11:04:05+08:00' })).updatedAt.toISOString(),
    '2030-01-02T03:04:05.000Z');
});

test('typePolicyFromWire: what this SDK cannot read is a ProtocolError', () => {
  for (const over of [{ source: 'db' }, { policy_json: '[1]' }, { policy_json: 'nope' }, { file_policy_json: '"x"' },
    { updated_at: 'yesterday' }, { revision: '9007199254740993' }]) {
    assert.throws(() => typePolicyFromWire(wirePolicy(over)), sdk.ProtocolError, JSON.stringify(over));
  }
});

// ---- the client against a fake PolicyService ----

async function withNode(policy, fn, task = {}, options = {}) {
  const node = await fakePolicyNode('n0', policy, task);
  const client = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, ...options });
  try {
    await fn(client, node);
  } finally {
    client.close();
    await node.close();
  }
}

test('get and list send the reference (list: "" for every namespace)', async () => {
  await withNode({
    GetTypePolicy: (req) => wirePolicy({ namespace: req.namespace, task_type: req.task_type, ...NONE }),
    ListTypePolicies: (req) => ({ policies: req.namespace === 'none' ? [] : [wirePolicy({ task_type: 'a' }), wirePolicy({ task_type: 'b' })] }),
  }, async (client, node) => {
    const got = await client.policies.get('billing', 'unknown-type');
    assert.deepEqual([got.source, got.policy, got.revision, got.updatedAt, got.filePolicy], ['none', {}, 0, null, null]);
    assert.deepEqual((await client.policies.list()).map((p) => p.taskType), ['a', 'b']);
    assert.deepEqual(await client.policies.list('none'), []);
    assert.deepEqual(node.calls.map((c) => [c.method, c.request]), [
      ['GetTypePolicy', { namespace: 'billing', task_type: 'unknown-type' }],
      ['ListTypePolicies', { namespace: '' }],
      ['ListTypePolicies', { namespace: 'none' }],
    ]);
  });
});

test('put and delete send policy_json, reason, and if_revision only when given (0 too)', async () => {
  const echo = (req) => wirePolicy({ namespace: req.namespace, task_type: req.task_type, policy_json: req.policy_json ?? '{}' });
  await withNode({ PutTypePolicy: echo, DeleteTypePolicy: echo }, async (client, node) => {
    const put = await client.policies.put('billing', 'reconcile', POLICY, 'cap during the migration');
    assert.deepEqual(put.policy, POLICY);
    await client.policies.put('billing', 'reconcile', { concurrency: { per_type: 2 } }, 'first', 0);
    await client.policies.put('billing', 'reconcile', {}, 'again', 4);
    await client.policies.delete('billing', 'reconcile', 'done');
    await client.policies.delete('billing', 'reconcile', 'done', 5);
    const sent = node.calls.map((c) => c.request);
    assert.deepEqual(sent[0], { namespace: 'billing', task_type: 'reconcile', policy_json: JSON.stringify(POLICY),
      reason: 'cap during the migration' });
    assert.ok(!('if_revision' in sent[0])); // absent stays absent: no precondition
    assert.deepEqual([sent[1].if_revision, sent[1].policy_json], ['0', '{"concurrency":{"per_type":2}}']); // present-and-zero
    assert.equal(sent[2].if_revision, '4');
    assert.deepEqual(sent[3], { namespace: 'billing', task_type: 'reconcile', reason: 'done' });
    assert.equal(sent[4].if_revision, '5');
    assert.deepEqual(node.calls.map((c) => c.method),
      ['PutTypePolicy', 'PutTypePolicy', 'PutTypePolicy', 'DeleteTypePolicy', 'DeleteTypePolicy']);
  });
});

test('a policy that is not a JSON object is refused on the client, naming policy_json; nothing is sent', async () => {
  await withNode({ PutTypePolicy: () => wirePolicy() }, async (client, node) => {
    for (const bad of [null, [], '{"a":1}', 3, new Date(0)]) {
      const e = await client.policies.put('billing', 'reconcile', bad, 'why').catch((err) => err);
      assert.ok(e instanceof sdk.ValidationError, String(e));
      assert.equal(e.field, 'policy_json');
    }
    await assert.rejects(client.policies.put('billing', 'reconcile', {}, 'why', 1.5), sdk.ValidationError);
    await assert.rejects(client.policies.put('billing', 7, {}, 'why'), sdk.ValidationError);
    assert.equal(node.calls.length, 0);
  });
});

test('refusals come out as the client\'s RpcError classes, the field named', async () => {
  const { handlers } = memoryPolicies();
  await withNode(handlers, async (client) => {
    const bad = await client.policies.put('billing', 'reconcile', { concurrency: { per_type: 0 } }, 'r').catch((e) => e);
    assert.ok(bad instanceof sdk.InvalidArgumentError, String(bad));
    assert.equal(bad.field, 'policy_json.concurrency.per_type');
    const noReason = await client.policies.put('billing', 'reconcile', POLICY, '').catch((e) => e);
    assert.ok(noReason instanceof sdk.InvalidArgumentError, String(noReason));
    assert.equal(noReason.field, 'reason');
    const first = await client.policies.put('billing', 'reconcile', POLICY, 'r', 0);
    assert.deepEqual([first.source, first.revision, first.updatedBy], ['api', 1, 'ops-token']);
    const stale = await client.policies.put('billing', 'reconcile', POLICY, 'r', 0).catch((e) => e);
    assert.ok(stale instanceof sdk.FailedPreconditionError, String(stale));
    await client.policies.delete('billing', 'reconcile', 'r', 1);
    const gone = await client.policies.delete('billing', 'reconcile', 'r').catch((e) => e);
    assert.ok(gone instanceof sdk.NotFoundError, String(gone));
  });
  const deny = () => { throw { code: grpc.status.PERMISSION_DENIED, details: 'policy_write: not allowed in namespace billing' }; };
  await withNode({ PutTypePolicy: deny }, async (client) => {
    const e = await client.policies.put('billing', 'reconcile', POLICY, 'r').catch((err) => err);
    assert.ok(e instanceof sdk.PermissionDeniedError, String(e));
  });
});

test('policy calls carry the client\'s token', async () => {
  await withNode({ GetTypePolicy: () => wirePolicy(), PutTypePolicy: () => wirePolicy() }, async (client, node) => {
    await client.policies.get('billing', 'reconcile');
    await client.policies.put('billing', 'reconcile', POLICY, 'r');
    assert.deepEqual(node.calls.map((c) => c.authorization), [['Bearer trk_pol'], ['Bearer trk_pol']]);
  }, {}, { token: 'trk_pol' });
});

test('UNAVAILABLE: get and an unconditional put are tried on the next node; a conditional put and delete are not', async () => {
  const down = () => { throw { code: grpc.status.UNAVAILABLE, details: 'restarting' }; };
  const a = await fakePolicyNode('a', { GetTypePolicy: down, PutTypePolicy: down, DeleteTypePolicy: down });
  const ok = () => wirePolicy();
  const b = await fakePolicyNode('b', { GetTypePolicy: ok, PutTypePolicy: ok, DeleteTypePolicy: ok });
  const client = new sdk.Client({ nodes: [a.address, b.address], rpcTimeoutMs: 5_000 });
  try {
    assert.equal((await client.policies.get('billing', 'reconcile')).source, 'api'); // a, then b
    assert.equal((await client.policies.put('billing', 'reconcile', POLICY, 'r')).source, 'api'); // a, then b
    await assert.rejects(client.policies.put('billing', 'reconcile', POLICY, 'r', 3), sdk.UnavailableError); // a only
    await client.policies.delete('billing', 'reconcile', 'r'); // b's turn: served
    await assert.rejects(client.policies.delete('billing', 'reconcile', 'r'), sdk.UnavailableError); // a only
    assert.deepEqual([a.calls.map((c) => c.method), b.calls.map((c) => c.method)], [
      ['GetTypePolicy', 'PutTypePolicy', 'PutTypePolicy', 'DeleteTypePolicy'],
      ['GetTypePolicy', 'PutTypePolicy', 'DeleteTypePolicy'],
    ]);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});

test('task and policy calls share the client\'s channel: close() ends both', async () => {
  await withNode({ ListTypePolicies: () => ({ policies: [] }) }, async (client, node) => {
    await client.get('t1');
    await client.policies.list('shop');
    assert.deepEqual(node.calls.map((c) => c.method), ['GetTask', 'ListTypePolicies']);
    client.close();
    await assert.rejects(client.policies.list('shop'), sdk.RpcError);
    assert.equal(node.calls.length, 2);
  }, { GetTask: (req) => ({ task: { task_id: req.task_id, namespace: 'shop', task_type: 't' }, state: 'TASK_STATE_QUEUED' }) });
});

// ---- the CLI ----

const KEYS = ['namespace', 'task_type', 'policy', 'source', 'revision', 'updated_by', 'updated_at', 'file_policy'];

test('typePolicyJson: exactly the contract\'s keys; objects, a number, null when none', () => {
  const api = typePolicyJson(typePolicyFromWire(wirePolicy()));
  assert.deepEqual(Object.keys(api), KEYS);
  assert.deepEqual(api, {
    namespace: 'billing', task_type: 'reconcile', policy: POLICY, source: 'api', revision: 3, updated_by: 'ops-token',
    updated_at: '2030-01-02T03:04:05.123Z', file_policy: { retry: { max_retries: 1 } },
  });
  const none = typePolicyJson(typePolicyFromWire(wirePolicy(NONE)));
  assert.deepEqual(Object.keys(none), KEYS);
  assert.deepEqual(none, { namespace: 'billing', task_type: 'reconcile', policy: {}, source: 'none', revision: 0,
    updated_by: '', updated_at: null, file_policy: null });
  assert.equal(JSON.stringify(none),
    '{"namespace":"billing","task_type":"reconcile","policy":{},"source":"none","revision":0,"updated_by":"","updated_at":null,"file_policy":null}');
});

test('policyArgs: each action\'s flags', () => {
  const nodes = ['--nodes', '127.0.0.1:7070'];
  const ref = [...nodes, '--namespace', 'billing', '--type', 'reconcile'];
  assert.deepEqual(policyArgs(['put', ...ref, '--policy', '{"concurrency":{"per_type":4}}', '--reason', 'cap', '--if-revision', '0']), {
    action: 'put', nodes: '127.0.0.1:7070', rpcTimeoutMs: 10_000, namespace: 'billing', taskType: 'reconcile',
    policy: { concurrency: { per_type: 4 } }, reason: 'cap', ifRevision: 0,
  });
  const put = policyArgs(['put', ...ref, '--policy', '[1]', '--reason', '']);
  assert.deepEqual([put.policy, put.reason, put.ifRevision], [[1], '', undefined]); // the SDK's / the server's to refuse
  assert.deepEqual(policyArgs(['delete', ...ref, '--reason', 'done', '--if-revision', '12']),
    { action: 'delete', nodes: '127.0.0.1:7070', rpcTimeoutMs: 10_000, namespace: 'billing', taskType: 'reconcile',
      policy: undefined, reason: 'done', ifRevision: 12 });
  const get = policyArgs(['get', ...ref, '--rpc-timeout-ms', '500']);
  assert.deepEqual([get.action, get.namespace, get.taskType, get.rpcTimeoutMs], ['get', 'billing', 'reconcile', 500]);
  assert.deepEqual([policyArgs(['list', ...nodes]).namespace, policyArgs(['list', ...nodes, '--namespace', 'ops']).namespace],
    ['', 'ops']);
});

test('policyArgs: a bad command line throws', () => {
  const nodes = ['--nodes', '127.0.0.1:7070'];
  const ref = [...nodes, '--namespace', 'billing', '--type', 'reconcile'];
  for (const args of [
    [],
    ['rename', ...ref],
    ['get', '--namespace', 'billing', '--type', 'reconcile'], // no --nodes
    ['get', ...nodes, '--namespace', 'billing'], // no --type
    ['put', ...ref, '--reason', 'r'], // no --policy
    ['put', ...ref, '--policy', '{}'], // no --reason
    ['put', ...ref, '--policy', '{not json', '--reason', 'r'],
    ['put', ...ref, '--policy', '{}', '--reason', 'r', '--if-revision', 'two'],
    ['delete', ...ref], // no --reason
    ['delete', ...ref, '--reason', 'r', '--if-revision', '1.5'],
    ['get', ...ref, '--reason', 'r'], // not an option of get
    ['list', ...nodes, '--type', 'reconcile'], // not an option of list
    ['get', ...ref, 'extra'],
  ]) {
    assert.throws(() => policyArgs(args), Error, args.join(' '));
  }
});

/** Run `cli.js policies ...`; resolves { code, stdout, stderr } (execFile rejects on a non-zero exit). */
async function cli(args, env = {}) {
  const clean = { ...process.env };
  for (const k of ['TASKRING_TOKEN', 'TASKRING_CA_FILE', 'TASKRING_CLIENT_CERT_FILE', 'TASKRING_CLIENT_KEY_FILE']) delete clean[k];
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'policies', ...args], { env: { ...clean, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const lines = (stdout) => stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('cli policies: put, get, list, delete as JSON lines; refusals on stderr with a non-zero exit', async () => {
  const { handlers } = memoryPolicies({ file: { 'billing/reconcile': { retry: { max_retries: 1 } }, 'ops/sweep': { unique: 'x' } } });
  const node = await fakePolicyNode('n0', handlers);
  const ref = ['--nodes', node.address, '--namespace', 'billing', '--type', 'reconcile'];
  try {
    const before = await cli(['get', ...ref]);
    assert.equal(before.code, 0, before.stderr);
    assert.deepEqual(lines(before.stdout), [{ namespace: 'billing', task_type: 'reconcile', policy: { retry: { max_retries: 1 } },
      source: 'file', revision: 0, updated_by: '', updated_at: null, file_policy: { retry: { max_retries: 1 } } }]);

    const put = await cli(['put', ...ref, '--policy', '{"concurrency": {"per_type": 4}}', '--reason', 'cap it', '--if-revision', '0'],
      { TASKRING_TOKEN: 'trk_cli' });
    assert.equal(put.code, 0, put.stderr);
    const [entry, ...more] = lines(put.stdout);
    assert.equal(more.length, 0);
    assert.deepEqual(Object.keys(entry), KEYS);
    assert.deepEqual(entry, { namespace: 'billing', task_type: 'reconcile', policy: { concurrency: { per_type: 4 } },
      source: 'api', revision: 1, updated_by: 'ops-token', updated_at: '2030-01-02T03:04:05.000Z',
      file_policy: { retry: { max_retries: 1 } } });
    const sent = node.calls.at(-1);
    assert.deepEqual(sent.authorization, ['Bearer trk_cli']); // the token from the environment
    assert.deepEqual([sent.request.policy_json, sent.request.reason, sent.request.if_revision],
      ['{"concurrency":{"per_type":4}}', 'cap it', '0']);

    assert.deepEqual(lines((await cli(['get', ...ref])).stdout), [entry]);
    assert.deepEqual(node.calls.at(-1).authorization, []);
    const listed = lines((await cli(['list', '--nodes', node.address])).stdout);
    assert.deepEqual(listed.map((p) => [p.namespace, p.task_type, p.source]), [['billing', 'reconcile', 'api'], ['ops', 'sweep', 'file']]);
    assert.deepEqual(lines((await cli(['list', '--nodes', node.address, '--namespace', 'billing'])).stdout), [entry]);
    const empty = await cli(['list', '--nodes', node.address, '--namespace', 'nothing-here']);
    assert.deepEqual([empty.code, empty.stdout], [0, '']);

    const stale = await cli(['put', ...ref, '--policy', '{}', '--reason', 'r', '--if-revision', '0']);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /FAILED_PRECONDITION: /);
    assert.equal(stale.stdout, '');
    const bad = await cli(['put', ...ref, '--policy', '{"concurrency":{"per_type":-1}}', '--reason', 'r']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /INVALID_ARGUMENT: policy_json\.concurrency\.per_type: /);
    const noReason = await cli(['delete', ...ref, '--reason', '']);
    assert.equal(noReason.code, 1);
    assert.match(noReason.stderr, /INVALID_ARGUMENT: reason: /);

    const deleted = await cli(['delete', ...ref, '--reason', 'back to the file', '--if-revision', '1']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.deepEqual(lines(deleted.stdout).map((p) => [p.source, p.revision, p.updated_at]), [['file', 0, null]]);
    const again = await cli(['delete', ...ref, '--reason', 'again']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /NOT_FOUND: /);
    const none = lines((await cli(['get', '--nodes', node.address, '--namespace', 'billing', '--type', 'other'])).stdout);
    assert.deepEqual(none, [{ namespace: 'billing', task_type: 'other', policy: {}, source: 'none', revision: 0,
      updated_by: '', updated_at: null, file_policy: null }]);
  } finally {
    await node.close();
  }
});

test('cli policies: a bad command line exits 2 and sends nothing; a policy not an object exits 1 naming policy_json', async () => {
  const node = await fakePolicyNode('n0', memoryPolicies().handlers);
  const ref = ['--nodes', node.address, '--namespace', 'billing', '--type', 'reconcile'];
  try {
    for (const args of [
      ['put', ...ref, '--policy', '{not json', '--reason', 'r'],
      ['put', ...ref, '--policy', '{}'],
      ['put', ...ref, '--policy', '{}', '--reason', 'r', '--if-revision', 'x'],
      ['get', '--nodes', node.address, '--namespace', 'billing'],
      ['get', ...ref, '--policy', '{}'],
      ['rename', ...ref],
      [],
    ]) {
      const r = await cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
    assert.equal(node.calls.length, 0);
    for (const policy of ['[1]', '"x"', 'null', '4']) {
      const r = await cli(['put', ...ref, '--policy', policy, '--reason', 'r']);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /policy_json: must be a JSON object/);
    }
    assert.equal(node.calls.length, 0);
  } finally {
    await node.close();
  }
});
