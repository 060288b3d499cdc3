/**
 * The executor: the gRPC server inside a business service that runs its
 * tasks (Python: executor.py). Wiring, in the order it happens:
 *
 * 1. `handle()` fills the table of task types (before start).
 * 2. `start()` serves ExecutorService.Execute, handing every delivery of a
 *    batch to the DeliveryRunner (runner.ts) concurrently, then announces the
 *    executor in ZooKeeper (registration.ts), only once the server can answer.
 * 3. `stop(timeoutMs)` undoes this in reverse: deregister first, so the
 *    dispatchers stop sending; then refuse new deliveries (answered RETRYABLE,
 *    so the dispatcher re-queues them); then let the batches in flight finish
 *    until the deadline; past it, answer what is left RETRYABLE and abort
 *    those handlers' signals; then close the server.
 *
 * Python's stop(grace_s) cancels the RPCs still running after the grace
 * period; the dispatcher then turns the whole batch into retryable outcomes
 * itself. Here the executor answers them, so the batch's finished deliveries
 * keep their real outcomes instead of being retried.
 */
import * as os from 'node:os';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { ExecuteRequest__Output } from './gen/taskring/v1/ExecuteRequest';
import type { ExecuteResponse } from './gen/taskring/v1/ExecuteResponse';
import type { ExecutorServiceHandlers } from './gen/taskring/v1/ExecutorService';
import type { Heartbeat } from './gen/taskring/v1/Heartbeat';
import { checkExecutorTlsFields, executorServerCredentials, type ExecutorTlsOptions } from './executor-tls';
import { HeartbeatStream } from './heartbeat';
import { consoleLogger, type Logger } from './log';
import { Registration, znodeData, znodePath } from './registration';
import { DeliveryRunner, RETRYABLE, type BuiltOutcome, type Handler } from './runner';
import { loadWire } from './wire/load';

const NAMESPACE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
// The server's task type syntax (dispatcher/validation.py), colon included.
const TASK_TYPE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** A dispatch frame carries many tasks; gRPC's 4 MiB default is too small for big batches. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface ExecutorOptions {
  namespace: string;
  /**
   * ZooKeeper connect string, optionally with a chroot ("127.0.0.1:22181/taskring");
   * null runs without registering (tests, or dispatchers pointed here some other way).
   */
  zk: string | null;
  /** Where the server listens (default 127.0.0.1). */
  host?: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Cap on handlers running at once across all batches (default 64). */
  maxInFlight?: number;
  /** Names the znode (default hostname-pid-random). */
  instanceId?: string;
  /** The host written into ZooKeeper when it differs from `host` (default: `host`, or the hostname for a wildcard). */
  advertiseHost?: string;
  /** The port written into ZooKeeper when dispatchers reach this executor through a port mapping or proxy (default: the bound port). */
  advertisePort?: number;
  /**
   * Serve TLS with this certificate chain and key (PEM files); with
   * `clientCaFile`, mutual TLS (the dispatcher must show a client certificate
   * that CA signed). Default: plain text. Read and checked by the constructor,
   * which throws naming the field. `executorTlsFromEnv()` reads it from the
   * environment; the constructor never does.
   */
  tls?: ExecutorTlsOptions;
  /** Default 10 000. */
  zkSessionTimeoutMs?: number;
  /** Bound on connecting to ZooKeeper and each step of registering (default 10 000). */
  zkConnectTimeoutMs?: number;
  logger?: Logger;
  /** Called with every outcome just before it is answered (logging, metrics). Must not throw. */
  onOutcome?: (outcome: BuiltOutcome) => void;
}

type Lifecycle = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

function defaultInstanceId(): string {
  const host = os.hostname().replace(/[^A-Za-z0-9._-]/g, '-') || 'host';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host.replace(/^\[|\]$/g, '')}]:${port}` : `${host}:${port}`;
}

export class Executor {
  readonly namespace: string;
  readonly instanceId: string;
  readonly maxInFlight: number;
  private readonly options: ExecutorOptions;
  private readonly host: string;
  private readonly advertiseHost: string;
  private readonly log: Logger;
  private readonly credentials: grpc.ServerCredentials;
  private readonly handlers = new Map<string, Handler>();
  private state: Lifecycle = 'new';
  private server: grpc.Server | null = null;
  private runner: DeliveryRunner | null = null;
  private registration: Registration | null = null;
  private boundPort: number | null = null;
  private readonly calls = new Set<Promise<void>>();
  /** Each open Work stream's "end once what runs has answered" (see work()). */
  private readonly streams = new Set<() => void>();
  private stopping: Promise<void> | null = null;

  constructor(options: ExecutorOptions) {
    if (!NAMESPACE.test(options.namespace)) {
      throw new RangeError(`namespace: must match ${NAMESPACE.source}, got ${JSON.stringify(options.namespace)}`);
    }
    const maxInFlight = options.maxInFlight ?? 64;
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
      throw new RangeError(`maxInFlight: must be an integer >= 1, got ${maxInFlight}`);
    }
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`port: must be in 0..65535, got ${port}`);
    const instanceId = options.instanceId ?? defaultInstanceId();
    if (!INSTANCE_ID.test(instanceId)) {
      throw new RangeError(`instanceId: must match ${INSTANCE_ID.source}, got ${JSON.stringify(instanceId)}`);
    }
    const ap = options.advertisePort;
    if (ap !== undefined && (!Number.isInteger(ap) || ap < 1 || ap > 65535)) {
      throw new RangeError(`advertisePort: must be in 1..65535, got ${ap}`);
    }
    // Before anything starts: a bad certificate must stop the executor from serving or registering.
    const tls = checkExecutorTlsFields(options.tls, undefined, true);
    this.credentials = tls === undefined ? grpc.ServerCredentials.createInsecure() : executorServerCredentials(tls);
    this.options = options;
    this.namespace = options.namespace;
    this.instanceId = instanceId;
    this.maxInFlight = maxInFlight;
    this.host = options.host ?? '127.0.0.1';
    const wildcard = ['0.0.0.0', '::', '[::]', ''].includes(this.host);
    this.advertiseHost = options.advertiseHost ?? (wildcard ? os.hostname() : this.host);
    this.log = options.logger ?? consoleLogger;
  }

  /** Run `handler` for tasks of `taskType`. Its resolved value is ignored; throw or reject to fail. */
  handle(taskType: string, handler: Handler): this {
    if (!TASK_TYPE.test(taskType)) {
      throw new RangeError(`taskType: must match ${TASK_TYPE.source}, got ${JSON.stringify(taskType)}`);
    }
    if (typeof handler !== 'function') throw new TypeError(`handler for '${taskType}' is not a function`);
    if (this.state !== 'new') throw new Error('register handlers before start(): the registration lists the task types');
    if (this.handlers.has(taskType)) throw new RangeError(`taskType: '${taskType}' already has a handler`);
    this.handlers.set(taskType, handler);
    return this;
  }

  /** The task types this executor has handlers for, sorted. */
  get taskTypes(): string[] {
    return [...this.handlers.keys()].sort();
  }

  /** "host:port" the dispatchers call, once started. */
  get address(): string {
    if (this.boundPort === null) throw new Error('the executor has no address until start()');
    return formatAddress(this.advertiseHost, this.options.advertisePort ?? this.boundPort);
  }

  /** Handlers running now, including timed-out ones whose promise has not settled. */
  get inFlight(): number {
    return this.runner?.inFlight ?? 0;
  }

  /** Deliveries received and waiting for a free slot (maxInFlight reached). */
  get waiting(): number {
    return this.runner?.waiting ?? 0;
  }

  /** The znode this executor holds (when registering with ZooKeeper). */
  get registrationPath(): string | null {
    return this.options.zk ? znodePath(this.namespace, this.instanceId) : null;
  }

  /** Start serving, then register. Resolves once both are done. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`an Executor starts once; this one is ${this.state}`);
    if (this.handlers.size === 0) throw new Error('no handlers registered');
    this.state = 'starting';
    try {
      await this.startServer();
      this.state = 'running'; // serving before registering: the znode must never point at nothing
      if (this.options.zk) {
        this.registration = new Registration({
          connect: this.options.zk,
          path: znodePath(this.namespace, this.instanceId),
          data: znodeData({
            address: this.address, namespace: this.namespace, taskTypes: this.taskTypes, maxInFlight: this.maxInFlight,
          }),
          sessionTimeoutMs: this.options.zkSessionTimeoutMs ?? 10_000,
          connectTimeoutMs: this.options.zkConnectTimeoutMs ?? 10_000,
          log: this.log,
        });
        await this.registration.start();
      }
    } catch (e) {
      await this.stop(0);
      throw e;
    }
    this.log.info(`executor ${this.instanceId} for ${this.namespace} serving ${this.taskTypes.join(', ')} at ${this.address}`);
  }

  /**
   * Deregister, stop taking deliveries, let those in flight finish for up to
   * `timeoutMs` (counted from this call), answer the rest RETRYABLE, close.
   * Safe before start and twice (the second call waits for the first).
   */
  stop(timeoutMs = 10_000): Promise<void> {
    if (this.stopping === null) this.stopping = this.doStop(timeoutMs);
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    if (this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    // Deregister while still serving (as Python does): until the dispatchers
    // see the znode go, what they send still runs here.
    const registration = this.registration;
    this.registration = null;
    if (registration !== null) {
      try {
        await registration.stop();
      } catch (e) {
        this.log.warn(`deregistering failed: ${String(e)}`);
      }
    }
    this.state = 'stopping'; // from here on new Execute calls are handed back (see execute())
    const drained = Promise.all([...this.calls]).then(() => true);
    const left = Math.max(0, deadline - performance.now());
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), left); });
    const inTime = await Promise.race([drained, expired]);
    clearTimeout(timer);
    if (!inTime) {
      this.runner?.abortAll(`executor stopped: its graceful stop of ${timeoutMs} ms ran out before the handler finished`);
      await Promise.all([...this.calls]);
    }
    for (const end of [...this.streams]) end(); // their outcomes are written; the streams end
    await this.closeServer();
    this.state = 'stopped';
  }

  private startServer(): Promise<void> {
    const wire = loadWire();
    this.runner = new DeliveryRunner(this.handlers, this.maxInFlight);
    const server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    });
    const impl: ExecutorServiceHandlers = {
      Execute: (call, callback) => this.execute(call.request, callback),
      Work: (call) => this.work(call),
    };
    server.addService(wire.ExecutorService.service, impl);
    this.server = server;
    const bind = formatAddress(this.host, this.options.port ?? 0);
    return new Promise<void>((resolve, reject) => {
      server.bindAsync(bind, this.credentials, (err, port) => {
        if (err) {
          reject(new Error(`executor cannot listen on ${bind}: ${err.message}`, { cause: err }));
          return;
        }
        this.boundPort = port;
        resolve();
      });
    });
  }

  private execute(request: ExecuteRequest__Output, callback: grpc.sendUnaryData<ExecuteResponse>): void {
    const received = performance.now();
    const runner = this.runner;
    const deliveries = request.deliveries;
    let outcomes: Promise<BuiltOutcome[]>;
    if (this.state !== 'running' || runner === null) {
      // Stopping (or a call that raced start): hand the batch back for another executor.
      const now = String(Date.now());
      outcomes = Promise.resolve(deliveries.map((d) => ({
        task_id: d.task?.task_id ?? '', attempt: d.attempt, kind: RETRYABLE, error: 'executor is stopping',
        stack_trace: '', result_json: '', started_at_ms: now, finished_at_ms: now,
      })));
    } else {
      outcomes = Promise.all(deliveries.map((d) => runner.run(d, received)));
    }
    const call = outcomes
      .then((list) => {
        for (const o of list) this.report(o);
        callback(null, { outcomes: list });
      })
      .catch((e: unknown) => { // runner.run never rejects; this is a last guard for the process
        callback({ code: grpc.status.INTERNAL, details: `executor error: ${String(e)}` });
      });
    const tracked = call.finally(() => this.calls.delete(tracked));
    this.calls.add(tracked);
  }

  /**
   * One dispatcher's Work stream: deliveries of each message start at once, and
   * each outcome is written when it is known, those known in the same turn of the
   * event loop together (one message). A task is never held back by a slow one sent
   * beside it, and a message costs both sides far less than an Execute call.
   * When the dispatcher closes its side, the stream ends once what runs has
   * answered; when the executor stops, `streams` ends each one the same way after
   * its in-flight work (tracked in `calls`, as Execute's) has answered.
   * Heartbeats of its attempts go up with the outcomes, batched the same way,
   * and their answers come down beside deliveries (heartbeat.ts).
   */
  private work(call: grpc.ServerDuplexStream<ExecuteRequest__Output, ExecuteResponse>): void {
    let pending: BuiltOutcome[] = [];
    let beats: Heartbeat[] = [];
    let flushing = false;
    let open = 0;
    let closing = false;
    let gone = false;
    const flush = (): void => {
      flushing = false;
      if (gone || (pending.length === 0 && beats.length === 0)) return;
      const outcomes = pending;
      pending = [];
      if (beats.length === 0) { // the usual case: no new array for heartbeats
        call.write({ outcomes });
        return;
      }
      const heartbeats = beats;
      beats = [];
      call.write({ outcomes, heartbeats });
    };
    const schedule = (): void => {
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    };
    const endIfDone = (): void => {
      if (!closing || open > 0 || gone) return;
      flush();
      gone = true;
      this.streams.delete(endWhenIdle);
      call.end();
    };
    const send = (outcome: BuiltOutcome): void => {
      this.report(outcome);
      pending.push(outcome);
      schedule();
    };
    const heartbeats = new HeartbeatStream((heartbeat) => {
      if (gone) return; // nobody reads them; a handler heartbeating for hours must not pile them up
      beats.push(heartbeat);
      schedule();
    }, this.log);
    const endWhenIdle = (): void => {
      closing = true;
      endIfDone();
    };
    this.streams.add(endWhenIdle);
    call.on('data', (request: ExecuteRequest__Output) => {
      const received = performance.now();
      const runner = this.runner;
      for (const answer of request.heartbeat_answers) heartbeats.answer(answer);
      for (const d of request.deliveries) {
        if (closing || this.state !== 'running' || runner === null) {
          const now = String(Date.now());
          send({ task_id: d.task?.task_id ?? '', attempt: d.attempt, kind: RETRYABLE, error: 'executor is stopping',
            stack_trace: '', result_json: '', started_at_ms: now, finished_at_ms: now });
          continue;
        }
        open += 1;
        const tracked: Promise<void> = runner.run(d, received, heartbeats).then(send).finally(() => {
          open -= 1;
          this.calls.delete(tracked);
          endIfDone();
        });
        this.calls.add(tracked);
      }
    });
    call.on('end', endWhenIdle);
    // The dispatcher is gone (cancelled, connection lost): nobody can read an outcome now.
    call.on('error', () => {
      gone = true;
      this.streams.delete(endWhenIdle);
    });
    call.on('cancelled', () => {
      gone = true;
      this.streams.delete(endWhenIdle);
    });
  }

  private report(outcome: BuiltOutcome): void {
    const hook = this.options.onOutcome;
    if (hook === undefined) return;
    try {
      hook(outcome);
    } catch (e) {
      this.log.warn(`onOutcome threw: ${String(e)}`);
    }
  }

  private async closeServer(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    // Every call has been answered by now; tryShutdown lets those answers go
    // out. A client that never reads them must not hold stop() for long.
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 2_000);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}
