// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';

export interface SubmitBatchRequest {
  'tasks'?: (_taskring_v1_Task)[];
}

export interface SubmitBatchRequest__Output {
  'tasks': (_taskring_v1_Task__Output)[];
}
