// Original file: proto/taskring/v1/taskring.proto

import type { GraphTaskRef as _taskring_v1_GraphTaskRef, GraphTaskRef__Output as _taskring_v1_GraphTaskRef__Output } from '../../taskring/v1/GraphTaskRef';

export interface SubmitGraphResponse {
  'graph_id'?: (string);
  /**
   * the graph existed with the same tasks: nothing was written
   */
  'duplicate'?: (boolean);
  /**
   * in the request's order
   */
  'tasks'?: (_taskring_v1_GraphTaskRef)[];
}

export interface SubmitGraphResponse__Output {
  'graph_id': (string);
  /**
   * the graph existed with the same tasks: nothing was written
   */
  'duplicate': (boolean);
  /**
   * in the request's order
   */
  'tasks': (_taskring_v1_GraphTaskRef__Output)[];
}
