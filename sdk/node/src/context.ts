/**
 * What a handler is told about the task it runs (Python: taskring/context.py).
 *
 * Built once per delivery and handed to the handler as its only argument. It
 * carries (taskId, attempt, epoch) so a handler can make its effects
 * idempotent: at-least-once delivery means the same attempt can arrive twice,
 * and the epoch tells a stale dispatcher's delivery from the current owner's.
 *
 * It is also how a long handler heartbeats (heartbeat.ts). The heartbeat
 * state lives in private fields of this one object, so a delivery that never
 * heartbeats allocates nothing for it: the hot path of many tiny tasks stays
 * as it was.
 */
import { performance } from 'node:perf_hooks';
import { TaskStoppedError } from './errors';
import type { ParentResult__Output } from './gen/taskring/v1/ParentResult';
import { encodeDetails, type HeartbeatStream } from './heartbeat';
import { parentResultsFromWire, type ParentResult } from './result';

export interface TaskContext {
  readonly taskId: string;
  readonly namespace: string;
  readonly taskType: string;
  /** The submitted JSON object, decoded. Mutating it changes nothing upstream. */
  readonly payload: Record<string, unknown>;
  /** 1 for the first run, 2 for the first retry, ... */
  readonly attempt: number;
  /** Ownership epoch of the task's slot at dispatch (the fencing token), a decimal string: it is a uint64. */
  readonly epoch: string;
  readonly traceId: string;
  readonly payloadVersion: number;
  /** When the task was accepted, as recorded by the server; null when absent or unreadable. */
  readonly createdAt: Date | null;
  /**
   * When this attempt times out, on the `performance.now()` clock. Counted
   * from when the executor received the delivery, so time spent waiting for a
   * free slot (maxInFlight) is part of the attempt's budget.
   */
  readonly deadline: number;
  /**
   * Aborted at the deadline (reason: a `TimeoutError` DOMException), when a
   * heartbeat's answer stops the attempt (reason: a `TaskStoppedError`), or
   * when a graceful stop runs out of time. Pass it to fetch() and friends:
   * JavaScript cannot stop a promise, so a handler that ignores it runs on,
   * holding its in-flight slot, after its attempt was reported TIMED_OUT.
   */
  readonly signal: AbortSignal;
  /**
   * 0: this task need not heartbeat. Otherwise the attempt is alive only while
   * its heartbeats reach the dispatcher: call `heartbeat()` at least this often
   * (in ms), or the attempt is recorded as timed out and retried.
   */
  readonly heartbeatTimeoutMs: number;
  /**
   * The details of the last heartbeat an earlier attempt of this task sent,
   * decoded from JSON, to resume where it stopped; undefined when there are none.
   */
  readonly lastHeartbeatDetails: unknown;
  /**
   * A task of a graph that other tasks depend on: the value the handler
   * returns is kept and handed to them (it must then be JSON, at most 65,536
   * bytes, or the attempt fails non-retryably with "result: ..."). Otherwise
   * the return value is ignored (result.ts).
   */
  readonly keepsResult: boolean;
  /**
   * A task of a graph: how each task it depends on ended, with the value its
   * handler returned, by key (empty for any other task). Decoded on first use.
   */
  readonly parentResults: ReadonlyMap<string, ParentResult>;
  /**
   * The parents' results came to more than 1 MiB, and some were left out (their
   * `truncated` is true): read them with `client.getGraph(..., { withResults: true })`.
   */
  readonly parentResultsTruncated: boolean;
  /** Milliseconds left before the deadline (negative once passed). */
  remainingMs(): number;
  /**
   * Say the attempt is alive, and optionally record `details` (any JSON value,
   * at most 65,536 bytes) for a later attempt to resume from
   * (`lastHeartbeatDetails`); without details the last ones are kept. It queues
   * the heartbeat and returns at once, without waiting for the answer.
   *
   * Throws, sending nothing, a `ValidationError` (field `details`) when the
   * details do not serialize to JSON or are too large, and a `TaskStoppedError`
   * once an answer has stopped the attempt (CANCEL or LOST; `signal` was
   * aborted then). A delivery that came by an Execute call rather than the
   * Work stream has no way to send one: the details are checked and nothing
   * is sent (the dispatcher only enforces heartbeats on the stream).
   */
  heartbeat(details?: unknown): void;
}

/** What the runner fills in; the rest is the context's own. */
export type ContextFields = Omit<TaskContext, 'signal' | 'remainingMs' | 'heartbeat' | 'parentResults'>;

// The class gets the fields' declarations from here (declaration merging); its constructor copies them in.
export interface AttemptContext extends ContextFields {}

/** The TaskContext of one attempt. Frozen: a handler can read it, not change it. */
export class AttemptContext implements TaskContext {
  readonly signal: AbortSignal;
  readonly #controller: AbortController;
  /** The Work stream the delivery came by; null for an Execute call, which cannot carry heartbeats. */
  readonly #stream: HeartbeatStream | null;
  /** A heartbeat went up #stream, so its answers are routed here until the attempt ends. */
  #beating = false;
  /** The attempt has been answered: a heartbeat now could only be refused. */
  #ended = false;
  /** The delivery's parent_results, as they came: most tasks are of no graph, and most handlers never look. */
  readonly #parentsWire: readonly ParentResult__Output[];
  #parents: ReadonlyMap<string, ParentResult> | undefined;

  constructor(fields: ContextFields, controller: AbortController, stream: HeartbeatStream | null,
    parents: readonly ParentResult__Output[] = []) {
    Object.assign(this, fields);
    this.signal = controller.signal;
    this.#controller = controller;
    this.#stream = stream;
    this.#parentsWire = parents;
    Object.freeze(this); // the private fields above stay writable: they are not properties
  }

  get parentResults(): ReadonlyMap<string, ParentResult> {
    this.#parents ??= parentResultsFromWire(this.#parentsWire, this.parentResultsTruncated);
    return this.#parents;
  }

  remainingMs(): number {
    return this.deadline - performance.now();
  }

  heartbeat(details?: unknown): void {
    const json = encodeDetails(details);
    const reason: unknown = this.signal.reason;
    // A fresh error, so that its stack shows the handler's call rather than where the answer came in.
    if (reason instanceof TaskStoppedError) throw new TaskStoppedError(reason.verdict, reason.reason);
    if (this.#stream === null || this.#ended) return;
    this.#beating = true;
    this.#stream.beat(this.taskId, this.attempt, this.#controller, json);
  }

  /** For the runner: the attempt has been answered, its heartbeats' answers no longer concern it. */
  static end(ctx: AttemptContext): void {
    ctx.#ended = true;
    if (ctx.#beating) ctx.#stream?.release(ctx.taskId, ctx.attempt, ctx.#controller);
  }
}
