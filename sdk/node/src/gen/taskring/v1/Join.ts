// Original file: proto/taskring/v1/taskring.proto

import type { JoinRule as _taskring_v1_JoinRule, JoinRule__Output as _taskring_v1_JoinRule__Output } from '../../taskring/v1/JoinRule';

export interface Join {
  'rule'?: (_taskring_v1_JoinRule);
  /**
   * JOIN_RULE_AT_LEAST only: 1..number of parents
   */
  'at_least'?: (number);
}

export interface Join__Output {
  'rule': (_taskring_v1_JoinRule__Output);
  /**
   * JOIN_RULE_AT_LEAST only: 1..number of parents
   */
  'at_least': (number);
}
