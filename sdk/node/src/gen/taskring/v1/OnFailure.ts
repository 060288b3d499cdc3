// Original file: proto/taskring/v1/taskring.proto

/**
 * What a parent's failure (dead-lettered) means to one dependent. UNSPECIFIED is SKIP.
 */
export const OnFailure = {
  ON_FAILURE_UNSPECIFIED: 'ON_FAILURE_UNSPECIFIED',
  /**
   * counts as failed: the join rule decides (all_succeeded: skipped)
   */
  ON_FAILURE_SKIP: 'ON_FAILURE_SKIP',
  /**
   * counts as done, as if it had succeeded without a result; recorded
   */
  ON_FAILURE_IGNORE: 'ON_FAILURE_IGNORE',
  /**
   * the parent's first failed attempt lets this task go at once, as
   */
  ON_FAILURE_CONTINUE: 'ON_FAILURE_CONTINUE',
} as const;

/**
 * What a parent's failure (dead-lettered) means to one dependent. UNSPECIFIED is SKIP.
 */
export type OnFailure =
  | 'ON_FAILURE_UNSPECIFIED'
  | 0
  /**
   * counts as failed: the join rule decides (all_succeeded: skipped)
   */
  | 'ON_FAILURE_SKIP'
  | 1
  /**
   * counts as done, as if it had succeeded without a result; recorded
   */
  | 'ON_FAILURE_IGNORE'
  | 2
  /**
   * the parent's first failed attempt lets this task go at once, as
   */
  | 'ON_FAILURE_CONTINUE'
  | 3

/**
 * What a parent's failure (dead-lettered) means to one dependent. UNSPECIFIED is SKIP.
 */
export type OnFailure__Output = typeof OnFailure[keyof typeof OnFailure]
