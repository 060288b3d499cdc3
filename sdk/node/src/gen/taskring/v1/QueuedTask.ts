// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';
import type { Long } from '@grpc/proto-loader';

/**
 * One attempt of a task travelling through Kafka. The row in MySQL stays the
 * source of truth for state; the message only carries the task to the heap of
 * the slot's owner, which dispatches it only if the row still expects this
 * attempt.
 */
export interface QueuedTask {
  'task'?: (_taskring_v1_Task | null);
  /**
   * the attempt this message is for (1 = first run)
   */
  'attempt'?: (number);
  /**
   * unix epoch milliseconds
   */
  'due_at_ms'?: (number | string | Long);
}

/**
 * One attempt of a task travelling through Kafka. The row in MySQL stays the
 * source of truth for state; the message only carries the task to the heap of
 * the slot's owner, which dispatches it only if the row still expects this
 * attempt.
 */
export interface QueuedTask__Output {
  'task': (_taskring_v1_Task__Output | null);
  /**
   * the attempt this message is for (1 = first run)
   */
  'attempt': (number);
  /**
   * unix epoch milliseconds
   */
  'due_at_ms': (string);
}
