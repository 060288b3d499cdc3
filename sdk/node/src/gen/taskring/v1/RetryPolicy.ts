// Original file: proto/taskring/v1/taskring.proto

import type { Long } from '@grpc/proto-loader';

/**
 * How a failed attempt is retried. Either exponential backoff with full jitter
 * (retry n, counting from 1, waits a uniform draw in [0, min(max_backoff_ms,
 * initial_backoff_ms * multiplier^(n-1))]) or, when schedule_ms is non-empty, a
 * tiered schedule: retry n waits schedule_ms[min(n-1, len-1)], no jitter.
 */
export interface RetryPolicy {
  'initial_backoff_ms'?: (number | string | Long);
  'max_backoff_ms'?: (number | string | Long);
  'multiplier'?: (number | string);
  'schedule_ms'?: (number | string | Long)[];
}

/**
 * How a failed attempt is retried. Either exponential backoff with full jitter
 * (retry n, counting from 1, waits a uniform draw in [0, min(max_backoff_ms,
 * initial_backoff_ms * multiplier^(n-1))]) or, when schedule_ms is non-empty, a
 * tiered schedule: retry n waits schedule_ms[min(n-1, len-1)], no jitter.
 */
export interface RetryPolicy__Output {
  'initial_backoff_ms': (string);
  'max_backoff_ms': (string);
  'multiplier': (number);
  'schedule_ms': (string)[];
}
