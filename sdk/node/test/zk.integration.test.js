'use strict';
// Integration with a real ZooKeeper, skipped unless TASKRING_IT_ZK is set
// (e.g. 127.0.0.1:22181). Works in a private chroot that it creates (the
// registration must create a missing chroot) and removes afterwards.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const sdk = require('../dist/index');
const { znodeData } = require('../dist/registration');
const { Zk, zkCode, NO_NODE } = require('../dist/zk');
const { sleep } = require('./helpers');

const ZK = process.env.TASKRING_IT_ZK;
const skip = ZK ? false : 'set TASKRING_IT_ZK=host:port to run against a real ZooKeeper';

async function waitFor(what, check, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function read(zk, p) {
  try {
    return await zk.get(p);
  } catch (e) {
    if (zkCode(e) === NO_NODE) return null;
    throw e;
  }
}

async function removeTree(zk, p) {
  const children = await new Promise((resolve, reject) =>
    zk.client.getChildren(p, (e, c) => (e ? (zkCode(e) === NO_NODE ? resolve([]) : reject(e)) : resolve(c))));
  for (const c of children) await removeTree(zk, `${p}/${c}`);
  await zk.remove(p, -1).catch((e) => { if (zkCode(e) !== NO_NODE) throw e; });
}

test('executor registers in a fresh chroot, survives session expiry, and deregisters on stop', { skip, timeout: 60_000 }, async () => {
  const chroot = `/taskring-node-it-${randomBytes(4).toString('hex')}`;
  const plain = await Zk.connect(ZK, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
  const logged = [];
  const logger = { info: (m) => logged.push(m), warn: (m) => logged.push(m), error: (m) => logged.push(m) };
  const ex = new sdk.Executor({
    namespace: 'shop', zk: `${ZK}${chroot}`, maxInFlight: 3, instanceId: 'it-1', logger,
    zkSessionTimeoutMs: 6_000,
  });
  ex.handle('refund', async () => undefined).handle('cancel_order', async () => undefined);
  try {
    assert.equal(await plain.exists(chroot), false);
    await ex.start();
    const znode = `${chroot}/executors/shop/it-1`;
    assert.equal(ex.registrationPath, '/executors/shop/it-1');
    const first = await read(plain, znode);
    assert.ok(first, 'znode exists after start');
    const expected = `{"address":"${ex.address}","namespace":"shop","task_types":["cancel_order","refund"],` +
      `"max_in_flight":3,"pid":${process.pid}}`;
    assert.equal(first.data.toString(), expected);
    assert.deepEqual(first.data, znodeData({ address: ex.address, namespace: 'shop', taskTypes: ['refund', 'cancel_order'], maxInFlight: 3 }));
    // Ephemeral: owned by the executor's session.
    const session = ex.registration.session;
    assert.ok(first.stat.ephemeralOwner.equals(session.id));

    // The same bytes as the Python SDK writes, when its virtualenv is here.
    const python = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
    if (fs.existsSync(python)) {
      const py = execFileSync(python, ['-c', 'import sys; from taskring._registration import znode_data; ' +
        'sys.stdout.write(znode_data(address=sys.argv[1], namespace="shop", task_types=["refund","cancel_order"], ' +
        'max_in_flight=3, pid=int(sys.argv[2])).decode())', ex.address, String(process.pid)]).toString();
      assert.equal(first.data.toString(), py);
    }

    // Expire the session: attach to it from a second client, then close that one
    // (closing ends the session for everyone). The executor must come back with a
    // new session. The original client may win its session back by reconnecting
    // before the close lands (the close then fails as "session moved"), so the
    // theft is repeated until the session is really gone.
    const owner = async () => (await read(plain, znode))?.stat.ephemeralOwner;
    let again = null;
    for (let tries = 0; tries < 5 && again === null; tries++) {
      const thief = await Zk.connect(`${ZK}${chroot}`, { sessionTimeoutMs: 6_000, timeoutMs: 10_000, sessionId: session.id, sessionPassword: session.password })
        .catch(() => null); // already expired: nothing to steal
      thief?.close();
      again = await waitFor('the znode re-created by a new session', async () => {
        const o = await owner();
        return o && !o.equals(session.id) ? read(plain, znode) : null;
      }, 4_000).catch(() => null);
    }
    assert.ok(again, `the executor did not re-register; log: ${JSON.stringify(logged)}`);
    assert.equal(again.data.toString(), expected);
    assert.ok(again.stat.ephemeralOwner.equals(ex.registration.session.id));

    await ex.stop(2_000);
    assert.equal(await read(plain, znode), null, 'znode deleted on stop');
  } finally {
    await ex.stop(0);
    await removeTree(plain, chroot);
    plain.close();
  }
});

test('a stale znode of another session with the same id is replaced', { skip, timeout: 30_000 }, async () => {
  const chroot = `/taskring-node-it-${randomBytes(4).toString('hex')}`;
  const plain = await Zk.connect(`${ZK}`, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
  const other = await Zk.connect(`${ZK}`, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
  const ex = new sdk.Executor({ namespace: 'shop', zk: `${ZK}${chroot}`, instanceId: 'dup', logger: sdk.silentLogger });
  ex.handle('t', async () => undefined);
  try {
    await other.mkdirp(`${chroot}/executors/shop`);
    await other.create(`${chroot}/executors/shop/dup`, Buffer.from('{"stale":true}'), true);
    await ex.start();
    const now = await read(plain, `${chroot}/executors/shop/dup`);
    assert.ok(now.stat.ephemeralOwner.equals(ex.registration.session.id));
    assert.match(now.data.toString(), /"task_types":\["t"\]/);
  } finally {
    await ex.stop(0);
    other.close();
    await removeTree(plain, chroot);
    plain.close();
  }
});

test('stop deregisters first: the znode is gone while in-flight work still runs', { skip, timeout: 30_000 }, async () => {
  const { execute, delivery } = require('./helpers');
  const chroot = `/taskring-node-it-${randomBytes(4).toString('hex')}`;
  const plain = await Zk.connect(ZK, { sessionTimeoutMs: 10_000, timeoutMs: 10_000 });
  let release;
  const gate = new Promise((r) => { release = r; });
  let running = false;
  const ex = new sdk.Executor({ namespace: 'shop', zk: `${ZK}${chroot}`, instanceId: 'drain', logger: sdk.silentLogger });
  ex.handle('slow', async () => { running = true; await gate; });
  try {
    await ex.start();
    const znode = `${chroot}/executors/shop/drain`;
    assert.ok(await read(plain, znode));
    const batch = execute(ex.address, [delivery('d1', 'slow', { timeoutMs: 10_000 })]);
    await waitFor('the handler to run', async () => running);
    const stopping = ex.stop(5_000);
    await waitFor('the znode to go', async () => (await read(plain, znode)) === null, 5_000);
    assert.equal(ex.inFlight, 1, 'the delivery is still running after deregistration');
    release();
    const [o] = await batch;
    assert.equal(o.kind, 'OUTCOME_KIND_SUCCEEDED');
    await stopping;
  } finally {
    release();
    await ex.stop(0);
    await removeTree(plain, chroot);
    plain.close();
  }
});
