// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';

export interface SubmitRequest {
  'task'?: (_taskring_v1_Task | null);
}

export interface SubmitRequest__Output {
  'task': (_taskring_v1_Task__Output | null);
}
