// Original file: proto/taskring/v1/taskring.proto


export interface TypePolicyRef {
  'namespace'?: (string);
  'task_type'?: (string);
}

export interface TypePolicyRef__Output {
  'namespace': (string);
  'task_type': (string);
}
