// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';

export interface TaskEvent {
  'state'?: (_taskring_v1_TaskState);
  /**
   * RFC 3339 UTC, millisecond precision
   */
  'at'?: (string);
  'node'?: (string);
  'attempt'?: (number);
  /**
   * error text for failures, reason for cancels
   */
  'detail'?: (string);
}

export interface TaskEvent__Output {
  'state': (_taskring_v1_TaskState__Output);
  /**
   * RFC 3339 UTC, millisecond precision
   */
  'at': (string);
  'node': (string);
  'attempt': (number);
  /**
   * error text for failures, reason for cancels
   */
  'detail': (string);
}
