/**
 * The error tree of the SDK, mirroring the Python SDK's taskring/errors.py:
 * one root, two branches.
 *
 * - Errors a *client* sees are the server's gRPC status codes turned back into
 *   classes (`fromRpcError`), so callers write `if (e instanceof
 *   InvalidArgumentError) e.field` instead of comparing status codes. The
 *   server words every bad-input message as "<field>: <problem>"
 *   (dispatcher/errors.py), which is how `InvalidArgumentError` hands the field back.
 * - Errors a *handler* throws tell the executor what the failure means for
 *   retries: `RetryableError` asks for another attempt, `NonRetryableError`
 *   dead-letters the task at once. Anything else thrown (even a value that is
 *   not an Error) counts as retryable: an unexpected bug is more often
 *   transient than permanent, and a dead letter is the costlier mistake.
 *
 * Python names the classes without the suffix (`InvalidArgument`); JavaScript
 * convention and the brief want `...Error`, and the field/problem split is the same.
 */
import { status as Status } from '@grpc/grpc-js';

/** Root of every error the SDK throws on purpose. */
export class TaskringError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The name of a gRPC status code ("INVALID_ARGUMENT"), or its number as text if unknown. */
export function statusName(code: number): string {
  return Status[code] ?? String(code);
}

// ---- Client side: gRPC status codes from the server. ----

/**
 * A call to a dispatcher failed with a gRPC status. The subclasses name the
 * codes a caller is expected to handle; any other code is a plain `RpcError`.
 */
export class RpcError extends TaskringError {
  /** The gRPC status code (a number of `@grpc/grpc-js`'s `status`). */
  readonly code: number;
  /** Its name, e.g. "UNAVAILABLE". */
  readonly codeName: string;
  /** The server's message, "" when it sent none. */
  readonly details: string;

  constructor(code: number, details: string, options?: { cause?: unknown }) {
    const name = statusName(code);
    super(details ? `${name}: ${details}` : name, options);
    this.code = code;
    this.codeName = name;
    this.details = details;
  }
}

/** Split the server's "field: problem" wording; a field has no spaces. */
export function splitFieldProblem(details: string): { field: string; problem: string } {
  const i = details.indexOf(': ');
  if (i > 0) {
    const field = details.slice(0, i);
    if (!field.includes(' ')) return { field, problem: details.slice(i + 2) };
  }
  return { field: '', problem: details };
}

/**
 * The request was rejected as bad input and nothing was written. `field` names
 * the offending field ("tasks[2].payload_json" in a batch) or is "" when the
 * server named none; `problem` is the rest. Resubmitting fails the same way.
 */
export class InvalidArgumentError extends RpcError {
  readonly field: string;
  readonly problem: string;

  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.INVALID_ARGUMENT, details, options);
    ({ field: this.field, problem: this.problem } = splitFieldProblem(details));
  }
}

/** No task has that id (or it was purged). */
export class NotFoundError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.NOT_FOUND, details, options);
  }
}

/** The request conflicts with something already stored (e.g. a unique key). */
export class AlreadyExistsError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.ALREADY_EXISTS, details, options);
  }
}

/** The task is not in a state that allows the request (e.g. cancel after it finished). */
export class FailedPreconditionError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.FAILED_PRECONDITION, details, options);
  }
}

/**
 * The dispatcher (or a store under it) could not take the request right now.
 * Safe to retry; a submit retried with the same `taskId` is reported as a duplicate.
 */
export class UnavailableError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.UNAVAILABLE, details, options);
  }
}

/** The server is shedding load or the message was too large. Back off, then retry. */
export class ResourceExhaustedError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.RESOURCE_EXHAUSTED, details, options);
  }
}

/**
 * No answer within the client's RPC timeout. The request may or may not have
 * been applied: retry a submit with the same `taskId`, check a cancel with `get`.
 */
export class DeadlineExceededError extends RpcError {
  constructor(details: string, options?: { cause?: unknown }) {
    super(Status.DEADLINE_EXCEEDED, details, options);
  }
}

/** The caller is not allowed to do this (PERMISSION_DENIED or UNAUTHENTICATED). */
export class PermissionDeniedError extends RpcError {}

/** The server sent something this SDK version does not understand (e.g. a new state). */
export class ProtocolError extends TaskringError {}

/**
 * A task was refused before it was sent: the SDK checks what the wire cannot
 * carry (a negative delay, a time without offset, both delay and schedule time).
 * A handler's `ctx.heartbeat(details)` throws it too (field `details`: not JSON,
 * or too large), sending nothing.
 * Python raises ValueError/TypeError here; JavaScript has no such split, so
 * this carries `field`/`problem` like `InvalidArgumentError`.
 */
export class ValidationError extends TaskringError {
  readonly field: string;
  readonly problem: string;

  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.field = field;
    this.problem = problem;
  }
}

/** What a failed @grpc/grpc-js call hands its callback. */
interface GrpcFailure {
  code?: unknown;
  details?: unknown;
}

/** Turn a @grpc/grpc-js error into the matching `RpcError` subclass. */
export function fromRpcError(err: unknown): RpcError {
  const e = (typeof err === 'object' && err !== null ? err : {}) as GrpcFailure;
  const code = typeof e.code === 'number' ? e.code : Status.UNKNOWN;
  const details = typeof e.details === 'string' ? e.details : '';
  const options = { cause: err };
  switch (code) {
    case Status.INVALID_ARGUMENT: return new InvalidArgumentError(details, options);
    case Status.NOT_FOUND: return new NotFoundError(details, options);
    case Status.ALREADY_EXISTS: return new AlreadyExistsError(details, options);
    case Status.FAILED_PRECONDITION: return new FailedPreconditionError(details, options);
    case Status.UNAVAILABLE: return new UnavailableError(details, options);
    case Status.RESOURCE_EXHAUSTED: return new ResourceExhaustedError(details, options);
    case Status.DEADLINE_EXCEEDED: return new DeadlineExceededError(details, options);
    case Status.PERMISSION_DENIED:
    case Status.UNAUTHENTICATED:
      return new PermissionDeniedError(code, details, options);
    default: return new RpcError(code, details, options);
  }
}

// ---- Handler side: what a failure means for retries. ----

/** Base of the errors a handler throws to say how its failure is retried. */
export class HandlerError extends TaskringError {}

/**
 * Ask for another attempt, after the task's retry backoff. Throwing anything
 * else unexpected has the same effect; throw this one to say so on purpose.
 */
export class RetryableError extends HandlerError {}

/**
 * The task can never succeed as submitted: dead-letter it now, without retries
 * (e.g. the payload refers to an entity that does not exist).
 */
export class NonRetryableError extends HandlerError {}

/**
 * The dispatcher stopped this attempt: a heartbeat's answer said CANCEL (the task
 * was cancelled while it ran) or LOST (this attempt is not the task's running one
 * any more: its heartbeat lease ran out, or the dispatcher does not know it). It
 * is the reason `ctx.signal` is aborted with, and what `ctx.heartbeat()` throws
 * from then on. Whatever the handler does next, the attempt's outcome is
 * STOPPED with this message as its error, which is why the message is exactly
 * "cancelled: <reason>" / "lost: <reason>" (the other SDKs' wording).
 */
export class TaskStoppedError extends TaskringError {
  /** 'cancelled' for a CANCEL answer, 'lost' for a LOST one. */
  readonly verdict: 'cancelled' | 'lost';
  /** The dispatcher's reason, as it sent it. */
  readonly reason: string;

  constructor(verdict: 'cancelled' | 'lost', reason: string) {
    super(`${verdict}: ${reason}`);
    this.verdict = verdict;
    this.reason = reason;
  }
}
