// Original file: proto/taskring/v1/taskring.proto

import type { Long } from '@grpc/proto-loader';

export interface PutTypePolicyRequest {
  'namespace'?: (string);
  'task_type'?: (string);
  /**
   * a JSON object, validated whole as the file's entries are
   */
  'policy_json'?: (string);
  /**
   * required: it goes in the audit trail
   */
  'reason'?: (string);
  /**
   * refuse (FAILED_PRECONDITION) unless the API entry is at this revision (0 = none yet)
   */
  'if_revision'?: (number | string | Long);
  '_if_revision'?: "if_revision";
}

export interface PutTypePolicyRequest__Output {
  'namespace': (string);
  'task_type': (string);
  /**
   * a JSON object, validated whole as the file's entries are
   */
  'policy_json': (string);
  /**
   * required: it goes in the audit trail
   */
  'reason': (string);
  /**
   * refuse (FAILED_PRECONDITION) unless the API entry is at this revision (0 = none yet)
   */
  'if_revision'?: (string);
  '_if_revision'?: "if_revision";
}
