/**
 * Announce an executor to the dispatchers through ZooKeeper (Python:
 * _registration.py, whose znode and JSON this writes byte for byte).
 *
 * The executor holds one ephemeral znode, /executors/<namespace>/<instance_id>,
 * whose data is {"address","namespace","task_types","max_in_flight","pid"}.
 * Dispatchers watch /executors/<namespace> and send only to executors listed.
 *
 * - Connected again with the same session (a short disconnect): the znode is
 *   still ours; checking is a cheap no-op.
 * - Session expired: the server has deleted the ephemeral znode, and
 *   node-zookeeper-client closes for good, so a new client is connected (with
 *   backoff, until stop()) and the znode is created again: an executor that
 *   lost its session comes back by itself.
 * - Creating is idempotent and retried: a znode that another session owns (a
 *   stale instance with the same id) is replaced.
 * - stop() first clears `active` (which ends a re-register in progress), then
 *   deletes the znode, so dispatchers stop sending before in-flight work
 *   drains. One promise chain serialises create and delete, so a late
 *   re-create cannot bring the znode back.
 * - A chroot in the connect string that does not exist yet is created first,
 *   over a second, plain connection (a chrooted client cannot create its own root).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './log';
import { NODE_EXISTS, NO_NODE, splitChroot, Zk, ZkState, zkCode, type ZkStat } from './zk';

export const EXECUTORS_ROOT = '/executors';

export function znodePath(namespace: string, instanceId: string): string {
  return `${EXECUTORS_ROOT}/${namespace}/${instanceId}`;
}

export interface Advertisement {
  address: string;
  namespace: string;
  taskTypes: readonly string[];
  maxInFlight: number;
  pid?: number;
}

/**
 * The JSON a dispatcher reads: the same keys, order and compact separators as
 * Python's json.dumps(..., separators=(",", ":")). Task types are ASCII (their
 * syntax says so), so code-unit sort order equals Python's.
 */
export function znodeData(ad: Advertisement): Buffer {
  return Buffer.from(JSON.stringify({
    address: ad.address,
    namespace: ad.namespace,
    task_types: [...ad.taskTypes].sort(),
    max_in_flight: ad.maxInFlight,
    pid: ad.pid ?? process.pid,
  }));
}

export interface RegistrationOptions {
  /** "host:port[,host:port...][/chroot]". */
  connect: string;
  path: string;
  data: Buffer;
  sessionTimeoutMs: number;
  /** Bound on connecting and on each ZooKeeper operation at start and stop. */
  connectTimeoutMs: number;
  log: Logger;
}

export class Registration {
  private zk: Zk | null = null;
  private active = false;
  /** Serialises create and delete of the znode. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly options: RegistrationOptions) {}

  get path(): string {
    return this.options.path;
  }

  /** The live client's session id (hex), for tests and logs. */
  get session(): { id: Buffer; password: Buffer } | null {
    return this.zk === null ? null : { id: this.zk.sessionId, password: this.zk.sessionPassword };
  }

  /** Connect, create the chroot if missing, create the znode, and keep it across session losses. */
  async start(): Promise<void> {
    const { connect, connectTimeoutMs } = this.options;
    const zk = await this.connect();
    this.zk = zk;
    try {
      const { hosts, chroot } = splitChroot(connect);
      if (chroot && !(await zk.exists('/'))) await this.createChroot(hosts, chroot);
      this.active = true;
      await this.serial(() => this.retry(connectTimeoutMs, () => this.ensureOurs(zk)));
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.options.log.info(`registered executor at ${this.options.path}`);
  }

  /** Delete the znode and close the session. Safe before start and twice. */
  async stop(): Promise<void> {
    const wasActive = this.active;
    this.active = false; // first: ends a re-register in progress
    const zk = this.zk;
    this.zk = null;
    if (zk === null) return;
    if (wasActive && zk.connected) {
      try {
        await this.serial(() => this.retry(this.options.sessionTimeoutMs, () => this.deleteOurs(zk)));
      } catch (e) { // the session ends below anyway, which removes the ephemeral node
        this.options.log.warn(`could not delete ${this.options.path}; it goes with the session: ${String(e)}`);
      }
    }
    zk.close();
    this.options.log.info(`deregistered executor at ${this.options.path}`);
  }

  private async connect(): Promise<Zk> {
    const zk = await Zk.connect(this.options.connect, {
      sessionTimeoutMs: this.options.sessionTimeoutMs,
      timeoutMs: this.options.connectTimeoutMs,
    });
    zk.client.on('state', (state: unknown) => this.onState(zk, state));
    return zk;
  }

  private onState(zk: Zk, state: unknown): void {
    if (zk !== this.zk || !this.active) return; // an old client, or stopping
    if (state === ZkState.SYNC_CONNECTED) {
      this.background(() => this.retryWhileCurrent(zk, () => this.ensureOurs(zk)));
    } else if (state === ZkState.DISCONNECTED) {
      this.options.log.warn(`ZooKeeper connection lost; dispatchers may stop seeing ${this.options.path}`);
    } else if (state === ZkState.EXPIRED) {
      this.options.log.warn(`ZooKeeper session expired; re-creating ${this.options.path} with a new session`);
      this.zk = null; // ends the retries still queued on the dead client, which would never succeed
      zk.close();
      this.background(() => this.reconnect());
    }
  }

  /** After an expired session: a new client, then the znode again; until it works or stop(). */
  private async reconnect(): Promise<void> {
    let delay = 100;
    while (this.active) {
      try {
        const zk = await this.connect();
        if (!this.active) {
          zk.close();
          return;
        }
        this.zk = zk;
        await this.retryWhileCurrent(zk, () => this.ensureOurs(zk));
        this.options.log.info(`re-registered executor at ${this.options.path}`);
        return;
      } catch (e) {
        this.options.log.warn(`cannot reach ZooKeeper to re-register ${this.options.path}: ${String(e)}`);
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  private async createChroot(hosts: string, chroot: string): Promise<void> {
    const plain = await Zk.connect(hosts, {
      sessionTimeoutMs: this.options.sessionTimeoutMs,
      timeoutMs: this.options.connectTimeoutMs,
    });
    try {
      await plain.mkdirp(chroot);
    } finally {
      plain.close();
    }
  }

  /** Queue `step` from an event handler: nobody awaits it, so its failure is logged here. */
  private background(step: () => Promise<void>): void {
    this.serial(step).catch((e: unknown) => this.options.log.error(`registration of ${this.options.path}: ${String(e)}`));
  }

  /** Run `step` after every step queued before it; never rejects the chain itself. */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step);
    this.chain = run.then(() => undefined, () => undefined);
    return run;
  }

  /** Retry an idempotent step with backoff until it works or `budgetMs` is spent. */
  private async retry(budgetMs: number, step: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + budgetMs;
    let delay = 100;
    for (;;) {
      try {
        return await step();
      } catch (e) {
        if (Date.now() + delay >= deadline) throw e;
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  /**
   * Retry until it works, stop(), or `zk` is replaced (its session expired): a
   * re-register must not give up while we run, nor keep a dead client busy.
   */
  private async retryWhileCurrent(zk: Zk, step: () => Promise<void>): Promise<void> {
    let delay = 100;
    while (this.active && this.zk === zk) {
      try {
        return await step();
      } catch (e) {
        this.options.log.warn(`could not re-create ${this.options.path}, retrying: ${String(e)}`);
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  private ownedBy(zk: Zk, stat: ZkStat): boolean {
    return Buffer.compare(stat.ephemeralOwner, zk.sessionId) === 0;
  }

  /** Idempotent: afterwards the znode exists, is ours, and holds our data. */
  private async ensureOurs(zk: Zk): Promise<void> {
    if (!this.active) return;
    const { path, data } = this.options;
    await zk.mkdirp(path.slice(0, path.lastIndexOf('/')));
    try {
      await zk.create(path, data, true);
      return;
    } catch (e) {
      if (zkCode(e) !== NODE_EXISTS) throw e;
    }
    let current: { data: Buffer; stat: ZkStat };
    try {
      current = await zk.get(path);
    } catch (e) {
      if (zkCode(e) !== NO_NODE) throw e;
      await zk.create(path, data, true);
      return;
    }
    if (this.ownedBy(zk, current.stat)) {
      if (!current.data.equals(data)) await zk.set(path, data, current.stat.version);
      return;
    }
    this.options.log.warn(`replacing ${path}, held by another session`);
    try {
      await zk.remove(path, current.stat.version);
    } catch (e) {
      if (zkCode(e) !== NO_NODE) throw e;
    }
    await zk.create(path, data, true);
  }

  private async deleteOurs(zk: Zk): Promise<void> {
    const { path } = this.options;
    let current: { stat: ZkStat };
    try {
      current = await zk.get(path);
    } catch (e) {
      if (zkCode(e) === NO_NODE) return;
      throw e;
    }
    if (!this.ownedBy(zk, current.stat)) return;
    try {
      await zk.remove(path, current.stat.version);
    } catch (e) {
      if (zkCode(e) !== NO_NODE) throw e;
    }
  }
}
