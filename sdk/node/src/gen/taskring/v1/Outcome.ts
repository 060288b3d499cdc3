// Original file: proto/taskring/v1/taskring.proto

import type { OutcomeKind as _taskring_v1_OutcomeKind, OutcomeKind__Output as _taskring_v1_OutcomeKind__Output } from '../../taskring/v1/OutcomeKind';
import type { Long } from '@grpc/proto-loader';

export interface Outcome {
  'task_id'?: (string);
  'attempt'?: (number);
  'kind'?: (_taskring_v1_OutcomeKind);
  'error'?: (string);
  'stack_trace'?: (string);
  /**
   * unix epoch milliseconds
   */
  'started_at_ms'?: (number | string | Long);
  'finished_at_ms'?: (number | string | Long);
  /**
   * The handler's return value as JSON (at most 64 KiB), for a delivery with keep_result.
   */
  'result_json'?: (string);
  /**
   * The handler added tasks to its graph (AddGraphTasks): its end is what they wait for.
   */
  'added_graph_tasks'?: (boolean);
}

export interface Outcome__Output {
  'task_id': (string);
  'attempt': (number);
  'kind': (_taskring_v1_OutcomeKind__Output);
  'error': (string);
  'stack_trace': (string);
  /**
   * unix epoch milliseconds
   */
  'started_at_ms': (string);
  'finished_at_ms': (string);
  /**
   * The handler's return value as JSON (at most 64 KiB), for a delivery with keep_result.
   */
  'result_json': (string);
  /**
   * The handler added tasks to its graph (AddGraphTasks): its end is what they wait for.
   */
  'added_graph_tasks': (boolean);
}
