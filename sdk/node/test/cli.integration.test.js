'use strict';
// dist/cli.js, the executor of the cross-language tests, against a real
// ZooKeeper: registers, prints one line per delivery, reject-once fails
// attempt 1 only, SIGTERM stops it and removes the znode. Skipped unless
// TASKRING_IT_ZK is set.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { Zk, zkCode, NO_NODE } = require('../dist/zk');
const { execute, delivery } = require('./helpers');

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
