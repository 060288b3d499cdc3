/**
 * Conversions between the SDK's types (task.ts) and the wire messages
 * (Python: _envelope.py). The one place that knows the wire's conventions: the
 * payload travels as compact JSON text, durations as whole milliseconds
 * (rounded up so nothing runs early), uint64 as decimal strings (a JS number
 * silently loses precision past 2^53), instants as RFC 3339 with an offset, and
 * an absent optional field means "the server's default".
 *
 * Only what the wire cannot carry is checked here (a negative delay, a time
 * without an offset, both a delay and a schedule time, an unknown priority);
 * name syntax, payload size and retry ranges are judged by the server, which
 * names the field in an InvalidArgumentError, so those rules live in one place.
 */
import { ProtocolError, ValidationError } from './errors';
import type { GetTaskResponse__Output } from './gen/taskring/v1/GetTaskResponse';
import type { Priority as WirePriority } from './gen/taskring/v1/Priority';
import type { RetryPolicy as WireRetryPolicy } from './gen/taskring/v1/RetryPolicy';
import type { SubmitResponse__Output } from './gen/taskring/v1/SubmitResponse';
import type { Task } from './gen/taskring/v1/Task';
import { formatInstant, parseInstant } from './instant';
import type { Priority, RetryPolicy, SubmitResult, TaskInfo, TaskSpec, TaskState } from './task';

export const UINT32_MAX = 2 ** 32 - 1;
export const INT32_MIN = -(2 ** 31);
export const INT32_MAX = 2 ** 31 - 1;

const STATES: Readonly<Record<string, TaskState>> = {
  TASK_STATE_ACCEPTED: 'accepted',
  TASK_STATE_QUEUED: 'queued',
  TASK_STATE_DISPATCHED: 'dispatched',
  TASK_STATE_RUNNING: 'running',
  TASK_STATE_RETRY_WAIT: 'retry_wait',
  TASK_STATE_SUCCEEDED: 'succeeded',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_DEAD_LETTERED: 'dead_lettered',
  TASK_STATE_CANCELLED: 'cancelled',
  TASK_STATE_WAITING: 'waiting',
  TASK_STATE_SKIPPED: 'skipped',
};

const PRIORITY_TO_WIRE: Readonly<Record<Priority, WirePriority>> = {
  low: 'PRIORITY_LOW',
  normal: 'PRIORITY_NORMAL',
  high: 'PRIORITY_HIGH',
};

const PRIORITY_FROM_WIRE: Readonly<Record<string, Priority>> = {
  PRIORITY_UNSPECIFIED: 'normal', // the proto says so
  PRIORITY_LOW: 'low',
  PRIORITY_NORMAL: 'normal',
  PRIORITY_HIGH: 'high',
};

/** pb.TaskState -> TaskState; an unknown value means this SDK is older than the server. */
export function stateFromWire(value: unknown): TaskState {
  const state = typeof value === 'string' ? STATES[value] : undefined;
  if (state === undefined) throw new ProtocolError(`server sent unknown task state ${String(value)}; upgrade the taskring SDK`);
  return state;
}

/** Compact JSON text of a payload object; absent/null is the empty object. */
export function encodePayload(payload: unknown, field = 'payload'): string {
  if (payload === undefined || payload === null) return '{}';
  if (typeof payload !== 'object' || Array.isArray(payload)) {
    throw new ValidationError(field, `must be a JSON object, got ${Array.isArray(payload) ? 'an array' : typeof payload}`);
  }
  try {
    // JSON.stringify would write NaN/Infinity as null: corrupt data, not an encoding.
    return JSON.stringify(payload, (_key, value: unknown) => {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError(`${value} is not valid JSON`);
      return value;
    });
  } catch (e) {
    throw new ValidationError(field, `not encodable as JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Whole milliseconds, rounded up (a delay must never make a task run early), within [min, max]. */
export function millis(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new ValidationError(field, `must be a number of milliseconds, got ${typeof value === 'number' ? 'NaN' : typeof value}`);
  }
  if (value < 0) throw new ValidationError(field, `must not be negative, got ${value}`);
  const ms = Math.ceil(value);
  if (ms < min || ms > max) throw new ValidationError(field, `must be between ${min} and ${max} ms, got ${value}`);
  return ms;
}

export function integer(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(field, `must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function optionalText(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ValidationError(field, `must be a string, got ${typeof value}`);
  return value;
}

export function requiredText(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new ValidationError(field, `must be a string, got ${typeof value}`);
  return value; // its syntax is the server's to judge
}

/** Python's RetryPolicy defaults, filled in for the exponential fields a caller leaves out. */
export const RETRY_DEFAULTS = Object.freeze({ initialBackoffMs: 1_000, maxBackoffMs: 300_000, multiplier: 2.0 });

/**
 * The wire RetryPolicy. As in the Python SDK (and sdk/vectors), a tiered policy
 * sends only schedule_ms, and an exponential one sends all three fields, the
 * ones left out taking Python's defaults (1 s, 5 min, x2).
 */
export function retryPolicyToWire(policy: RetryPolicy, field = 'retryPolicy'): WireRetryPolicy {
  if (typeof policy !== 'object' || policy === null) throw new ValidationError(field, 'must be an object');
  const schedule = policy.scheduleMs ?? [];
  if (!Array.isArray(schedule)) throw new ValidationError(`${field}.scheduleMs`, 'must be an array of milliseconds');
  if (schedule.length > 0) {
    return {
      schedule_ms: schedule.map((w, i) => String(millis(w, `${field}.scheduleMs[${i}]`, 0, Number.MAX_SAFE_INTEGER))),
    };
  }
  const initial = millis(policy.initialBackoffMs ?? RETRY_DEFAULTS.initialBackoffMs, `${field}.initialBackoffMs`, 0, Number.MAX_SAFE_INTEGER);
  const cap = millis(policy.maxBackoffMs ?? RETRY_DEFAULTS.maxBackoffMs, `${field}.maxBackoffMs`, 0, Number.MAX_SAFE_INTEGER);
  if (cap < initial) throw new ValidationError(`${field}.maxBackoffMs`, 'must be at least initialBackoffMs');
  const m = policy.multiplier ?? RETRY_DEFAULTS.multiplier;
  if (typeof m !== 'number' || !Number.isFinite(m) || m < 1) {
    throw new ValidationError(`${field}.multiplier`, `must be a finite number >= 1, got ${String(m)}`);
  }
  return { initial_backoff_ms: String(initial), max_backoff_ms: String(cap), multiplier: m };
}

/**
 * The wire Task for one spec, checked. `prefix` names the spec in errors
 * ("tasks[3]." in a batch).
 */
export function specToWire(spec: TaskSpec, prefix = ''): Task {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError(prefix.replace(/\.$/, '') || 'task', 'must be an object');
  const f = (name: string): string => `${prefix}${name}`;
  const priority = spec.priority === undefined ? 'normal' : String(spec.priority).toLowerCase();
  if (!Object.hasOwn(PRIORITY_TO_WIRE, priority)) {
    throw new ValidationError(f('priority'), `must be one of low, normal, high; got ${JSON.stringify(spec.priority)}`);
  }
  const task: Task = {
    namespace: requiredText(spec.namespace, f('namespace')),
    task_type: requiredText(spec.taskType, f('taskType')),
    payload_json: encodePayload(spec.payload, f('payload')),
    priority: PRIORITY_TO_WIRE[priority as Priority],
  };
  if (spec.delayMs !== undefined && spec.scheduleTime !== undefined) {
    throw new ValidationError(f('delayMs'), 'give either delayMs or scheduleTime, not both');
  }
  const taskId = optionalText(spec.taskId, f('taskId'));
  if (taskId !== undefined) task.task_id = taskId;
  if (spec.payloadVersion !== undefined) {
    task.payload_version = integer(spec.payloadVersion, f('payloadVersion'), 0, UINT32_MAX);
  }
  if (spec.delayMs !== undefined) {
    // Beyond 2^53 a number is no longer a whole count of milliseconds; the server caps at 90 days anyway.
    task.delay_ms = String(millis(spec.delayMs, f('delayMs'), 0, Number.MAX_SAFE_INTEGER));
  }
  if (spec.scheduleTime !== undefined) {
    const st: unknown = spec.scheduleTime;
    if (!(st instanceof Date) && typeof st !== 'string') {
      throw new ValidationError(f('scheduleTime'), `must be a Date or RFC 3339 text with an offset, got ${typeof st}`);
    }
    try {
      task.schedule_time = formatInstant(st);
    } catch (e) {
      throw new ValidationError(f('scheduleTime'), e instanceof Error ? e.message : String(e));
    }
  }
  if (spec.timeoutMs !== undefined) task.timeout_ms = millis(spec.timeoutMs, f('timeoutMs'), 1, UINT32_MAX);
  if (spec.maxRetries !== undefined) task.max_retries = integer(spec.maxRetries, f('maxRetries'), INT32_MIN, INT32_MAX);
  if (spec.retryPolicy !== undefined) task.retry_policy = retryPolicyToWire(spec.retryPolicy, f('retryPolicy'));
  const uniqueKey = optionalText(spec.uniqueKey, f('uniqueKey'));
  if (uniqueKey !== undefined) task.unique_key = uniqueKey;
  const traceId = optionalText(spec.traceId, f('traceId'));
  if (traceId !== undefined) task.trace_id = traceId;
  return task;
}

/** An instant from the server; "" means unset. */
export function instantOrNull(text: string, what: string): Date | null {
  if (!text) return null;
  try {
    return new Date(parseInstant(text));
  } catch {
    throw new ProtocolError(`server sent a malformed time in ${what}: ${JSON.stringify(text)}`);
  }
}

function requireInstant(text: string, what: string): Date {
  const at = instantOrNull(text, what);
  if (at === null) throw new ProtocolError(`server sent an empty ${what}`);
  return at;
}

export function submitResultFromWire(msg: SubmitResponse__Output): SubmitResult {
  return {
    taskId: msg.task_id,
    duplicate: msg.duplicate,
    state: stateFromWire(msg.state),
    dueAt: instantOrNull(msg.due_at, 'due_at'),
    slot: msg.slot,
  };
}

/** The payload object of a stored task; empty text is the empty object. */
export function decodeStoredPayload(text: string): Record<string, unknown> {
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ProtocolError(`payload_json is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError('payload_json is not a JSON object');
  }
  return value as Record<string, unknown>;
}

export function taskInfoFromWire(msg: GetTaskResponse__Output): TaskInfo {
  const task = msg.task;
  if (task === null) throw new ProtocolError('server sent a GetTaskResponse without a task');
  return {
    taskId: task.task_id,
    namespace: task.namespace,
    taskType: task.task_type,
    state: stateFromWire(msg.state),
    attempts: msg.attempts,
    dueAt: instantOrNull(msg.due_at, 'due_at'),
    slot: msg.slot,
    payload: decodeStoredPayload(task.payload_json),
    payloadVersion: task.payload_version,
    priority: PRIORITY_FROM_WIRE[String(task.priority)] ?? 'normal',
    lastError: msg.last_error,
    lastStackTrace: msg.last_stack_trace,
    history: msg.history.map((ev) => ({
      state: stateFromWire(ev.state),
      at: requireInstant(ev.at, 'history.at'),
      node: ev.node,
      attempt: ev.attempt,
      detail: ev.detail,
    })),
    waiting: msg.waiting,
    createdAt: instantOrNull(task.created_at, 'task.created_at'),
    scheduleTime: instantOrNull(task.schedule_time, 'task.schedule_time'),
    timeoutMs: task.timeout_ms ?? null,
    maxRetries: task.max_retries ?? null,
    uniqueKey: task.unique_key,
    traceId: task.trace_id,
  };
}
