// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';
import type { Join as _taskring_v1_Join, Join__Output as _taskring_v1_Join__Output } from '../../taskring/v1/Join';
import type { GraphEdge as _taskring_v1_GraphEdge, GraphEdge__Output as _taskring_v1_GraphEdge__Output } from '../../taskring/v1/GraphEdge';

export interface GraphNode {
  'key'?: (string);
  'task_id'?: (string);
  'state'?: (_taskring_v1_TaskState);
  'attempts'?: (number);
  'join'?: (_taskring_v1_Join | null);
  'depends_on'?: (_taskring_v1_GraphEdge)[];
  /**
   * why it was skipped or cancelled; its last error
   */
  'reason'?: (string);
  /**
   * its handler's result (with_results)
   */
  'result_json'?: (string);
  /**
   * what a waiting task waits for, in words
   */
  'waiting'?: (string);
}

export interface GraphNode__Output {
  'key': (string);
  'task_id': (string);
  'state': (_taskring_v1_TaskState__Output);
  'attempts': (number);
  'join': (_taskring_v1_Join__Output | null);
  'depends_on': (_taskring_v1_GraphEdge__Output)[];
  /**
   * why it was skipped or cancelled; its last error
   */
  'reason': (string);
  /**
   * its handler's result (with_results)
   */
  'result_json': (string);
  /**
   * what a waiting task waits for, in words
   */
  'waiting': (string);
}
