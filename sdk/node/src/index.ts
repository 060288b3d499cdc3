/**
 * taskring for Node.js: submit tasks (and graphs of them) with `Client`; run
 * them with an `Executor` and handlers that take a `TaskContext`.
 */
export { Client, tlsCredentials, type ClientOptions } from './client';
export type { TaskContext } from './context';
export { CronRules, type CronRuleInfo, type CronRuleSpec, type StoredCronRuleSpec } from './cron';
export {
  AlreadyExistsError,
  DeadlineExceededError,
  FailedPreconditionError,
  HandlerError,
  InvalidArgumentError,
  NonRetryableError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  ResourceExhaustedError,
  RetryableError,
  RpcError,
  TaskStoppedError,
  TaskringError,
  UnavailableError,
  ValidationError,
  fromRpcError,
} from './errors';
export { Executor, type ExecutorOptions } from './executor';
export { executorTlsFromEnv, type ExecutorTlsOptions } from './executor-tls';
export {
  Graph,
  GraphTaskHandle,
  Join,
  type CancelGraphOptions,
  type CancelMode,
  type Dependency,
  type GraphSpec,
  type GraphTaskSpec,
  type JoinRule,
  type OnFailure,
} from './graph';
export type { CancelledGraph, GraphEdge, GraphInfo, GraphNode, GraphTaskRef, SubmittedGraph } from './graph-info';
export { formatInstant, parseInstant } from './instant';
export { consoleLogger, silentLogger, type Logger } from './log';
export { Policies, type PolicySource, type TypePolicy } from './policies';
export { MAX_RESULT_BYTES, ParentResult } from './result';
export { backoffCeilingMs, retryDelayMs, type ResolvedRetryPolicy } from './retry';
export type { BuiltOutcome as Outcome, Handler } from './runner';
export {
  isTerminal,
  type Priority,
  type RetryPolicy,
  type SubmitResult,
  type TaskEvent,
  type TaskInfo,
  type TaskSpec,
  type TaskState,
} from './task';
