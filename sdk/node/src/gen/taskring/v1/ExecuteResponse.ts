// Original file: proto/taskring/v1/taskring.proto

import type { Outcome as _taskring_v1_Outcome, Outcome__Output as _taskring_v1_Outcome__Output } from '../../taskring/v1/Outcome';

export interface ExecuteResponse {
  /**
   * one per delivery, any order
   */
  'outcomes'?: (_taskring_v1_Outcome)[];
}

export interface ExecuteResponse__Output {
  /**
   * one per delivery, any order
   */
  'outcomes': (_taskring_v1_Outcome__Output)[];
}
