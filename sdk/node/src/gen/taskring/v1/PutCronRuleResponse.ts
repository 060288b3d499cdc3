// Original file: proto/taskring/v1/taskring.proto

import type { CronRule as _taskring_v1_CronRule, CronRule__Output as _taskring_v1_CronRule__Output } from '../../taskring/v1/CronRule';

export interface PutCronRuleResponse {
  'rule'?: (_taskring_v1_CronRule | null);
}

export interface PutCronRuleResponse__Output {
  'rule': (_taskring_v1_CronRule__Output | null);
}
