// Original file: proto/taskring/v1/taskring.proto


export interface CronRuleRef {
  'namespace'?: (string);
  'name'?: (string);
}

export interface CronRuleRef__Output {
  'namespace': (string);
  'name': (string);
}
