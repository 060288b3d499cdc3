'use strict';
// dist/cli.js, the executor of the cross-language tests, against a real
// ZooKeeper: registers, prints one line per delivery, reject-once fails
// attempt 1 only, SIGTERM stops it and removes the znode. Skipped unless
// TASKRING_IT_ZK is set. With --tls-* flags (or their env vars) it serves
// mutual TLS and registers as before; a bad TLS configuration registers nothing.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { Zk, zkCode, NO_NODE } = require('../dist/zk');
const { execute, delivery, makeCerts } = require('./helpers');

const ZK = process.env.TASKRING_IT_ZK;
const skip = ZK ? false : 'set TASKRING_IT_ZK=host:port to run against a real ZooKeeper';

test('cli executor --behavior reject-once', { skip, timeout: 60_000 }, async () => {
  const chroot = `/taskring-node-cli-${randomBytes(4).toString('hex')}`;
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'dist', 'cli.js'), 'executor', '--zk', `${ZK}${chroot}`,
    '--namespace', 'shop', '--types', 'cancel_order,refund', '--behavior', 'reject-once', '--instance-id', 'cli-1'],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = [];
  readline.createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const plain = await Zk.connect(ZK, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
  try {
    const ready = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('cli did not get ready in 20 s')), 20_000);
      readline.createInterface({ input: child.stderr }).on('line', (l) => {
        if (l.startsWith('ready ')) { clearTimeout(timer); resolve(l.split(' ')); }
      });
      child.once('exit', (code) => reject(new Error(`cli exited early with ${code}`)));
    });
    const [, address, znode] = ready;
    assert.equal(znode, '/executors/shop/cli-1');
    const { data } = await plain.get(`${chroot}${znode}`);
    assert.deepEqual(JSON.parse(data.toString()).task_types, ['cancel_order', 'refund']);
    assert.equal(JSON.parse(data.toString()).address, address);

    const first = await execute(address, [delivery('o-42', 'cancel_order', { attempt: 1 })]);
    assert.equal(first[0].kind, 'OUTCOME_KIND_RETRYABLE_FAILURE');
    const second = await execute(address, [delivery('o-42', 'cancel_order', { attempt: 2 })]);
    assert.equal(second[0].kind, 'OUTCOME_KIND_SUCCEEDED');
    // stdout is a pipe: the lines may arrive a moment after the answers.
    for (let i = 0; i < 50 && out.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(out, ['o-42 1 RETRYABLE_FAILURE', 'o-42 2 SUCCEEDED']);

    child.kill('SIGTERM');
    assert.deepEqual(await exited, { code: 0, signal: null });
    await assert.rejects(plain.get(`${chroot}${znode}`), (e) => zkCode(e) === NO_NODE);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    for (const p of [`${chroot}/executors/shop`, `${chroot}/executors`, chroot]) {
      await plain.remove(p, -1).catch(() => undefined);
    }
    plain.close();
  }
});

const CLI = path.join(__dirname, '..', 'dist', 'cli.js');

/** Drop the znodes a test's chroot may hold. */
async function cleanChroot(plain, chroot) {
  for (const p of [`${chroot}/executors/shop`, `${chroot}/executors`, chroot]) {
    await plain.remove(p, -1).catch(() => undefined);
  }
}

test('cli executor --tls-cert/--tls-key + TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE: mutual TLS, registered as before',
  { skip, timeout: 60_000 }, async (t) => {
    const certs = makeCerts(t);
    const chroot = `/taskring-node-cli-tls-${randomBytes(4).toString('hex')}`;
    const env = { ...process.env, TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE: certs.file('ca.pem') };
    delete env.TASKRING_EXECUTOR_TLS_CERT_FILE;
    delete env.TASKRING_EXECUTOR_TLS_KEY_FILE;
    const child = spawn(process.execPath, [CLI, 'executor', '--zk', `${ZK}${chroot}`, '--namespace', 'shop',
      '--types', 'cancel_order', '--instance-id', 'cli-tls-1',
      '--tls-cert', certs.file('server.pem'), '--tls-key', certs.file('server.key')],
    { stdio: ['ignore', 'pipe', 'pipe'], env });
    const out = [];
    readline.createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const plain = await Zk.connect(ZK, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
    try {
      const ready = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('cli did not get ready in 20 s')), 20_000);
        readline.createInterface({ input: child.stderr }).on('line', (l) => {
          if (l.startsWith('ready ')) { clearTimeout(timer); resolve(l.split(' ')); }
        });
        child.once('exit', (code) => reject(new Error(`cli exited early with ${code}`)));
      });
      const [, address, znode] = ready;
      assert.equal(znode, '/executors/shop/cli-tls-1');
      const data = JSON.parse((await plain.get(`${chroot}${znode}`)).data.toString());
      assert.equal(data.address, address);
      assert.deepEqual(data.task_types, ['cancel_order']);

      const mtls = grpc.credentials.createSsl(certs.read('ca.pem'), certs.read('client.key'), certs.read('client.pem'));
      const ok = await execute(address, [delivery('o-7', 'cancel_order')], 10_000, mtls);
      assert.equal(ok[0].kind, 'OUTCOME_KIND_SUCCEEDED');
      // The client CA came from the env: a TLS client without a certificate is refused, as is plain text.
      const noCert = grpc.credentials.createSsl(certs.read('ca.pem'));
      await assert.rejects(execute(address, [delivery('o-8', 'cancel_order')], 10_000, noCert),
        (e) => e.code === grpc.status.UNAVAILABLE);
      await assert.rejects(execute(address, [delivery('o-9', 'cancel_order')], 10_000),
        (e) => e.code === grpc.status.UNAVAILABLE);
      // stdout is a pipe: the line may arrive a moment after the answer.
      const deadline = Date.now() + 2_000;
      while (out.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(out, ['o-7 1 SUCCEEDED']);

      child.kill('SIGTERM');
      assert.deepEqual(await exited, { code: 0, signal: null });
      await assert.rejects(plain.get(`${chroot}${znode}`), (e) => zkCode(e) === NO_NODE);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await cleanChroot(plain, chroot);
      plain.close();
    }
  });

test('cli executor: a bad TLS configuration exits 2 naming the flag or env var, and registers nothing',
  { skip, timeout: 60_000 }, async (t) => {
    const certs = makeCerts(t);
    const plain = await Zk.connect(ZK, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
    const run = (chroot, args, extraEnv) => new Promise((resolve) => {
      const env = { ...process.env, ...extraEnv };
      for (const k of ['CERT', 'KEY', 'CLIENT_CA'].map((n) => `TASKRING_EXECUTOR_TLS_${n}_FILE`)) {
        if (!(k in extraEnv)) delete env[k]; // only the case's own TLS settings
      }
      const child = spawn(process.execPath, [CLI, 'executor', '--zk', `${ZK}${chroot}`, '--namespace', 'shop',
        '--types', 'a', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
      let stderr = '';
      child.stderr.on('data', (b) => { stderr += b; });
      child.once('close', (code) => resolve({ code, stderr }));
    });
    const chroots = [];
    try {
      const cases = [
        [['--tls-cert', certs.file('server.pem')], {}, /^executor: --tls-key \(or TASKRING_EXECUTOR_TLS_KEY_FILE\): required with --tls-cert/],
        [['--tls-client-ca', certs.file('ca.pem')], {}, /^executor: --tls-client-ca: mutual TLS needs --tls-cert/],
        [[], { TASKRING_EXECUTOR_TLS_CERT_FILE: certs.file('server.pem'), TASKRING_EXECUTOR_TLS_KEY_FILE: certs.file('nope.key') },
          /^executor: TASKRING_EXECUTOR_TLS_KEY_FILE: cannot read .*nope\.key/],
        [['--tls-cert', certs.file('ca.key'), '--tls-key', certs.file('server.key')], {},
          /^executor: --tls-cert: .*ca\.key holds no PEM certificate/],
      ];
      for (const [args, env, pattern] of cases) {
        const chroot = `/taskring-node-cli-badtls-${randomBytes(4).toString('hex')}`;
        chroots.push(chroot);
        const r = await run(chroot, args, env);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, pattern);
        assert.equal(await plain.exists(chroot), false, `nothing registered under ${chroot}`);
      }
    } finally {
      for (const c of chroots) await cleanChroot(plain, c);
      plain.close();
    }
  });
