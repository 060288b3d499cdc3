// Original file: proto/taskring/v1/taskring.proto

/**
 * The lifecycle of DESIGN.md:
 * accepted -> queued -> dispatched -> running -> succeeded
 * ... -> running -> retry_wait -> queued ...
 * ... -> failed -> dead_lettered, plus cancelled.
 */
export const TaskState = {
  TASK_STATE_UNSPECIFIED: 'TASK_STATE_UNSPECIFIED',
  TASK_STATE_ACCEPTED: 'TASK_STATE_ACCEPTED',
  TASK_STATE_QUEUED: 'TASK_STATE_QUEUED',
  TASK_STATE_DISPATCHED: 'TASK_STATE_DISPATCHED',
  TASK_STATE_RUNNING: 'TASK_STATE_RUNNING',
  TASK_STATE_RETRY_WAIT: 'TASK_STATE_RETRY_WAIT',
  TASK_STATE_SUCCEEDED: 'TASK_STATE_SUCCEEDED',
  TASK_STATE_FAILED: 'TASK_STATE_FAILED',
  TASK_STATE_DEAD_LETTERED: 'TASK_STATE_DEAD_LETTERED',
  TASK_STATE_CANCELLED: 'TASK_STATE_CANCELLED',
  /**
   * a task of a graph waiting for the tasks it depends on
   */
  TASK_STATE_WAITING: 'TASK_STATE_WAITING',
  /**
   * a task of a graph that will not run: its join rule can no longer be met
   */
  TASK_STATE_SKIPPED: 'TASK_STATE_SKIPPED',
} as const;

/**
 * The lifecycle of DESIGN.md:
 * accepted -> queued -> dispatched -> running -> succeeded
 * ... -> running -> retry_wait -> queued ...
 * ... -> failed -> dead_lettered, plus cancelled.
 */
export type TaskState =
  | 'TASK_STATE_UNSPECIFIED'
  | 0
  | 'TASK_STATE_ACCEPTED'
  | 1
  | 'TASK_STATE_QUEUED'
  | 2
  | 'TASK_STATE_DISPATCHED'
  | 3
  | 'TASK_STATE_RUNNING'
  | 4
  | 'TASK_STATE_RETRY_WAIT'
  | 5
  | 'TASK_STATE_SUCCEEDED'
  | 6
  | 'TASK_STATE_FAILED'
  | 7
  | 'TASK_STATE_DEAD_LETTERED'
  | 8
  | 'TASK_STATE_CANCELLED'
  | 9
  /**
   * a task of a graph waiting for the tasks it depends on
   */
  | 'TASK_STATE_WAITING'
  | 10
  /**
   * a task of a graph that will not run: its join rule can no longer be met
   */
  | 'TASK_STATE_SKIPPED'
  | 11

/**
 * The lifecycle of DESIGN.md:
 * accepted -> queued -> dispatched -> running -> succeeded
 * ... -> running -> retry_wait -> queued ...
 * ... -> failed -> dead_lettered, plus cancelled.
 */
export type TaskState__Output = typeof TaskState[keyof typeof TaskState]
