'use strict';
// Secured clusters (docs/security.md): the `token` option sends
// `authorization: Bearer <token>` on every call, never shows the secret, and
// tlsCredentials() reaches a TLS / mutual-TLS node (certs of deploy/local/certs.sh).
const test = require('node:test');
const assert = require('node:assert/strict');
const util = require('node:util');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { securityFromEnv } = require('../dist/cli');
const { fakeDispatcher, makeCerts } = require('./helpers');

const SECRET = 'trk_node-test-secret-never-shown';
const handlers = {
  Submit: (req) => ({ task_id: req.task.task_id || 'srv-1', state: 'TASK_STATE_ACCEPTED', due_at: '2030-01-02T03:04:05.678Z', slot: 1 }),
  SubmitBatch: (req) => ({ results: req.tasks.map((t, i) => ({ task_id: `b${i}`, state: 'TASK_STATE_QUEUED', slot: i })) }),
  Cancel: (req) => ({ task_id: req.task_id, state: 'TASK_STATE_CANCELLED' }),
  GetTask: (req) => ({ task: { task_id: req.task_id, namespace: 'shop', task_type: 't' }, state: 'TASK_STATE_QUEUED' }),
};

test('token: every call carries authorization: Bearer <token>', async () => {
  const node = await fakeDispatcher('n0', handlers);
  const client = new sdk.Client({ nodes: node.address, token: SECRET, rpcTimeoutMs: 5_000 });
  try {
    await client.submit({ namespace: 'shop', taskType: 't' });
    await client.submitBatch([{ namespace: 'shop', taskType: 't' }]);
    await client.cancel('t1');
    await client.get('t1');
    assert.deepEqual(node.calls.map((c) => c.method), ['Submit', 'SubmitBatch', 'Cancel', 'GetTask']);
    for (const c of node.calls) assert.deepEqual(c.authorization, [`Bearer ${SECRET}`]);
    // The secret is in a #private field: inspecting or serialising the client does not show it.
    assert.ok(!util.inspect(client, { depth: 10, showHidden: true }).includes(SECRET));
    assert.ok(!JSON.stringify(Object.keys(client)).includes(SECRET));
  } finally {
    client.close();
    await node.close();
  }
});

test('no token: no authorization metadata; a refusal is a PermissionDeniedError without the secret', async () => {
  const refuse = () => {
    throw { code: grpc.status.UNAUTHENTICATED, details: 'authorization: the token is not known to this node' };
  };
  const node = await fakeDispatcher('n0', { ...handlers, GetTask: refuse });
  const plain = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000 });
  const wrong = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, token: SECRET });
  try {
    await plain.submit({ namespace: 'shop', taskType: 't' });
    assert.deepEqual(node.calls[0].authorization, []);
    const err = await wrong.get('t1').then(() => null, (e) => e);
    assert.ok(err instanceof sdk.PermissionDeniedError, String(err));
    assert.equal(err.codeName, 'UNAUTHENTICATED');
    assert.ok(!err.message.includes(SECRET) && !util.inspect(err).includes(SECRET));
  } finally {
    plain.close();
    wrong.close();
    await node.close();
  }
});

test('token: an empty one is refused at construction, naming no secret', () => {
  assert.throws(() => new sdk.Client({ nodes: '127.0.0.1:1', token: '' }), /token: must be a non-empty string/);
});

test('securityFromEnv reads TASKRING_TOKEN and TASKRING_CA_FILE', () => {
  assert.deepEqual(securityFromEnv({}), {});
  assert.deepEqual(securityFromEnv({ TASKRING_TOKEN: 'x' }), { token: 'x' });
  assert.throws(() => securityFromEnv({ TASKRING_CA_FILE: '/nonexistent/ca.pem' }), /ENOENT/);
  assert.throws(() => sdk.tlsCredentials('ca.pem', 'client.pem'), /both a client certificate and its key/);
});

test('tlsCredentials: TLS and mutual TLS to a node with certs.sh certificates', async (t) => {
  const { file: f, read } = makeCerts(t);
  const mtls = grpc.ServerCredentials.createSsl(read('ca.pem'),
    [{ private_key: read('server.key'), cert_chain: read('server.pem') }], true);
  const node = await fakeDispatcher('tls', handlers, mtls);
  const good = new sdk.Client({ nodes: node.address, token: SECRET, rpcTimeoutMs: 5_000,
    credentials: sdk.tlsCredentials(f('ca.pem'), f('client.pem'), f('client.key')) });
  const noCert = new sdk.Client({ nodes: node.address, rpcTimeoutMs: 5_000, credentials: sdk.tlsCredentials(f('ca.pem')) });
  try {
    assert.equal((await good.get('t1')).state, 'queued');
    assert.deepEqual(node.calls[0].authorization, [`Bearer ${SECRET}`]);
    const err = await noCert.get('t1').then(() => null, (e) => e);
    assert.ok(err instanceof sdk.UnavailableError, `no client certificate: ${err}`);
  } finally {
    good.close();
    noCert.close();
    await node.close();
  }
});
