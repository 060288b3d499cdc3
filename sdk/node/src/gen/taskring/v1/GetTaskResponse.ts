// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';
import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';
import type { TaskEvent as _taskring_v1_TaskEvent, TaskEvent__Output as _taskring_v1_TaskEvent__Output } from '../../taskring/v1/TaskEvent';

export interface GetTaskResponse {
  'task'?: (_taskring_v1_Task | null);
  'state'?: (_taskring_v1_TaskState);
  'attempts'?: (number);
  'due_at'?: (string);
  'slot'?: (number);
  'last_error'?: (string);
  'last_stack_trace'?: (string);
  /**
   * oldest first
   */
  'history'?: (_taskring_v1_TaskEvent)[];
  /**
   * Why a task that is due has not started, when its owner holds it at a limit of its type:
   * "concurrency limit per_type (at most 20 running)", "retry cap (...)", "rate limit per_key
   * tenant:7 (5 starts per 60000 ms)", ...; "" otherwise (not due yet, running, finished).
   */
  'waiting'?: (string);
}

export interface GetTaskResponse__Output {
  'task': (_taskring_v1_Task__Output | null);
  'state': (_taskring_v1_TaskState__Output);
  'attempts': (number);
  'due_at': (string);
  'slot': (number);
  'last_error': (string);
  'last_stack_trace': (string);
  /**
   * oldest first
   */
  'history': (_taskring_v1_TaskEvent__Output)[];
  /**
   * Why a task that is due has not started, when its owner holds it at a limit of its type:
   * "concurrency limit per_type (at most 20 running)", "retry cap (...)", "rate limit per_key
   * tenant:7 (5 starts per 60000 ms)", ...; "" otherwise (not due yet, running, finished).
   */
  'waiting': (string);
}
