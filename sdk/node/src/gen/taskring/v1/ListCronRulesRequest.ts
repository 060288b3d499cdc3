// Original file: proto/taskring/v1/taskring.proto


export interface ListCronRulesRequest {
  /**
   * "" = every namespace
   */
  'namespace'?: (string);
}

export interface ListCronRulesRequest__Output {
  /**
   * "" = every namespace
   */
  'namespace': (string);
}
