// Original file: proto/taskring/v1/taskring.proto


export interface GetTaskRequest {
  'task_id'?: (string);
}

export interface GetTaskRequest__Output {
  'task_id': (string);
}
