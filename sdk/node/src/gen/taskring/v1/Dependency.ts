// Original file: proto/taskring/v1/taskring.proto

import type { OnFailure as _taskring_v1_OnFailure, OnFailure__Output as _taskring_v1_OnFailure__Output } from '../../taskring/v1/OnFailure';

export interface Dependency {
  /**
   * the key of a task of the same graph
   */
  'key'?: (string);
  'on_failure'?: (_taskring_v1_OnFailure);
}

export interface Dependency__Output {
  /**
   * the key of a task of the same graph
   */
  'key': (string);
  'on_failure': (_taskring_v1_OnFailure__Output);
}
