// Original file: proto/taskring/v1/taskring.proto

import type { Outcome as _taskring_v1_Outcome, Outcome__Output as _taskring_v1_Outcome__Output } from '../../taskring/v1/Outcome';
import type { Heartbeat as _taskring_v1_Heartbeat, Heartbeat__Output as _taskring_v1_Heartbeat__Output } from '../../taskring/v1/Heartbeat';

export interface ExecuteResponse {
  /**
   * one per delivery, any order
   */
  'outcomes'?: (_taskring_v1_Outcome)[];
  /**
   * Work stream only: heartbeats of running attempts (an Execute call carries none).
   */
  'heartbeats'?: (_taskring_v1_Heartbeat)[];
}

export interface ExecuteResponse__Output {
  /**
   * one per delivery, any order
   */
  'outcomes': (_taskring_v1_Outcome__Output)[];
  /**
   * Work stream only: heartbeats of running attempts (an Execute call carries none).
   */
  'heartbeats': (_taskring_v1_Heartbeat__Output)[];
}
