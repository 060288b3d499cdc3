// Original file: proto/taskring/v1/taskring.proto

export const OutcomeKind = {
  OUTCOME_KIND_UNSPECIFIED: 'OUTCOME_KIND_UNSPECIFIED',
  OUTCOME_KIND_SUCCEEDED: 'OUTCOME_KIND_SUCCEEDED',
  /**
   * retryable exception or any unexpected exception
   */
  OUTCOME_KIND_RETRYABLE_FAILURE: 'OUTCOME_KIND_RETRYABLE_FAILURE',
  /**
   * the handler raised NonRetryableError
   */
  OUTCOME_KIND_NON_RETRYABLE_FAILURE: 'OUTCOME_KIND_NON_RETRYABLE_FAILURE',
  /**
   * retryable
   */
  OUTCOME_KIND_TIMED_OUT: 'OUTCOME_KIND_TIMED_OUT',
  /**
   * this executor has no handler for the type: retryable elsewhere
   */
  OUTCOME_KIND_NO_HANDLER: 'OUTCOME_KIND_NO_HANDLER',
  /**
   * never run: start_within_ms passed first; the attempt is not spent
   */
  OUTCOME_KIND_NOT_STARTED: 'OUTCOME_KIND_NOT_STARTED',
  /**
   * the handler stopped because a heartbeat's answer said CANCEL or LOST
   */
  OUTCOME_KIND_STOPPED: 'OUTCOME_KIND_STOPPED',
} as const;

export type OutcomeKind =
  | 'OUTCOME_KIND_UNSPECIFIED'
  | 0
  | 'OUTCOME_KIND_SUCCEEDED'
  | 1
  /**
   * retryable exception or any unexpected exception
   */
  | 'OUTCOME_KIND_RETRYABLE_FAILURE'
  | 2
  /**
   * the handler raised NonRetryableError
   */
  | 'OUTCOME_KIND_NON_RETRYABLE_FAILURE'
  | 3
  /**
   * retryable
   */
  | 'OUTCOME_KIND_TIMED_OUT'
  | 4
  /**
   * this executor has no handler for the type: retryable elsewhere
   */
  | 'OUTCOME_KIND_NO_HANDLER'
  | 5
  /**
   * never run: start_within_ms passed first; the attempt is not spent
   */
  | 'OUTCOME_KIND_NOT_STARTED'
  | 6
  /**
   * the handler stopped because a heartbeat's answer said CANCEL or LOST
   */
  | 'OUTCOME_KIND_STOPPED'
  | 7

export type OutcomeKind__Output = typeof OutcomeKind[keyof typeof OutcomeKind]
