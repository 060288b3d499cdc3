// Original file: proto/taskring/v1/taskring.proto

/**
 * Priority classes. Each class has its own Kafka topic so a flood of LOW work
 * never sits in front of HIGH work in one partition.
 */
export const Priority = {
  /**
   * treated as NORMAL
   */
  PRIORITY_UNSPECIFIED: 'PRIORITY_UNSPECIFIED',
  PRIORITY_LOW: 'PRIORITY_LOW',
  PRIORITY_NORMAL: 'PRIORITY_NORMAL',
  PRIORITY_HIGH: 'PRIORITY_HIGH',
} as const;

/**
 * Priority classes. Each class has its own Kafka topic so a flood of LOW work
 * never sits in front of HIGH work in one partition.
 */
export type Priority =
  /**
   * treated as NORMAL
   */
  | 'PRIORITY_UNSPECIFIED'
  | 0
  | 'PRIORITY_LOW'
  | 1
  | 'PRIORITY_NORMAL'
  | 2
  | 'PRIORITY_HIGH'
  | 3

/**
 * Priority classes. Each class has its own Kafka topic so a flood of LOW work
 * never sits in front of HIGH work in one partition.
 */
export type Priority__Output = typeof Priority[keyof typeof Priority]
