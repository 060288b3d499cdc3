// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';

export interface GraphTaskRef {
  'key'?: (string);
  /**
   * derived from namespace, graph id and key
   */
  'task_id'?: (string);
  'state'?: (_taskring_v1_TaskState);
  'slot'?: (number);
}

export interface GraphTaskRef__Output {
  'key': (string);
  /**
   * derived from namespace, graph id and key
   */
  'task_id': (string);
  'state': (_taskring_v1_TaskState__Output);
  'slot': (number);
}
