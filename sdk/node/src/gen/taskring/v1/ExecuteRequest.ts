// Original file: proto/taskring/v1/taskring.proto

import type { Delivery as _taskring_v1_Delivery, Delivery__Output as _taskring_v1_Delivery__Output } from '../../taskring/v1/Delivery';
import type { HeartbeatAnswer as _taskring_v1_HeartbeatAnswer, HeartbeatAnswer__Output as _taskring_v1_HeartbeatAnswer__Output } from '../../taskring/v1/HeartbeatAnswer';

export interface ExecuteRequest {
  'deliveries'?: (_taskring_v1_Delivery)[];
  'dispatcher_node'?: (string);
  /**
   * Work stream only: the answers to heartbeats the executor sent (any order).
   */
  'heartbeat_answers'?: (_taskring_v1_HeartbeatAnswer)[];
}

export interface ExecuteRequest__Output {
  'deliveries': (_taskring_v1_Delivery__Output)[];
  'dispatcher_node': (string);
  /**
   * Work stream only: the answers to heartbeats the executor sent (any order).
   */
  'heartbeat_answers': (_taskring_v1_HeartbeatAnswer__Output)[];
}
