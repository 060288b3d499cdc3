// Original file: proto/taskring/v1/taskring.proto

import type { Long } from '@grpc/proto-loader';

export interface DeleteTypePolicyRequest {
  'namespace'?: (string);
  'task_type'?: (string);
  /**
   * required
   */
  'reason'?: (string);
  'if_revision'?: (number | string | Long);
  '_if_revision'?: "if_revision";
}

export interface DeleteTypePolicyRequest__Output {
  'namespace': (string);
  'task_type': (string);
  /**
   * required
   */
  'reason': (string);
  'if_revision'?: (string);
  '_if_revision'?: "if_revision";
}
