'use strict';
// client.cron (src/cron.ts) and `cli.js cron`: the spec -> CronRule and
// CronRule -> info mappings, the calls against an in-process fake CronService
// (what is sent, presence of the optional fields over the real wire, the error
// mapping, failover, the shared channel), and the CLI's JSON lines.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { cronSpecToWire, cronInfoFromWire } = require('../dist/cron');
const { cronRuleJson } = require('../dist/cli');
const { fakeCronNode, memoryCron } = require('./helpers');

const CLI = path.join(__dirname, '..', 'dist', 'cli.js');
const run = promisify(execFile);

const FULL_SPEC = {
  namespace: 'billing', name: 'nightly', taskType: 'reconcile', schedule: '0 0 * * *', timeZone: 'Asia/Singapore',
  payload: { scope: 'all', n: 1 }, onRepeatedHour: 'once', onSkippedHour: 'skip', catchUp: 'all', catchUpLimit: 7,
  overlap: 'queue_one', ownerTeam: 'payments', description: 'midnight SGT', timeoutMs: 30_000, maxRetries: 2,
};

/** A rule as the server returns it (proto-loader output shape: defaults filled, optionals absent). */
function wireRule(over = {}) {
  return {
    namespace: 'billing', name: 'nightly', task_type: 'reconcile', payload_json: '{"scope":"all"}',
    schedule: '0 0 * * *', time_zone: 'Asia/Singapore', on_repeated_hour: 'once', on_skipped_hour: 'at_shift',
    catch_up: 'latest', catch_up_limit: 100, overlap: 'allow', owner_team: 'payments', description: 'd',
    paused: false, last_fire_time: '', last_fire_task_id: '', last_fire_state: 'TASK_STATE_UNSPECIFIED',
    next_fire_time: '2030-01-02T16:00:00Z', created_at: '2030-01-01T00:00:00.123Z', updated_at: '2030-01-01T00:00:01Z',
    ...over,
  };
}

// ---- spec -> wire ----

test('cronSpecToWire: a minimal spec sends empty policies, {} and no optional fields', () => {
  const rule = cronSpecToWire({ namespace: 'ns', name: 'r', taskType: 't', schedule: 'CRON_TZ=UTC 0 * * * *' });
  assert.deepEqual(rule, {
    namespace: 'ns', name: 'r', task_type: 't', payload_json: '{}', schedule: 'CRON_TZ=UTC 0 * * * *', time_zone: '',
    on_repeated_hour: '', on_skipped_hour: '', catch_up: '', catch_up_limit: 0, overlap: '', owner_team: '',
    description: '',
  });
  assert.ok(!('timeout_ms' in rule) && !('max_retries' in rule));
});

test('cronSpecToWire: every field, compact payload JSON, optionals kept (0 too), null means unset', () => {
  assert.deepEqual(cronSpecToWire(FULL_SPEC), {
    namespace: 'billing', name: 'nightly', task_type: 'reconcile', payload_json: '{"scope":"all","n":1}',
    schedule: '0 0 * * *', time_zone: 'Asia/Singapore', on_repeated_hour: 'once', on_skipped_hour: 'skip',
    catch_up: 'all', catch_up_limit: 7, overlap: 'queue_one', owner_team: 'payments', description: 'midnight SGT',
    timeout_ms: 30_000, max_retries: 2,
  });
  const zero = cronSpecToWire({ ...FULL_SPEC, timeoutMs: 0, maxRetries: 0 });
  assert.equal(zero.timeout_ms, 0);
  assert.equal(zero.max_retries, 0);
  assert.equal(cronSpecToWire({ ...FULL_SPEC, timeoutMs: 1.2 }).timeout_ms, 2); // rounded up, as Task.timeoutMs
  const unset = cronSpecToWire({ ...FULL_SPEC, timeoutMs: null, maxRetries: null, payload: null });
  assert.ok(!('timeout_ms' in unset) && !('max_retries' in unset));
  assert.equal(unset.payload_json, '{}');
});

test('cronSpecToWire refuses only what the wire cannot carry, naming the field', () => {
  const refused = (over, field) => assert.throws(() => cronSpecToWire({ ...FULL_SPEC, ...over }),
    (e) => e instanceof sdk.ValidationError && e.field === field, `${JSON.stringify(over)} -> ${field}`);
  refused({ payload: [1, 2] }, 'payload');
  refused({ payload: 'scope=all' }, 'payload');
  refused({ payload: { x: NaN } }, 'payload');
  refused({ catchUpLimit: -1 }, 'catchUpLimit');
  refused({ catchUpLimit: 2 ** 32 }, 'catchUpLimit');
  refused({ timeoutMs: -5 }, 'timeoutMs');
  refused({ timeoutMs: 2 ** 32 }, 'timeoutMs');
  refused({ maxRetries: 1.5 }, 'maxRetries');
  refused({ timeZone: 8 }, 'timeZone');
  refused({ taskType: undefined }, 'taskType');
  // The server's to judge (it names rule.time_zone, rule.schedule, ...): passed through as given.
  const judged = cronSpecToWire({ ...FULL_SPEC, timeZone: 'Mars/Olympus_Mons', schedule: 'nonsense', catchUp: 'never',
    name: 'Not A Name' });
  assert.deepEqual([judged.time_zone, judged.schedule, judged.catch_up, judged.name],
    ['Mars/Olympus_Mons', 'nonsense', 'never', 'Not A Name']);
});

// ---- wire -> info ----

test('cronInfoFromWire: times as Dates or null, payload object, no last fire -> null state', () => {
  const info = cronInfoFromWire(wireRule());
  assert.deepEqual(info, {
    spec: {
      namespace: 'billing', name: 'nightly', taskType: 'reconcile', schedule: '0 0 * * *', timeZone: 'Asia/Singapore',
      payload: { scope: 'all' }, onRepeatedHour: 'once', onSkippedHour: 'at_shift', catchUp: 'latest',
      catchUpLimit: 100, overlap: 'allow', ownerTeam: 'payments', description: 'd', timeoutMs: null, maxRetries: null,
    },
    paused: false,
    nextFireTime: new Date('2030-01-02T16:00:00Z'),
    lastFireTime: null,
    lastFireTaskId: '',
    lastFireState: null,
    createdAt: new Date('2030-01-01T00:00:00.123Z'),
    updatedAt: new Date('2030-01-01T00:00:01Z'),
  });
});

test('cronInfoFromWire: a last fire carries its state; optionals present (0 too) are kept', () => {
  const info = cronInfoFromWire(wireRule({
    last_fire_task_id: 'cron-abc-1893456000000', last_fire_time: '2030-01-01T16:00:00+00:00',
    last_fire_state: 'TASK_STATE_SUCCEEDED', timeout_ms: 0, max_retries: 3, payload_json: '', paused: true,
    next_fire_time: '',
  }));
  assert.equal(info.lastFireState, 'succeeded');
  assert.deepEqual(info.lastFireTime, new Date('2030-01-01T16:00:00Z'));
  assert.deepEqual([info.spec.timeoutMs, info.spec.maxRetries], [0, 3]);
  assert.deepEqual(info.spec.payload, {});
  assert.deepEqual([info.paused, info.nextFireTime], [true, null]);
  // The stored spec goes back to update as it came.
  const back = cronSpecToWire(info.spec);
  assert.deepEqual([back.timeout_ms, back.max_retries, back.catch_up_limit, back.on_skipped_hour], [0, 3, 100, 'at_shift']);
});

test('cronInfoFromWire: what this SDK cannot read is a ProtocolError', () => {
  assert.throws(() => cronInfoFromWire(wireRule({ next_fire_time: 'tomorrow' })), sdk.ProtocolError);
  assert.throws(() => cronInfoFromWire(wireRule({ payload_json: '[1]' })), sdk.ProtocolError);
  assert.throws(() => cronInfoFromWire(wireRule({ last_fire_task_id: 'x', last_fire_state: 'TASK_STATE_UNSPECIFIED' })),
    sdk.ProtocolError);
});

// ---- the client against a fake CronService ----

async function withNode(cron, fn, task = {}, options = {}) {
  const node = await fakeCronNode('n0', cron, task);
  const client = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, ...options });
  try {
    await fn(client, node);
  } finally {
    client.close();
    await node.close();
  }
}

test('create/update send the whole rule; optional presence survives the real wire both ways', async () => {
  await withNode({
    CreateCronRule: (req) => ({ rule: wireRule({ ...req.rule, created_at: '2030-01-01T00:00:00Z' }) }),
    UpdateCronRule: (req) => ({ rule: wireRule(req.rule) }),
  }, async (client, node) => {
    const created = await client.cron.create({ ...FULL_SPEC, timeoutMs: 0 });
    const sent = node.calls[0].request.rule;
    assert.equal(sent.timeout_ms, 0); // present-and-zero arrives as such
    assert.equal(sent.max_retries, 2);
    assert.equal(sent.payload_json, '{"scope":"all","n":1}');
    assert.deepEqual([created.spec.timeoutMs, created.spec.maxRetries], [0, 2]);
    assert.deepEqual(created.spec.payload, { scope: 'all', n: 1 });
    assert.deepEqual(created.createdAt, new Date('2030-01-01T00:00:00Z'));

    const updated = await client.cron.update({ namespace: 'billing', name: 'nightly', taskType: 'reconcile',
      schedule: '30 1 * * *', timeZone: 'Europe/London' });
    const put = node.calls[1].request.rule;
    assert.equal(node.calls[1].method, 'UpdateCronRule');
    assert.equal(put.timeout_ms, undefined); // absent stays absent: the server's default
    assert.equal(put.max_retries, undefined);
    assert.deepEqual([updated.spec.timeoutMs, updated.spec.maxRetries, updated.spec.schedule], [null, null, '30 1 * * *']);
  });
});

test('get, list, pause, resume, delete send the rule reference (list: "" for every namespace)', async () => {
  const ref = (req) => wireRule({ namespace: req.namespace, name: req.name });
  await withNode({
    GetCronRule: ref, PauseCronRule: (req) => ({ ...ref(req), paused: true, next_fire_time: '' }),
    ResumeCronRule: ref, DeleteCronRule: ref,
    ListCronRules: (req) => ({ rules: req.namespace === 'none' ? [] : [wireRule({ name: 'a' }), wireRule({ name: 'b' })] }),
  }, async (client, node) => {
    assert.equal((await client.cron.get('billing', 'r1')).spec.name, 'r1');
    const paused = await client.cron.pause('billing', 'r2');
    assert.deepEqual([paused.paused, paused.nextFireTime], [true, null]);
    assert.equal((await client.cron.resume('billing', 'r3')).paused, false);
    assert.equal((await client.cron.delete('billing', 'r4')).spec.name, 'r4');
    assert.deepEqual((await client.cron.list()).map((r) => r.spec.name), ['a', 'b']);
    assert.deepEqual(await client.cron.list('none'), []);
    assert.deepEqual(node.calls.map((c) => [c.method, c.request]), [
      ['GetCronRule', { namespace: 'billing', name: 'r1' }],
      ['PauseCronRule', { namespace: 'billing', name: 'r2' }],
      ['ResumeCronRule', { namespace: 'billing', name: 'r3' }],
      ['DeleteCronRule', { namespace: 'billing', name: 'r4' }],
      ['ListCronRules', { namespace: '' }],
      ['ListCronRules', { namespace: 'none' }],
    ]);
  });
});

test('refusals come out as the client\'s RpcError classes; a local one sends nothing', async () => {
  const refuse = (code, details) => () => { throw { code, details }; };
  await withNode({
    CreateCronRule: refuse(grpc.status.INVALID_ARGUMENT, 'rule.time_zone: unknown time zone "Mars/Olympus_Mons"'),
    UpdateCronRule: refuse(grpc.status.NOT_FOUND, 'cron rule billing/nightly not found'),
    GetCronRule: refuse(grpc.status.PERMISSION_DENIED, 'cron.write: not allowed in namespace billing'),
    DeleteCronRule: refuse(grpc.status.ALREADY_EXISTS, 'cron rule billing/nightly already exists'),
  }, async (client, node) => {
    const bad = await client.cron.create(FULL_SPEC).catch((e) => e);
    assert.ok(bad instanceof sdk.InvalidArgumentError, String(bad));
    assert.equal(bad.field, 'rule.time_zone');
    assert.equal(bad.codeName, 'INVALID_ARGUMENT');
    assert.ok((await client.cron.update(FULL_SPEC).catch((e) => e)) instanceof sdk.NotFoundError);
    assert.ok((await client.cron.get('billing', 'x').catch((e) => e)) instanceof sdk.PermissionDeniedError);
    assert.ok((await client.cron.delete('billing', 'x').catch((e) => e)) instanceof sdk.AlreadyExistsError);
    assert.equal(node.calls.length, 4);
    await assert.rejects(client.cron.create({ ...FULL_SPEC, payload: [] }), sdk.ValidationError);
    assert.equal(node.calls.length, 4);
  });
});

test('a Put response without a rule is a ProtocolError', async () => {
  await withNode({ CreateCronRule: () => ({}) }, async (client) => {
    await assert.rejects(client.cron.create(FULL_SPEC), sdk.ProtocolError);
  });
});

test('cron calls carry the client\'s token', async () => {
  await withNode({ GetCronRule: () => wireRule(), ListCronRules: () => ({ rules: [] }) }, async (client, node) => {
    await client.cron.get('billing', 'nightly');
    await client.cron.list('billing');
    assert.deepEqual(node.calls.map((c) => c.authorization), [['Bearer trk_cron'], ['Bearer trk_cron']]);
  }, {}, { token: 'trk_cron' });
});

test('UNAVAILABLE: get is tried on the next node, create is not', async () => {
  const down = () => { throw { code: grpc.status.UNAVAILABLE, details: 'restarting' }; };
  const a = await fakeCronNode('a', { GetCronRule: down, CreateCronRule: down });
  const b = await fakeCronNode('b', { GetCronRule: () => wireRule(), CreateCronRule: (req) => ({ rule: wireRule(req.rule) }) });
  const client = new sdk.Client({ nodes: [a.address, b.address], rpcTimeoutMs: 5_000 });
  try {
    assert.equal((await client.cron.get('billing', 'nightly')).spec.name, 'nightly');
    assert.deepEqual([a.calls.length, b.calls.length], [1, 1]);
    // The retry took b's turn, so the next call starts on a again: create fails there and is not retried.
    await assert.rejects(client.cron.create(FULL_SPEC), sdk.UnavailableError);
    assert.deepEqual([a.calls.map((c) => c.method), b.calls.map((c) => c.method)],
      [['GetCronRule', 'CreateCronRule'], ['GetCronRule']]);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});

test('task and cron calls share the client\'s channel: one connection, and close() ends both', async () => {
  const node = await fakeCronNode('n0', { ListCronRules: () => ({ rules: [] }) },
    { GetTask: (req) => ({ task: { task_id: req.task_id, namespace: 'shop', task_type: 't' }, state: 'TASK_STATE_QUEUED' }) });
  // A TCP relay in front of the node counts the connections the client opens.
  let connections = 0;
  const relay = net.createServer((socket) => {
    connections += 1;
    const upstream = net.connect(node.port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise((r) => relay.listen(0, '127.0.0.1', r));
  const client = new sdk.Client({ nodes: `127.0.0.1:${relay.address().port}`, rpcTimeoutMs: 5_000 });
  try {
    await client.get('t1');
    await client.cron.list('shop');
    await client.cron.list('shop');
    assert.deepEqual(node.calls.map((c) => c.method), ['GetTask', 'ListCronRules', 'ListCronRules']);
    assert.equal(connections, 1);
    // (grpc-js would pool the connection of two equal channels too; what only a shared
    // channel gives is that closing the client closes the cron stub's channel with it.)
    client.close();
    await assert.rejects(client.cron.list('shop'), sdk.RpcError);
    assert.equal(node.calls.length, 3);
  } finally {
    client.close();
    relay.close();
    await node.close();
  }
});

// ---- the CLI ----

const RULE_KEYS = ['namespace', 'name', 'task_type', 'schedule', 'time_zone', 'payload', 'on_repeated_hour',
  'on_skipped_hour', 'catch_up', 'catch_up_limit', 'overlap', 'owner_team', 'description', 'timeout_ms', 'max_retries',
  'paused', 'next_fire_time', 'last_fire_time', 'last_fire_task_id', 'last_fire_state', 'created_at', 'updated_at'];

test('cronRuleJson: the contract\'s keys; payload an object, unset and empty as null, state lowercase', () => {
  const none = cronRuleJson(cronInfoFromWire(wireRule()));
  assert.deepEqual(Object.keys(none).sort(), [...RULE_KEYS].sort());
  assert.deepEqual(none, {
    namespace: 'billing', name: 'nightly', task_type: 'reconcile', schedule: '0 0 * * *', time_zone: 'Asia/Singapore',
    payload: { scope: 'all' }, on_repeated_hour: 'once', on_skipped_hour: 'at_shift', catch_up: 'latest',
    catch_up_limit: 100, overlap: 'allow', owner_team: 'payments', description: 'd', timeout_ms: null, max_retries: null,
    paused: false, next_fire_time: '2030-01-02T16:00:00.000Z', last_fire_time: null, last_fire_task_id: '',
    last_fire_state: null, created_at: '2030-01-01T00:00:00.123Z', updated_at: '2030-01-01T00:00:01.000Z',
  });
  const fired = cronRuleJson(cronInfoFromWire(wireRule({ timeout_ms: 30_000, max_retries: 0, last_fire_task_id: 'f1',
    last_fire_time: '2030-01-01T16:00:00Z', last_fire_state: 'TASK_STATE_QUEUED' })));
  assert.deepEqual([fired.timeout_ms, fired.max_retries, fired.last_fire_state, fired.last_fire_time, fired.last_fire_task_id],
    [30_000, 0, 'queued', '2030-01-01T16:00:00.000Z', 'f1']);
});

/** Run `cli.js cron ...`; resolves { code, stdout, stderr } (execFile rejects on a non-zero exit). */
async function cli(args, env = {}) {
  const clean = { ...process.env };
  for (const k of ['TASKRING_TOKEN', 'TASKRING_CA_FILE', 'TASKRING_CLIENT_CERT_FILE', 'TASKRING_CLIENT_KEY_FILE']) delete clean[k];
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'cron', ...args], { env: { ...clean, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('cli cron: the rule lifecycle as JSON lines, refusals on stderr with a non-zero exit', async () => {
  const { handlers } = memoryCron();
  const node = await fakeCronNode('n0', handlers);
  const ref = ['--nodes', node.address, '--namespace', 'billing', '--name', 'nightly'];
  try {
    const created = await cli(['create', ...ref, '--type', 'reconcile', '--schedule', '0 0 * * *', '--zone', 'Asia/Singapore',
      '--payload', '{"scope": "all"}', '--owner-team', 'payments', '--description', 'midnight SGT', '--overlap', 'skip',
      '--catch-up-limit', '5', '--timeout-ms', '30000', '--max-retries', '2'], { TASKRING_TOKEN: 'trk_cli' });
    assert.equal(created.code, 0, created.stderr);
    const lines = created.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const rule = JSON.parse(lines[0]);
    assert.deepEqual(Object.keys(rule), RULE_KEYS);
    assert.deepEqual(rule.payload, { scope: 'all' });
    assert.deepEqual([rule.timeout_ms, rule.max_retries, rule.catch_up_limit, rule.overlap, rule.catch_up],
      [30000, 2, 5, 'skip', 'latest']);
    assert.deepEqual([rule.paused, rule.last_fire_state, rule.last_fire_time, rule.last_fire_task_id], [false, null, null, '']);
    assert.equal(rule.next_fire_time, '2030-01-03T00:00:00.000Z');
    assert.deepEqual(node.calls[0].authorization, ['Bearer trk_cli']); // the token from the environment
    assert.equal(node.calls[0].request.rule.payload_json, '{"scope":"all"}');

    const got = await cli(['get', ...ref]);
    assert.deepEqual(JSON.parse(got.stdout), rule);
    assert.deepEqual(node.calls.at(-1).authorization, []);
    const listed = await cli(['list', '--nodes', node.address, '--namespace', 'billing']);
    assert.deepEqual(listed.stdout.trim().split('\n').map((l) => JSON.parse(l)), [rule]);
    const empty = await cli(['list', '--nodes', node.address, '--namespace', 'nothing-here']);
    assert.deepEqual([empty.code, empty.stdout], [0, '']);

    const again = await cli(['create', ...ref, '--type', 'reconcile', '--schedule', '0 0 * * *', '--zone', 'UTC']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /ALREADY_EXISTS: cron rule billing\/nightly already exists/);
    assert.equal(again.stdout, '');
    const bad = await cli(['create', '--nodes', node.address, '--namespace', 'billing', '--name', 'bad', '--type', 'r',
      '--schedule', '0 0 * * *', '--zone', 'Mars/Olympus_Mons']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /INVALID_ARGUMENT: rule\.time_zone: /);
    const missing = await cli(['get', '--nodes', node.address, '--namespace', 'billing', '--name', 'no-such-rule']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /NOT_FOUND: .*not found/);

    // update replaces the whole rule: flags left out are sent empty/unset, not kept.
    const updated = JSON.parse((await cli(['update', ...ref, '--type', 'reconcile', '--schedule', '30 1 * * *',
      '--zone', 'Europe/London', '--payload', '{"scope":"eu"}'])).stdout);
    const put = node.calls.at(-1).request.rule;
    assert.deepEqual([put.timeout_ms, put.max_retries, put.owner_team, put.overlap], [undefined, undefined, '', '']);
    assert.deepEqual([updated.schedule, updated.payload, updated.timeout_ms, updated.overlap], ['30 1 * * *', { scope: 'eu' }, null, 'allow']);

    const paused = JSON.parse((await cli(['pause', ...ref])).stdout);
    assert.deepEqual([paused.paused, paused.next_fire_time], [true, null]);
    const resumed = JSON.parse((await cli(['resume', ...ref])).stdout);
    assert.deepEqual([resumed.paused, resumed.next_fire_time], [false, '2030-01-03T00:00:00.000Z']);
    assert.equal(JSON.parse((await cli(['delete', ...ref])).stdout).name, 'nightly');
    assert.equal((await cli(['list', '--nodes', node.address])).stdout, '');
  } finally {
    await node.close();
  }
});

test('cli cron: a bad command line exits 2 and sends nothing', async () => {
  const node = await fakeCronNode('n0', memoryCron().handlers);
  const put = ['--nodes', node.address, '--namespace', 'billing', '--name', 'n', '--type', 't', '--schedule', '0 0 * * *', '--zone', 'UTC'];
  try {
    for (const args of [
      ['create', ...put, '--payload', '{not json'],
      ['create', ...put, '--timeout-ms', '1.5'],
      ['create', ...put, '--max-retries', 'two'],
      ['update', '--nodes', node.address, '--namespace', 'billing', '--name', 'n', '--type', 't'], // no --schedule
      ['get', '--nodes', node.address, '--namespace', 'billing'], // no --name
      ['get', '--nodes', node.address, '--namespace', 'billing', '--name', 'n', '--type', 't'], // not an option of get
      ['rename', '--nodes', node.address],
    ]) {
      const r = await cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
    assert.equal(node.calls.length, 0);
    const notObject = await cli(['create', ...put, '--payload', '[1]']); // JSON, but the SDK refuses it: exit 1
    assert.equal(notObject.code, 1);
    assert.match(notObject.stderr, /payload: must be a JSON object/);
    assert.equal(node.calls.length, 0);
  } finally {
    await node.close();
  }
});
