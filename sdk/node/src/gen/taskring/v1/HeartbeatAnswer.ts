// Original file: proto/taskring/v1/taskring.proto

import type { HeartbeatVerdict as _taskring_v1_HeartbeatVerdict, HeartbeatVerdict__Output as _taskring_v1_HeartbeatVerdict__Output } from '../../taskring/v1/HeartbeatVerdict';
import type { Long } from '@grpc/proto-loader';

export interface HeartbeatAnswer {
  'sequence'?: (number | string | Long);
  'task_id'?: (string);
  'attempt'?: (number);
  'verdict'?: (_taskring_v1_HeartbeatVerdict);
  /**
   * for CANCEL, LOST and INVALID: why, for the handler's log
   */
  'reason'?: (string);
}

export interface HeartbeatAnswer__Output {
  'sequence': (string);
  'task_id': (string);
  'attempt': (number);
  'verdict': (_taskring_v1_HeartbeatVerdict__Output);
  /**
   * for CANCEL, LOST and INVALID: why, for the handler's log
   */
  'reason': (string);
}
