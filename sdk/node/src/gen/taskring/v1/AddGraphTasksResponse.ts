// Original file: proto/taskring/v1/taskring.proto

import type { GraphTaskRef as _taskring_v1_GraphTaskRef, GraphTaskRef__Output as _taskring_v1_GraphTaskRef__Output } from '../../taskring/v1/GraphTaskRef';

export interface AddGraphTasksResponse {
  /**
   * every task had been added by an earlier call: nothing was written
   */
  'duplicate'?: (boolean);
  /**
   * in the request's order, with their keys in the graph
   */
  'tasks'?: (_taskring_v1_GraphTaskRef)[];
}

export interface AddGraphTasksResponse__Output {
  /**
   * every task had been added by an earlier call: nothing was written
   */
  'duplicate': (boolean);
  /**
   * in the request's order, with their keys in the graph
   */
  'tasks': (_taskring_v1_GraphTaskRef__Output)[];
}
