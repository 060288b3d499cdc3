// Original file: proto/taskring/v1/taskring.proto

import type { OnFailure as _taskring_v1_OnFailure, OnFailure__Output as _taskring_v1_OnFailure__Output } from '../../taskring/v1/OnFailure';

export interface GraphEdge {
  'parent_key'?: (string);
  'on_failure'?: (_taskring_v1_OnFailure);
  /**
   * how the parent ended for this edge: succeeded, failed, ignored,
   */
  'outcome'?: (string);
}

export interface GraphEdge__Output {
  'parent_key': (string);
  'on_failure': (_taskring_v1_OnFailure__Output);
  /**
   * how the parent ended for this edge: succeeded, failed, ignored,
   */
  'outcome': (string);
}
