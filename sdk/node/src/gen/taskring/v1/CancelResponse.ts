// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';

export interface CancelResponse {
  'task_id'?: (string);
  /**
   * CANCELLED on success
   */
  'state'?: (_taskring_v1_TaskState);
}

export interface CancelResponse__Output {
  'task_id': (string);
  /**
   * CANCELLED on success
   */
  'state': (_taskring_v1_TaskState__Output);
}
