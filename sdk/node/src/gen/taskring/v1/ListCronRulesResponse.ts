// Original file: proto/taskring/v1/taskring.proto

import type { CronRule as _taskring_v1_CronRule, CronRule__Output as _taskring_v1_CronRule__Output } from '../../taskring/v1/CronRule';

export interface ListCronRulesResponse {
  /**
   * by namespace, then name
   */
  'rules'?: (_taskring_v1_CronRule)[];
}

export interface ListCronRulesResponse__Output {
  /**
   * by namespace, then name
   */
  'rules': (_taskring_v1_CronRule__Output)[];
}
