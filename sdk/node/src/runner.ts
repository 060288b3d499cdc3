/**
 * Run one delivery to one outcome: the executor's hot path (Python: _runner.py).
 *
 * - Every delivery gets a deadline of `received + timeout_ms` on the monotonic
 *   clock. The dispatcher's RPC deadline is the task timeout (plus a margin),
 *   so counting from receipt, not from when the handler starts, keeps the
 *   answer inside the time the dispatcher is still listening. A delivery that
 *   waits for a free slot past its deadline is answered TIMED_OUT without running.
 * - A delivery with `start_within_ms` set that gets its slot later than that
 *   after receipt is not run at all: the slot is given back and the answer is
 *   NOT_STARTED (`started_at_ms` 0), which does not spend the attempt. The
 *   dispatcher's lease may have a new owner by then, which runs it itself.
 *   The same for one with `start_by_unix_ms` set that gets its slot at or after
 *   that instant (a batch held up on its way); whichever comes first wins.
 * - `maxInFlight` is one `Slots` shared by all Execute calls.
 * - At the deadline the handler's AbortSignal is aborted and the attempt is
 *   answered TIMED_OUT. A promise cannot be cancelled, so the slot stays taken
 *   until the handler's promise settles: the slot accounts for work that is
 *   really still going on (as Python does for its sync handlers), so a handler
 *   that ignores its signal visibly reduces capacity instead of piling up.
 * - A handler's failure never escapes: a thrown error, a rejected promise, a
 *   thrown non-Error value all become outcomes, and a handler that rejects
 *   after its attempt was answered is still caught (nothing reaches
 *   'unhandledRejection').
 * - `abortAll` is for a graceful stop that ran out of time: every delivery not
 *   answered yet is answered RETRYABLE at once, so the dispatcher re-queues it.
 * - A delivery that came by the Work stream runs with that stream's
 *   `HeartbeatStream` (heartbeat.ts). One with `heartbeat_timeout_ms` > 0 sends
 *   its first heartbeat just before its handler starts, so that the lease counts
 *   from the start and not from the handler's first call. An answer that stops
 *   the attempt (CANCEL, LOST) aborts its signal with a `TaskStoppedError`; the
 *   attempt is then answered STOPPED when the handler settles (or at its
 *   deadline), whatever it returned or threw.
 */
import { performance } from 'node:perf_hooks';
import { inspect } from 'node:util';
import { AttemptContext, type TaskContext } from './context';
import { NonRetryableError, TaskStoppedError } from './errors';
import type { Delivery__Output } from './gen/taskring/v1/Delivery';
import type { Outcome } from './gen/taskring/v1/Outcome';
import type { OutcomeKind__Output } from './gen/taskring/v1/OutcomeKind';
import { decodeDetails, type HeartbeatStream } from './heartbeat';
import { parseInstant } from './instant';
import { resultJsonOf } from './result';
import { Slots } from './slots';
import { callTraced } from './tracing';

/** A handler: gets the context, returns (a promise of) anything; throw to fail. */
export type Handler = (ctx: TaskContext) => unknown;

/** Deadline when neither the delivery nor the task carries one (a dispatcher always should). */
export const FALLBACK_TIMEOUT_MS = 300_000;

/** Stack traces are stored with the task's history; keep the innermost frames of long ones. */
export const MAX_TRACE_CHARS = 16_384;

export const SUCCEEDED: OutcomeKind__Output = 'OUTCOME_KIND_SUCCEEDED';
export const RETRYABLE: OutcomeKind__Output = 'OUTCOME_KIND_RETRYABLE_FAILURE';
export const NON_RETRYABLE: OutcomeKind__Output = 'OUTCOME_KIND_NON_RETRYABLE_FAILURE';
export const TIMED_OUT: OutcomeKind__Output = 'OUTCOME_KIND_TIMED_OUT';
export const NO_HANDLER: OutcomeKind__Output = 'OUTCOME_KIND_NO_HANDLER';
export const NOT_STARTED: OutcomeKind__Output = 'OUTCOME_KIND_NOT_STARTED';
export const STOPPED: OutcomeKind__Output = 'OUTCOME_KIND_STOPPED';

/**
 * Why the delivery must not start now ('' when it may): the end of the dispatcher's
 * lease, as time since arrival (`start_within_ms`, against the monotonic `received`)
 * or as an instant (`start_by_unix_ms`), as `_too_late_to_start` in Python.
 */
export function tooLateToStart(d: Delivery__Output, received: number): string {
  const startWithinMs = d.start_within_ms;
  if (startWithinMs && performance.now() - received > startWithinMs) {
    return `not started within ${startWithinMs} ms of arrival (max_in_flight is reached)`;
  }
  const startBy = int64(d.start_by_unix_ms);
  if (startBy !== 0n && BigInt(Date.now()) >= startBy) {
    return `not started by ${startBy} (unix ms): the dispatcher's lease had run out when it arrived`;
  }
  return '';
}

/**
 * An int64 field as a BigInt, 0n when absent. The loader options (src/wire/options.ts)
 * give a decimal string; a number or a Long is taken too. Never through a double.
 */
function int64(v: string | number | { toString(): string } | null | undefined): bigint {
  if (v === undefined || v === null || v === '') return 0n;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'bigint') return v;
  return BigInt(v.toString()); // a string, or a Long (whose toString() is decimal)
}

/** An outcome as this SDK builds it: every field set (int64 times as decimal strings). */
export interface BuiltOutcome extends Outcome {
  task_id: string;
  attempt: number;
  kind: OutcomeKind__Output;
  error: string;
  stack_trace: string;
  result_json: string;
  started_at_ms: string;
  finished_at_ms: string;
}

/** A delivery being run; `stop` answers it now (graceful stop out of time). */
interface Running {
  stop(reason: string): void;
}

/** JavaScript keeps the innermost frames first (Python keeps them last): cut the tail. */
export function trimTrace(trace: string): string {
  return trace.length <= MAX_TRACE_CHARS ? trace : trace.slice(0, MAX_TRACE_CHARS) + '\n...(truncated)';
}

/** (error, stack_trace) of anything thrown, for an Outcome. Never throws. */
export function describeThrown(thrown: unknown): { error: string; trace: string } {
  if (thrown instanceof Error) {
    return { error: `${thrown.name}: ${thrown.message}`, trace: trimTrace(thrown.stack ?? '') };
  }
  let text: string;
  try {
    text = inspect(thrown, { depth: 2, breakLength: Infinity });
  } catch {
    text = Object.prototype.toString.call(thrown);
  }
  return { error: `non-Error value thrown: ${text.slice(0, 1000)}`, trace: '' };
}

/**
 * A success with its result when the delivery keeps it (`keep_result`); a
 * NON_RETRYABLE failure "result: ..." when the value cannot be kept (a retry
 * would return the same); the success as it is when no result is wanted.
 */
export function keptResult(ctx: TaskContext, value: unknown, success: BuiltOutcome): BuiltOutcome {
  if (!ctx.keepsResult) return success;
  const { json, error } = resultJsonOf(value);
  return error ? { ...success, kind: NON_RETRYABLE, error } : { ...success, result_json: json };
}

function failureKind(thrown: unknown): OutcomeKind__Output {
  return thrown instanceof NonRetryableError ? NON_RETRYABLE : RETRYABLE;
}

export class DeliveryRunner {
  private readonly slots: Slots;
  private readonly running = new Set<Running>();
  /** Aborted by abortAll: ends the waits for a slot too. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly handlers: ReadonlyMap<string, Handler>,
    maxInFlight: number,
  ) {
    this.slots = new Slots(maxInFlight);
  }

  /** Handlers running now, including timed-out ones whose promise has not settled. */
  get inFlight(): number {
    return this.slots.taken;
  }

  /** Deliveries waiting for a free slot. */
  get waiting(): number {
    return this.slots.waiting;
  }

  /** Answer every delivery not answered yet as RETRYABLE, now, and abort their handlers. */
  abortAll(reason: string): void {
    this.stopping.abort(new Error(reason));
    for (const r of [...this.running]) r.stop(reason);
  }

  /**
   * One delivery to one outcome. Never rejects. `heartbeats`: the Work stream's,
   * null for an Execute call (whose handlers' heartbeat() sends nothing).
   */
  async run(d: Delivery__Output, received: number, heartbeats: HeartbeatStream | null = null): Promise<BuiltOutcome> {
    const task = d.task;
    const taskId = task?.task_id ?? '';
    const answer = (kind: OutcomeKind__Output, error: string, trace = '', started?: number): BuiltOutcome => {
      const now = Date.now();
      return {
        task_id: taskId, attempt: d.attempt, kind, error, stack_trace: trace, result_json: '',
        started_at_ms: String(started ?? now), finished_at_ms: String(now),
      };
    };
    try {
      if (task === null) return answer(NON_RETRYABLE, 'task: the delivery carries no task');
      const handler = this.handlers.get(task.task_type);
      if (handler === undefined) {
        return answer(NO_HANDLER, `no handler for task type '${task.task_type}' in this executor`);
      }
      const timeoutMs = d.timeout_ms || (task.timeout_ms ?? FALLBACK_TIMEOUT_MS);
      const deadline = received + timeoutMs;
      let payload: Record<string, unknown>;
      try {
        payload = decodePayload(task.payload_json);
      } catch (e) { // a payload the server should never have accepted
        return answer(NON_RETRYABLE, `payload_json: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (this.stopping.signal.aborted) return answer(RETRYABLE, 'executor is stopping');
      if (!(await this.slots.acquire(deadline, this.stopping.signal))) {
        if (this.stopping.signal.aborted) return answer(RETRYABLE, 'executor stopped while the task waited for a free slot');
        return answer(TIMED_OUT, `deadline of ${timeoutMs} ms passed while waiting for a free slot (max_in_flight is reached)`);
      }
      const late = tooLateToStart(d, received);
      if (late) {
        // Past what the dispatcher's lease allowed: its slot may have a new
        // owner by now, which runs the attempt itself. Not run, not spent.
        this.slots.release();
        return answer(NOT_STARTED, late, '', 0);
      }
      const controller = new AbortController();
      const ctx = new AttemptContext({
        taskId, namespace: task.namespace, taskType: task.task_type, payload, attempt: d.attempt,
        epoch: d.epoch, traceId: task.trace_id, payloadVersion: task.payload_version,
        createdAt: createdAt(task.created_at), deadline, heartbeatTimeoutMs: d.heartbeat_timeout_ms,
        lastHeartbeatDetails: decodeDetails(d.heartbeat_details_json),
        keepsResult: d.keep_result, parentResultsTruncated: d.parent_results_truncated,
      }, controller, heartbeats, d.parent_results);
      return await this.runHandler(handler, ctx, controller, timeoutMs, answer);
    } catch (e) { // a bug here must not fail the whole batch
      const { error, trace } = describeThrown(e);
      return answer(RETRYABLE, `executor error: ${error}`, trace);
    }
  }

  private runHandler(
    handler: Handler,
    ctx: AttemptContext,
    controller: AbortController,
    timeoutMs: number,
    answer: (kind: OutcomeKind__Output, error: string, trace?: string, started?: number) => BuiltOutcome,
  ): Promise<BuiltOutcome> {
    const started = Date.now();
    return new Promise<BuiltOutcome>((resolve) => {
      let answered = false;
      const finish = (outcome: BuiltOutcome): void => {
        if (answered) return;
        answered = true;
        clearTimeout(timer);
        this.running.delete(entry);
        AttemptContext.end(ctx);
        // Stopped by a heartbeat's answer (the abort that came first is the one kept):
        // the dispatcher asked for STOPPED, whatever the handler did after that.
        const reason: unknown = controller.signal.reason;
        resolve(reason instanceof TaskStoppedError ? answer(STOPPED, reason.message, '', started) : outcome);
      };
      const timer = setTimeout(() => {
        controller.abort(new DOMException(`the attempt's timeout of ${timeoutMs} ms passed`, 'TimeoutError'));
        finish(answer(TIMED_OUT, `handler exceeded its timeout of ${timeoutMs} ms; its signal was aborted`, '', started));
      }, Math.max(0, ctx.deadline - performance.now()));
      const entry: Running = {
        stop: (reason) => {
          controller.abort(new Error(reason));
          finish(answer(RETRYABLE, reason, '', started));
        },
      };
      this.running.add(entry);
      let result: Promise<unknown>;
      try {
        if (ctx.heartbeatTimeoutMs > 0) ctx.heartbeat(); // the lease counts from the start (no-op without a stream)
        // In a span continuing the submitter's trace, when the task carries one (tracing.ts).
        result = Promise.resolve(callTraced(ctx, () => handler(ctx))); // a sync throw lands in the catch below
      } catch (e) {
        result = Promise.reject(e);
      }
      result
        .then(
          (value) => finish(keptResult(ctx, value, answer(SUCCEEDED, '', '', started))),
          (e: unknown) => {
            const { error, trace } = describeThrown(e);
            finish(answer(failureKind(e), error, trace, started));
          },
        )
        .finally(() => this.slots.release()); // only now: the work has really ended
    });
  }
}

/** The payload object; empty text is the empty object. */
export function decodePayload(text: string): Record<string, unknown> {
  if (!text) return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SyntaxError('not a JSON object');
  }
  return value as Record<string, unknown>;
}

function createdAt(text: string): Date | null {
  if (!text) return null;
  try {
    return new Date(parseInstant(text));
  } catch {
    return null; // informational only; never fail a task over it
  }
}
