// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';

export interface SubmitResponse {
  'task_id'?: (string);
  /**
   * true when task_id was already accepted, or unique_key is held by the task
   */
  'duplicate'?: (boolean);
  /**
   * task_id names: nothing new was written
   */
  'state'?: (_taskring_v1_TaskState);
  /**
   * RFC 3339 UTC
   */
  'due_at'?: (string);
  'slot'?: (number);
}

export interface SubmitResponse__Output {
  'task_id': (string);
  /**
   * true when task_id was already accepted, or unique_key is held by the task
   */
  'duplicate': (boolean);
  /**
   * task_id names: nothing new was written
   */
  'state': (_taskring_v1_TaskState__Output);
  /**
   * RFC 3339 UTC
   */
  'due_at': (string);
  'slot': (number);
}
