/**
 * What a handler is told about the task it runs (Python: taskring/context.py).
 *
 * Built once per delivery and handed to the handler as its only argument. It
 * carries (taskId, attempt, epoch) so a handler can make its effects
 * idempotent: at-least-once delivery means the same attempt can arrive twice,
 * and the epoch tells a stale dispatcher's delivery from the current owner's.
 */
import { performance } from 'node:perf_hooks';

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
   * Aborted at the deadline (reason: a `TimeoutError` DOMException) or when a
   * graceful stop runs out of time. Pass it to fetch() and friends: JavaScript
   * cannot stop a promise, so a handler that ignores it runs on, holding its
   * in-flight slot, after its attempt was reported TIMED_OUT.
   */
  readonly signal: AbortSignal;
  /** Milliseconds left before the deadline (negative once passed). */
  remainingMs(): number;
}

export function makeContext(fields: Omit<TaskContext, 'remainingMs'>): TaskContext {
  const deadline = fields.deadline;
  return Object.freeze({ ...fields, remainingMs: () => deadline - performance.now() });
}
