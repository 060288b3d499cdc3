/**
 * A small promise face over node-zookeeper-client (pure JS: no native build).
 *
 * Two things it adds: every operation is bounded by a timeout (the library
 * queues requests while disconnected, which would let a ZooKeeper outage hang
 * start() or stop()), and connecting is bounded too. Errors keep the library's
 * codes (`zkCode`).
 */
import * as zookeeper from 'node-zookeeper-client';

export const NO_NODE = zookeeper.Exception.NO_NODE;
export const NODE_EXISTS = zookeeper.Exception.NODE_EXISTS;
export const ZkState = zookeeper.State;
export type ZkStat = zookeeper.Stat;

/** The ZooKeeper error code of `err`, or undefined when it is not one. */
export function zkCode(err: unknown): number | undefined {
  const e = err as { getCode?: () => unknown } | null;
  if (typeof e?.getCode !== 'function') return undefined;
  const code = e.getCode();
  return typeof code === 'number' ? code : undefined;
}

/** "host:port,host:port/chroot" -> its hosts part and its chroot ("" when none). */
export function splitChroot(connect: string): { hosts: string; chroot: string } {
  const i = connect.indexOf('/');
  if (i < 0) return { hosts: connect, chroot: '' };
  const chroot = connect.slice(i).replace(/\/+$/, '');
  return { hosts: connect.slice(0, i), chroot };
}

export interface ZkOptions {
  sessionTimeoutMs: number;
  /** Bound on connecting and on each operation. */
  timeoutMs: number;
  /** Resume an existing session (tests use this to expire one). */
  sessionId?: Buffer;
  sessionPassword?: Buffer;
}

export class ZkTimeoutError extends Error {}

function bounded<T>(what: string, ms: number, run: (done: (err: unknown, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new ZkTimeoutError(`ZooKeeper ${what}: no answer within ${ms} ms`)), ms);
    run((err, value) => {
      clearTimeout(timer);
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(value as T);
    });
  });
}

export class Zk {
  private constructor(readonly client: zookeeper.Client, private readonly timeoutMs: number) {}

  /** Connect, or reject (and close) within `timeoutMs`. */
  static async connect(connect: string, options: ZkOptions): Promise<Zk> {
    const client = zookeeper.createClient(connect, {
      sessionTimeout: options.sessionTimeoutMs,
      spinDelay: 200,
      retries: 0,
      ...(options.sessionId ? { sessionId: options.sessionId } : {}),
      ...(options.sessionPassword ? { sessionPassword: options.sessionPassword } : {}),
    });
    try {
      await bounded<void>(`connect to ${connect}`, options.timeoutMs, (done) => {
        client.once('connected', () => done(null));
        client.once('expired', () => done(new Error(`ZooKeeper session at ${connect} expired while connecting`)));
        client.connect();
      });
    } catch (e) {
      client.close();
      throw e;
    }
    return new Zk(client, options.timeoutMs);
  }

  get sessionId(): Buffer {
    return this.client.getSessionId();
  }

  get sessionPassword(): Buffer {
    return this.client.getSessionPassword();
  }

  get connected(): boolean {
    return this.client.getState() === zookeeper.State.SYNC_CONNECTED;
  }

  create(path: string, data: Buffer, ephemeral: boolean): Promise<void> {
    const mode = ephemeral ? zookeeper.CreateMode.EPHEMERAL : zookeeper.CreateMode.PERSISTENT;
    return bounded(`create ${path}`, this.timeoutMs, (done) => this.client.create(path, data, mode, (e) => done(e)));
  }

  mkdirp(path: string): Promise<void> {
    return bounded(`mkdirp ${path}`, this.timeoutMs, (done) => this.client.mkdirp(path, (e) => done(e)));
  }

  exists(path: string): Promise<boolean> {
    return bounded(`exists ${path}`, this.timeoutMs, (done) => this.client.exists(path, (e, stat) => done(e, stat !== null)));
  }

  get(path: string): Promise<{ data: Buffer; stat: ZkStat }> {
    return bounded(`get ${path}`, this.timeoutMs, (done) =>
      this.client.getData(path, (e, data, stat) => done(e, { data: data ?? Buffer.alloc(0), stat })));
  }

  set(path: string, data: Buffer, version: number): Promise<void> {
    return bounded(`set ${path}`, this.timeoutMs, (done) => this.client.setData(path, data, version, (e) => done(e)));
  }

  remove(path: string, version: number): Promise<void> {
    return bounded(`delete ${path}`, this.timeoutMs, (done) => this.client.remove(path, version, (e) => done(e)));
  }

  close(): void {
    this.client.close();
  }
}
