// Original file: proto/taskring/v1/taskring.proto


export interface CancelRequest {
  'task_id'?: (string);
}

export interface CancelRequest__Output {
  'task_id': (string);
}
