// Original file: proto/taskring/v1/taskring.proto

import type { GraphTask as _taskring_v1_GraphTask, GraphTask__Output as _taskring_v1_GraphTask__Output } from '../../taskring/v1/GraphTask';

export interface SubmitGraphRequest {
  'namespace'?: (string);
  /**
   * the caller's: a retried SubmitGraph with the same tasks is a duplicate
   */
  'graph_id'?: (string);
  'tasks'?: (_taskring_v1_GraphTask)[];
}

export interface SubmitGraphRequest__Output {
  'namespace': (string);
  /**
   * the caller's: a retried SubmitGraph with the same tasks is a duplicate
   */
  'graph_id': (string);
  'tasks': (_taskring_v1_GraphTask__Output)[];
}
