'use strict';
// TLS and mutual TLS on the executor's server (the leg the dispatcher dials),
// with the certificates of deploy/local/certs.sh, over real gRPC on loopback;
// configuration errors name the option, env var or CLI flag; the CLI's
// --tls-* flags and their env defaults.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { executorArgs } = require('../dist/cli');
const { execute, delivery, makeCerts } = require('./helpers');

const certs = makeCerts(test);
const f = certs.file;
fs.writeFileSync(f('not-pem.txt'), 'this is no PEM file\n');
// PEM armour around bytes that are no certificate / no key.
fs.writeFileSync(f('garbage-cert.pem'), '-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n');
fs.writeFileSync(f('garbage-key.pem'), '-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n');

const TLS = { certFile: f('server.pem'), keyFile: f('server.key') };
const MTLS = { ...TLS, clientCaFile: f('ca.pem') };

/** An executor without ZooKeeper whose handler counts its runs. */
async function started(tls) {
  const runs = [];
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger, tls });
  ex.handle('cancel_order', async (ctx) => { runs.push(ctx.taskId); });
  await ex.start();
  return { ex, runs };
}

/** Execute one delivery; resolves { outcomes } or { err }. */
function call(address, id, credentials) {
  return execute(address, [delivery(id, 'cancel_order')], 10_000, credentials)
    .then((outcomes) => ({ outcomes }), (err) => ({ err }));
}

function assertRefused(result, what) {
  assert.ok(result.err, `${what}: the call must fail, got ${JSON.stringify(result.outcomes)}`);
  assert.equal(result.err.code, grpc.status.UNAVAILABLE, `${what}: ${result.err.message}`);
}

const trusting = (ca, cert, key) => (cert
  ? grpc.credentials.createSsl(certs.read(ca), certs.read(key), certs.read(cert))
  : grpc.credentials.createSsl(certs.read(ca)));

test('executor tls: a client trusting its CA runs the task; plain text and another CA are refused', async () => {
  const { ex, runs } = await started(TLS);
  try {
    // No client certificate needed: no client CA was given.
    const ok = await call(ex.address, 'tls-ok', trusting('ca.pem'));
    assert.ifError(ok.err);
    assert.equal(ok.outcomes[0].kind, 'OUTCOME_KIND_SUCCEEDED');
    assert.deepEqual(runs, ['tls-ok']);
    assertRefused(await call(ex.address, 'plain', grpc.credentials.createInsecure()), 'plain text');
    assertRefused(await call(ex.address, 'other-ca', trusting('other-ca.pem')), 'a client trusting another CA');
    assert.deepEqual(runs, ['tls-ok'], 'a refused call never reaches the handler');
  } finally {
    await ex.stop(1_000);
  }
});

test('executor mtls: only a client certificate the client CA signed gets through', async () => {
  const { ex, runs } = await started(MTLS);
  try {
    const ok = await call(ex.address, 'mtls-ok', trusting('ca.pem', 'client.pem', 'client.key'));
    assert.ifError(ok.err);
    assert.equal(ok.outcomes[0].kind, 'OUTCOME_KIND_SUCCEEDED');
    assertRefused(await call(ex.address, 'no-cert', trusting('ca.pem')), 'no client certificate');
    assertRefused(await call(ex.address, 'other-client', trusting('ca.pem', 'other-client.pem', 'other-client.key')),
      'a client certificate of another CA');
    assertRefused(await call(ex.address, 'plain', grpc.credentials.createInsecure()), 'plain text');
    assert.deepEqual(runs, ['mtls-ok']);
  } finally {
    await ex.stop(1_000);
  }
});

test('executor tls: the server still answers TLS after refusing a handshake', async () => {
  // A refused dialer must not break the listener for the next, good one.
  const { ex, runs } = await started(MTLS);
  try {
    assertRefused(await call(ex.address, 'no-cert', trusting('ca.pem')), 'no client certificate');
    const ok = await call(ex.address, 'after', trusting('ca.pem', 'client.pem', 'client.key'));
    assert.ifError(ok.err);
    assert.deepEqual(runs, ['after']);
  } finally {
    await ex.stop(1_000);
  }
});

test('executor tls: a bad configuration throws at construction, naming the option (and the path)', () => {
  const refused = (tls, pattern) => assert.throws(
    () => new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger, tls }), pattern, JSON.stringify(tls));
  refused({ certFile: f('server.pem') }, /^RangeError: tls\.keyFile: required with tls\.certFile/);
  refused({ keyFile: f('server.key') }, /^RangeError: tls\.certFile: required with tls\.keyFile/);
  refused({ clientCaFile: f('ca.pem') }, /^RangeError: tls\.clientCaFile: mutual TLS needs tls\.certFile and tls\.keyFile/);
  refused({}, /^RangeError: tls: give tls\.certFile and tls\.keyFile/);
  refused({ certFile: 42, keyFile: f('server.key') }, /^TypeError: tls\.certFile: must be a file path/);
  const missing = f('missing.pem');
  refused({ ...TLS, certFile: missing }, new RegExp(`^Error: tls\\.certFile: cannot read ${missing}: ENOENT`));
  refused({ ...TLS, keyFile: missing }, /^Error: tls\.keyFile: cannot read .*missing\.pem/);
  refused({ ...MTLS, clientCaFile: missing }, /^Error: tls\.clientCaFile: cannot read .*missing\.pem/);
  refused({ ...TLS, certFile: f('not-pem.txt') }, /^Error: tls\.certFile: .*not-pem\.txt holds no PEM certificate/);
  refused({ ...TLS, keyFile: f('not-pem.txt') }, /^Error: tls\.keyFile: .*not-pem\.txt holds no PEM private key/);
  refused({ ...MTLS, clientCaFile: f('not-pem.txt') }, /^Error: tls\.clientCaFile: .*not-pem\.txt holds no PEM certificate/);
  refused({ ...TLS, certFile: f('garbage-cert.pem') }, /^Error: tls\.certFile: certificate 1 in .*garbage-cert\.pem does not parse/);
  refused({ ...TLS, keyFile: f('garbage-key.pem') }, /^Error: tls\.keyFile: the private key in .*garbage-key\.pem does not parse/);
  refused({ ...TLS, keyFile: f('client.key') }, /^Error: tls\.keyFile: the key in .*client\.key does not belong to the certificate in .*server\.pem/);
});

test('executor tls: a refused configuration starts nothing (the port stays free)', async (t) => {
  // Take a free port, release it, then try to start on it with a bad key: the
  // constructor throws, and a plain executor can then bind that very port.
  const probe = await started(undefined);
  const port = Number(probe.ex.address.split(':').pop());
  await probe.ex.stop(1_000);
  assert.throws(() => new sdk.Executor({ namespace: 'shop', zk: null, port, tls: { ...TLS, keyFile: f('not-pem.txt') } }),
    /tls\.keyFile/);
  const again = new sdk.Executor({ namespace: 'shop', zk: null, logger: sdk.silentLogger, port });
  again.handle('cancel_order', async () => undefined);
  t.after(() => again.stop(1_000));
  await again.start();
  assert.equal(again.address, `127.0.0.1:${port}`);
});

test('executorTlsFromEnv: undefined, the option, or an error naming the env var', () => {
  const CERT = 'TASKRING_EXECUTOR_TLS_CERT_FILE';
  const KEY = 'TASKRING_EXECUTOR_TLS_KEY_FILE';
  const CA = 'TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE';
  assert.equal(sdk.executorTlsFromEnv({}), undefined);
  assert.equal(sdk.executorTlsFromEnv({ [CERT]: '', [KEY]: '', [CA]: '' }), undefined, 'empty is unset');
  assert.equal(sdk.executorTlsFromEnv({ TASKRING_CA_FILE: f('ca.pem') }), undefined, 'the client\'s variables are not the executor\'s');
  assert.deepEqual(sdk.executorTlsFromEnv({ [CERT]: TLS.certFile, [KEY]: TLS.keyFile }), TLS);
  assert.deepEqual(sdk.executorTlsFromEnv({ [CERT]: TLS.certFile, [KEY]: TLS.keyFile, [CA]: f('ca.pem') }), MTLS);
  assert.throws(() => sdk.executorTlsFromEnv({ [CERT]: TLS.certFile }), new RegExp(`^RangeError: ${KEY}: required with ${CERT}`));
  assert.throws(() => sdk.executorTlsFromEnv({ [KEY]: TLS.keyFile }), new RegExp(`^RangeError: ${CERT}: required with ${KEY}`));
  assert.throws(() => sdk.executorTlsFromEnv({ [CA]: f('ca.pem') }), new RegExp(`^RangeError: ${CA}: mutual TLS needs ${CERT} and ${KEY}`));
  assert.throws(() => sdk.executorTlsFromEnv({ [CERT]: f('nope.pem'), [KEY]: TLS.keyFile }), new RegExp(`^Error: ${CERT}: cannot read .*nope\\.pem`));
  assert.throws(() => sdk.executorTlsFromEnv({ [CERT]: TLS.certFile, [KEY]: TLS.keyFile, [CA]: f('not-pem.txt') }),
    new RegExp(`^Error: ${CA}: .*not-pem\\.txt holds no PEM certificate`));
  // The option from the env runs an executor: new Executor itself never reads the env.
  const ex = new sdk.Executor({ namespace: 'shop', zk: null, tls: sdk.executorTlsFromEnv({ [CERT]: TLS.certFile, [KEY]: TLS.keyFile }) });
  assert.ok(ex instanceof sdk.Executor);
});

test('new Executor never reads the TLS env vars', async (t) => {
  t.after(() => {
    delete process.env.TASKRING_EXECUTOR_TLS_CERT_FILE;
    delete process.env.TASKRING_EXECUTOR_TLS_KEY_FILE;
  });
  process.env.TASKRING_EXECUTOR_TLS_CERT_FILE = f('missing.pem'); // would throw if read
  process.env.TASKRING_EXECUTOR_TLS_KEY_FILE = f('missing.key');
  const { ex, runs } = await started(undefined);
  try {
    const plain = await call(ex.address, 'plain', grpc.credentials.createInsecure());
    assert.ifError(plain.err);
    assert.deepEqual(runs, ['plain']);
  } finally {
    await ex.stop(1_000);
  }
});

test('cli executorArgs: --tls-* flags, their env defaults, and errors naming the flag or env var', () => {
  const base = ['--zk', '127.0.0.1:22181/x', '--namespace', 'shop', '--types', 'a,b'];
  const CERT = 'TASKRING_EXECUTOR_TLS_CERT_FILE';
  const KEY = 'TASKRING_EXECUTOR_TLS_KEY_FILE';
  const CA = 'TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE';
  // No flags, no env: plain text, the rest as before.
  const plain = executorArgs(base, {});
  assert.deepEqual(plain, {
    options: { namespace: 'shop', zk: '127.0.0.1:22181/x', host: '127.0.0.1', port: 0, maxInFlight: 64 },
    types: ['a', 'b'], behavior: 'ok',
  });
  // Flags.
  assert.deepEqual(executorArgs([...base, '--tls-cert', TLS.certFile, '--tls-key', TLS.keyFile], {}).options.tls, TLS);
  assert.deepEqual(executorArgs([...base, '--tls-cert', TLS.certFile, '--tls-key', TLS.keyFile, '--tls-client-ca', f('ca.pem')], {})
    .options.tls, MTLS);
  // Env defaults, each one separately.
  assert.deepEqual(executorArgs(base, { [CERT]: TLS.certFile, [KEY]: TLS.keyFile, [CA]: f('ca.pem') }).options.tls, MTLS);
  assert.deepEqual(executorArgs([...base, '--tls-key', TLS.keyFile], { [CERT]: TLS.certFile }).options.tls, TLS);
  // A flag overrides its env var (an empty one unsets it).
  assert.deepEqual(executorArgs([...base, '--tls-cert', TLS.certFile, '--tls-key', TLS.keyFile],
    { [CERT]: f('missing.pem'), [KEY]: f('missing.key') }).options.tls, TLS);
  assert.deepEqual(executorArgs([...base, '--tls-client-ca', ''], { [CERT]: TLS.certFile, [KEY]: TLS.keyFile, [CA]: f('ca.pem') })
    .options.tls, TLS);
  // Errors name where the value came from; a missing one both ways to give it.
  const usage = (args, env, pattern) => assert.throws(() => executorArgs([...base, ...args], env),
    (e) => e.constructor.name === 'UsageError' && pattern.test(e.message), `${args} ${JSON.stringify(env)}`);
  usage(['--tls-cert', TLS.certFile], {}, new RegExp(`^--tls-key \\(or ${KEY}\\): required with --tls-cert`));
  usage([], { [KEY]: TLS.keyFile }, new RegExp(`^--tls-cert \\(or ${CERT}\\): required with ${KEY}`));
  usage(['--tls-client-ca', f('ca.pem')], {}, /^--tls-client-ca: mutual TLS needs --tls-cert \(or .*\) and --tls-key/);
  usage(['--tls-cert', f('not-pem.txt'), '--tls-key', TLS.keyFile], {}, /^--tls-cert: .*not-pem\.txt holds no PEM certificate/);
  usage(['--tls-cert', TLS.certFile], { [KEY]: f('missing.key') }, new RegExp(`^${KEY}: cannot read .*missing\\.key`));
  // Outside TLS nothing changed: an unknown flag is still parseArgs' TypeError, no --zk still the bare usage.
  assert.throws(() => executorArgs([...base, '--tls'], {}), TypeError);
  assert.throws(() => executorArgs(['--namespace', 'shop', '--types', 'a'], {}), (e) => e.constructor.name === 'UsageError' && e.message === '');
});
