// Original file: proto/taskring/v1/taskring.proto

export const HeartbeatVerdict = {
  HEARTBEAT_VERDICT_UNSPECIFIED: 'HEARTBEAT_VERDICT_UNSPECIFIED',
  /**
   * Recorded: the attempt's lease now runs heartbeat_timeout_ms from when it came.
   */
  HEARTBEAT_VERDICT_CONTINUE: 'HEARTBEAT_VERDICT_CONTINUE',
  /**
   * The task was cancelled while it ran: stop the handler. Its outcome changes nothing.
   */
  HEARTBEAT_VERDICT_CANCEL: 'HEARTBEAT_VERDICT_CANCEL',
  /**
   * This attempt is not the task's running attempt any more (its lease ran out and it
   * was recovered, the task finished, or the dispatcher does not know it): stop the
   * handler. Its outcome will be refused.
   */
  HEARTBEAT_VERDICT_LOST: 'HEARTBEAT_VERDICT_LOST',
  /**
   * The heartbeat itself was refused (reason says why: details not JSON, too large);
   * nothing was recorded and the lease was not extended. The attempt goes on.
   */
  HEARTBEAT_VERDICT_INVALID: 'HEARTBEAT_VERDICT_INVALID',
} as const;

export type HeartbeatVerdict =
  | 'HEARTBEAT_VERDICT_UNSPECIFIED'
  | 0
  /**
   * Recorded: the attempt's lease now runs heartbeat_timeout_ms from when it came.
   */
  | 'HEARTBEAT_VERDICT_CONTINUE'
  | 1
  /**
   * The task was cancelled while it ran: stop the handler. Its outcome changes nothing.
   */
  | 'HEARTBEAT_VERDICT_CANCEL'
  | 2
  /**
   * This attempt is not the task's running attempt any more (its lease ran out and it
   * was recovered, the task finished, or the dispatcher does not know it): stop the
   * handler. Its outcome will be refused.
   */
  | 'HEARTBEAT_VERDICT_LOST'
  | 3
  /**
   * The heartbeat itself was refused (reason says why: details not JSON, too large);
   * nothing was recorded and the lease was not extended. The attempt goes on.
   */
  | 'HEARTBEAT_VERDICT_INVALID'
  | 4

export type HeartbeatVerdict__Output = typeof HeartbeatVerdict[keyof typeof HeartbeatVerdict]
