/**
 * The task as a caller sees it: what you submit, and what you get back
 * (Python: taskring/task.py). Plain types with no gRPC in them; envelope.ts
 * turns them into wire messages and back.
 *
 * Durations are whole milliseconds (`delayMs`, `timeoutMs`), the unit in the
 * name as on the wire; Python takes seconds or timedeltas instead, because that
 * is what its standard library speaks, and JavaScript's speaks milliseconds.
 */

/** Where a task is in its lifecycle: accepted -> queued -> dispatched -> running -> succeeded, ... */
export type TaskState =
  | 'accepted' | 'queued' | 'dispatched' | 'running' | 'retry_wait'
  | 'succeeded' | 'failed' | 'dead_lettered' | 'cancelled'
  // a task of a graph: waiting for the tasks it depends on, or skipped by its join rule
  | 'waiting' | 'skipped';

/** True when the task will not run again (short of a manual replay). */
export function isTerminal(state: TaskState): boolean {
  return state === 'succeeded' || state === 'dead_lettered' || state === 'cancelled' || state === 'skipped';
}

/** Priority class; each has its own Kafka topic, so LOW never queues ahead of HIGH. */
export type Priority = 'low' | 'normal' | 'high';

/**
 * How a failed attempt is retried; overrides the task type's and the server's.
 * Either exponential backoff with full jitter, or, when `scheduleMs` is not
 * empty, a tiered schedule where retry n waits scheduleMs[min(n-1, len-1)].
 * Exponential fields left out take the Python SDK's defaults (1000 ms,
 * 300 000 ms, 2.0), as every SDK sends them; leave the whole policy out to get
 * the task type's, then the server's.
 */
export interface RetryPolicy {
  /** Upper bound of the first retry's jittered wait. */
  initialBackoffMs?: number;
  /** Cap on the upper bound of any jittered wait. */
  maxBackoffMs?: number;
  /** Growth of the upper bound per retry; >= 1 (1 is a constant backoff). */
  multiplier?: number;
  /** Tiered waits; when given, the three fields above are not sent. */
  scheduleMs?: readonly number[];
}

/** One task to submit: the argument of `Client.submit`, and an item of `submitBatch`. */
export interface TaskSpec {
  /** The owning service's namespace, [a-z0-9][a-z0-9._-]{0,63}. */
  namespace: string;
  /** Selects the handler, [A-Za-z0-9][A-Za-z0-9._:-]{0,127}. */
  taskType: string;
  /** A JSON object, sent as compact JSON text; absent or null sends {}. */
  payload?: Record<string, unknown> | null;
  /**
   * Your own id, which makes resubmission idempotent (a retried submit comes
   * back with `duplicate: true`) and lets the client retry it on another node.
   * The server assigns a UUIDv7 when absent.
   */
  taskId?: string;
  /** Run this many milliseconds after acceptance (rounded up). Exclusive with `scheduleTime`. */
  delayMs?: number;
  /** Run at this instant: a Date, or RFC 3339 text with an offset. Exclusive with `delayMs`. */
  scheduleTime?: Date | string;
  /** Per-attempt deadline of the handler; the server's default when absent. */
  timeoutMs?: number;
  /** Retries after the first attempt (0: none); the server's default when absent. */
  maxRetries?: number;
  retryPolicy?: RetryPolicy;
  /** Default 'normal'. */
  priority?: Priority;
  /** At most one live task per key (enforced by the server). */
  uniqueKey?: string;
  /** Carried to the handler, for joining logs across services. */
  traceId?: string;
  /** Schema version of the payload, for handlers that read several. */
  payloadVersion?: number;
}

/** The server's receipt for one submitted task. */
export interface SubmitResult {
  taskId: string;
  /** True when this taskId was already accepted; nothing new was written. */
  duplicate: boolean;
  state: TaskState;
  /** When the first attempt is due; null if the server sent none. */
  dueAt: Date | null;
  /** The slot (Kafka partition, unit of ownership) the task lives in. */
  slot: number;
}

/** One recorded transition of a task. */
export interface TaskEvent {
  state: TaskState;
  at: Date;
  /** The dispatcher node that recorded it. */
  node: string;
  attempt: number;
  /** Error text for failures, reason for cancels; often empty. */
  detail: string;
}

/** A task as stored, with its state and history (`Client.get`). */
export interface TaskInfo {
  taskId: string;
  namespace: string;
  taskType: string;
  state: TaskState;
  /** Attempts made so far. */
  attempts: number;
  dueAt: Date | null;
  slot: number;
  payload: Record<string, unknown>;
  payloadVersion: number;
  priority: Priority;
  lastError: string;
  lastStackTrace: string;
  /** Transitions, oldest first. */
  history: TaskEvent[];
  /** Why a due task has not started when its owner holds it at a limit of its type, e.g. "concurrency limit per_type (at most 20 running)"; "" otherwise. */
  waiting: string;
  createdAt: Date | null;
  scheduleTime: Date | null;
  /** null when the task carries none (the server's default applies). */
  timeoutMs: number | null;
  maxRetries: number | null;
  uniqueKey: string;
  traceId: string;
}
