// Original file: proto/taskring/v1/taskring.proto

import type { TypePolicy as _taskring_v1_TypePolicy, TypePolicy__Output as _taskring_v1_TypePolicy__Output } from '../../taskring/v1/TypePolicy';

export interface ListTypePoliciesResponse {
  /**
   * every type with an entry (file or API), by namespace then type
   */
  'policies'?: (_taskring_v1_TypePolicy)[];
}

export interface ListTypePoliciesResponse__Output {
  /**
   * every type with an entry (file or API), by namespace then type
   */
  'policies': (_taskring_v1_TypePolicy__Output)[];
}
