// Original file: proto/taskring/v1/taskring.proto

/**
 * When a task of a graph becomes due, from the ends of the tasks it depends on.
 * UNSPECIFIED is ALL_SUCCEEDED.
 */
export const JoinRule = {
  JOIN_RULE_UNSPECIFIED: 'JOIN_RULE_UNSPECIFIED',
  /**
   * every parent succeeded (or failed under ON_FAILURE_IGNORE)
   */
  JOIN_RULE_ALL_SUCCEEDED: 'JOIN_RULE_ALL_SUCCEEDED',
  /**
   * every parent ended, whatever its end
   */
  JOIN_RULE_ALL_DONE: 'JOIN_RULE_ALL_DONE',
  /**
   * every parent ended and none failed (skipped counts as fine)
   */
  JOIN_RULE_NONE_FAILED: 'JOIN_RULE_NONE_FAILED',
  /**
   * one parent succeeded
   */
  JOIN_RULE_ANY_SUCCEEDED: 'JOIN_RULE_ANY_SUCCEEDED',
  /**
   * Join.at_least parents succeeded
   */
  JOIN_RULE_AT_LEAST: 'JOIN_RULE_AT_LEAST',
} as const;

/**
 * When a task of a graph becomes due, from the ends of the tasks it depends on.
 * UNSPECIFIED is ALL_SUCCEEDED.
 */
export type JoinRule =
  | 'JOIN_RULE_UNSPECIFIED'
  | 0
  /**
   * every parent succeeded (or failed under ON_FAILURE_IGNORE)
   */
  | 'JOIN_RULE_ALL_SUCCEEDED'
  | 1
  /**
   * every parent ended, whatever its end
   */
  | 'JOIN_RULE_ALL_DONE'
  | 2
  /**
   * every parent ended and none failed (skipped counts as fine)
   */
  | 'JOIN_RULE_NONE_FAILED'
  | 3
  /**
   * one parent succeeded
   */
  | 'JOIN_RULE_ANY_SUCCEEDED'
  | 4
  /**
   * Join.at_least parents succeeded
   */
  | 'JOIN_RULE_AT_LEAST'
  | 5

/**
 * When a task of a graph becomes due, from the ends of the tasks it depends on.
 * UNSPECIFIED is ALL_SUCCEEDED.
 */
export type JoinRule__Output = typeof JoinRule[keyof typeof JoinRule]
