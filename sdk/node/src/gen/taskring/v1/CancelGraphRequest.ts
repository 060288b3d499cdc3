// Original file: proto/taskring/v1/taskring.proto

import type { CancelMode as _taskring_v1_CancelMode, CancelMode__Output as _taskring_v1_CancelMode__Output } from '../../taskring/v1/CancelMode';

export interface CancelGraphRequest {
  'namespace'?: (string);
  'graph_id'?: (string);
  'mode'?: (_taskring_v1_CancelMode);
  /**
   * kept in each cancelled task's history
   */
  'reason'?: (string);
}

export interface CancelGraphRequest__Output {
  'namespace': (string);
  'graph_id': (string);
  'mode': (_taskring_v1_CancelMode__Output);
  /**
   * kept in each cancelled task's history
   */
  'reason': (string);
}
