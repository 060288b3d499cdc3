// Original file: proto/taskring/v1/taskring.proto


export interface ListTypePoliciesRequest {
  /**
   * "" = every namespace
   */
  'namespace'?: (string);
}

export interface ListTypePoliciesRequest__Output {
  /**
   * "" = every namespace
   */
  'namespace': (string);
}
