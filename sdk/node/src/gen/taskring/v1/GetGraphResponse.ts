// Original file: proto/taskring/v1/taskring.proto

import type { GraphNode as _taskring_v1_GraphNode, GraphNode__Output as _taskring_v1_GraphNode__Output } from '../../taskring/v1/GraphNode';

export interface GetGraphResponse {
  'graph_id'?: (string);
  'namespace'?: (string);
  /**
   * "running" while any task is not terminal, else "finished"
   */
  'state'?: (string);
  /**
   * tasks by state name
   */
  'counts'?: ({[key: string]: number});
  /**
   * in the order they were submitted
   */
  'nodes'?: (_taskring_v1_GraphNode)[];
}

export interface GetGraphResponse__Output {
  'graph_id': (string);
  'namespace': (string);
  /**
   * "running" while any task is not terminal, else "finished"
   */
  'state': (string);
  /**
   * tasks by state name
   */
  'counts': ({[key: string]: number});
  /**
   * in the order they were submitted
   */
  'nodes': (_taskring_v1_GraphNode__Output)[];
}
