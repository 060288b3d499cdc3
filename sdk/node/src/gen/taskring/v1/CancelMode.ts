// Original file: proto/taskring/v1/taskring.proto

/**
 * How a cancel treats the tasks of a graph that are running. UNSPECIFIED is GRACEFUL.
 */
export const CancelMode = {
  CANCEL_MODE_UNSPECIFIED: 'CANCEL_MODE_UNSPECIFIED',
  /**
   * running tasks finish (a failed one is not retried); nothing new starts
   */
  CANCEL_MODE_GRACEFUL: 'CANCEL_MODE_GRACEFUL',
  /**
   * running tasks of types that heartbeat are told to stop at their next
   */
  CANCEL_MODE_IMMEDIATE: 'CANCEL_MODE_IMMEDIATE',
} as const;

/**
 * How a cancel treats the tasks of a graph that are running. UNSPECIFIED is GRACEFUL.
 */
export type CancelMode =
  | 'CANCEL_MODE_UNSPECIFIED'
  | 0
  /**
   * running tasks finish (a failed one is not retried); nothing new starts
   */
  | 'CANCEL_MODE_GRACEFUL'
  | 1
  /**
   * running tasks of types that heartbeat are told to stop at their next
   */
  | 'CANCEL_MODE_IMMEDIATE'
  | 2

/**
 * How a cancel treats the tasks of a graph that are running. UNSPECIFIED is GRACEFUL.
 */
export type CancelMode__Output = typeof CancelMode[keyof typeof CancelMode]
