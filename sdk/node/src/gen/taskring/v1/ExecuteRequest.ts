// Original file: proto/taskring/v1/taskring.proto

import type { Delivery as _taskring_v1_Delivery, Delivery__Output as _taskring_v1_Delivery__Output } from '../../taskring/v1/Delivery';

export interface ExecuteRequest {
  'deliveries'?: (_taskring_v1_Delivery)[];
  'dispatcher_node'?: (string);
}

export interface ExecuteRequest__Output {
  'deliveries': (_taskring_v1_Delivery__Output)[];
  'dispatcher_node': (string);
}
