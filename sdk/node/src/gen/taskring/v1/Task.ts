// Original file: proto/taskring/v1/taskring.proto

import type { RetryPolicy as _taskring_v1_RetryPolicy, RetryPolicy__Output as _taskring_v1_RetryPolicy__Output } from '../../taskring/v1/RetryPolicy';
import type { Priority as _taskring_v1_Priority, Priority__Output as _taskring_v1_Priority__Output } from '../../taskring/v1/Priority';
import type { GraphRef as _taskring_v1_GraphRef, GraphRef__Output as _taskring_v1_GraphRef__Output } from '../../taskring/v1/GraphRef';
import type { Long } from '@grpc/proto-loader';

/**
 * The envelope.
 */
export interface Task {
  /**
   * UUIDv7 assigned by the server when empty
   */
  'task_id'?: (string);
  /**
   * [a-z0-9][a-z0-9._-]{0,63}
   */
  'namespace'?: (string);
  /**
   * [A-Za-z0-9][A-Za-z0-9._:-]{0,127}
   */
  'task_type'?: (string);
  /**
   * a JSON object, as text
   */
  'payload_json'?: (string);
  'payload_version'?: (number);
  /**
   * RFC 3339 with offset; exclusive with delay_ms
   */
  'schedule_time'?: (string);
  /**
   * from acceptance; exclusive with schedule_time
   */
  'delay_ms'?: (number | string | Long);
  /**
   * per attempt; server default when unset
   */
  'timeout_ms'?: (number);
  /**
   * retries after the first attempt; default when unset
   */
  'max_retries'?: (number);
  /**
   * per task; falls back to the task type's, then the server's
   */
  'retry_policy'?: (_taskring_v1_RetryPolicy | null);
  /**
   * attempts made so far (server-owned)
   */
  'retry_count'?: (number);
  'priority'?: (_taskring_v1_Priority);
  /**
   * at most one task per key per namespace: while it is live, or for unique_ttl_ms
   */
  'unique_key'?: (string);
  'trace_id'?: (string);
  /**
   * RFC 3339, set by the server
   */
  'created_at'?: (string);
  /**
   * hold unique_key this long from acceptance, even past a terminal state
   */
  'unique_ttl_ms'?: (number | string | Long);
  /**
   * server-owned: "namespace/name" of the cron rule whose fire this is
   */
  'cron_rule'?: (string);
  /**
   * server-owned: the fire time (RFC 3339 UTC) this task is for
   */
  'cron_fire_time'?: (string);
  /**
   * server-owned: set on the tasks of a graph (SubmitGraph)
   */
  'graph'?: (_taskring_v1_GraphRef | null);
  '_timeout_ms'?: "timeout_ms";
  '_max_retries'?: "max_retries";
  '_unique_ttl_ms'?: "unique_ttl_ms";
}

/**
 * The envelope.
 */
export interface Task__Output {
  /**
   * UUIDv7 assigned by the server when empty
   */
  'task_id': (string);
  /**
   * [a-z0-9][a-z0-9._-]{0,63}
   */
  'namespace': (string);
  /**
   * [A-Za-z0-9][A-Za-z0-9._:-]{0,127}
   */
  'task_type': (string);
  /**
   * a JSON object, as text
   */
  'payload_json': (string);
  'payload_version': (number);
  /**
   * RFC 3339 with offset; exclusive with delay_ms
   */
  'schedule_time': (string);
  /**
   * from acceptance; exclusive with schedule_time
   */
  'delay_ms': (string);
  /**
   * per attempt; server default when unset
   */
  'timeout_ms'?: (number);
  /**
   * retries after the first attempt; default when unset
   */
  'max_retries'?: (number);
  /**
   * per task; falls back to the task type's, then the server's
   */
  'retry_policy': (_taskring_v1_RetryPolicy__Output | null);
  /**
   * attempts made so far (server-owned)
   */
  'retry_count': (number);
  'priority': (_taskring_v1_Priority__Output);
  /**
   * at most one task per key per namespace: while it is live, or for unique_ttl_ms
   */
  'unique_key': (string);
  'trace_id': (string);
  /**
   * RFC 3339, set by the server
   */
  'created_at': (string);
  /**
   * hold unique_key this long from acceptance, even past a terminal state
   */
  'unique_ttl_ms'?: (string);
  /**
   * server-owned: "namespace/name" of the cron rule whose fire this is
   */
  'cron_rule': (string);
  /**
   * server-owned: the fire time (RFC 3339 UTC) this task is for
   */
  'cron_fire_time': (string);
  /**
   * server-owned: set on the tasks of a graph (SubmitGraph)
   */
  'graph': (_taskring_v1_GraphRef__Output | null);
  '_timeout_ms'?: "timeout_ms";
  '_max_retries'?: "max_retries";
  '_unique_ttl_ms'?: "unique_ttl_ms";
}
