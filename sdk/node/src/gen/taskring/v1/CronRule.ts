// Original file: proto/taskring/v1/taskring.proto

import type { TaskState as _taskring_v1_TaskState, TaskState__Output as _taskring_v1_TaskState__Output } from '../../taskring/v1/TaskState';

/**
 * A cron rule: a task materialized once per fire time, cluster-wide (docs/cron.md).
 */
export interface CronRule {
  /**
   * the rule's and its tasks' namespace
   */
  'namespace'?: (string);
  /**
   * [a-z0-9][a-z0-9._-]{0,63}, unique in the namespace
   */
  'name'?: (string);
  /**
   * the task each fire creates
   */
  'task_type'?: (string);
  /**
   * that task's payload (a JSON object)
   */
  'payload_json'?: (string);
  /**
   * 5 fields, or 6 with seconds first; may start with CRON_TZ=<zone>
   */
  'schedule'?: (string);
  /**
   * IANA zone; required unless the schedule has CRON_TZ=
   */
  'time_zone'?: (string);
  /**
   * "once" | "twice"; "" = by the schedule (docs/cron.md)
   */
  'on_repeated_hour'?: (string);
  /**
   * "at_shift" | "skip"; "" = by the schedule
   */
  'on_skipped_hour'?: (string);
  /**
   * "skip" | "latest" (default) | "all": missed fires after an outage
   */
  'catch_up'?: (string);
  /**
   * most missed fires "all" creates (default 100)
   */
  'catch_up_limit'?: (number);
  /**
   * "allow" (default) | "skip" | "queue_one": while the last fire is live
   */
  'overlap'?: (string);
  'owner_team'?: (string);
  'description'?: (string);
  /**
   * each fire task's, as Task.timeout_ms
   */
  'timeout_ms'?: (number);
  /**
   * each fire task's, as Task.max_retries
   */
  'max_retries'?: (number);
  /**
   * Server-owned, returned by reads:
   */
  'paused'?: (boolean);
  /**
   * the latest fire time not after now that has a task (RFC 3339 UTC)
   */
  'last_fire_time'?: (string);
  'last_fire_task_id'?: (string);
  'last_fire_state'?: (_taskring_v1_TaskState);
  /**
   * the next fire time after now (empty when paused)
   */
  'next_fire_time'?: (string);
  'created_at'?: (string);
  'updated_at'?: (string);
  '_timeout_ms'?: "timeout_ms";
  '_max_retries'?: "max_retries";
}

/**
 * A cron rule: a task materialized once per fire time, cluster-wide (docs/cron.md).
 */
export interface CronRule__Output {
  /**
   * the rule's and its tasks' namespace
   */
  'namespace': (string);
  /**
   * [a-z0-9][a-z0-9._-]{0,63}, unique in the namespace
   */
  'name': (string);
  /**
   * the task each fire creates
   */
  'task_type': (string);
  /**
   * that task's payload (a JSON object)
   */
  'payload_json': (string);
  /**
   * 5 fields, or 6 with seconds first; may start with CRON_TZ=<zone>
   */
  'schedule': (string);
  /**
   * IANA zone; required unless the schedule has CRON_TZ=
   */
  'time_zone': (string);
  /**
   * "once" | "twice"; "" = by the schedule (docs/cron.md)
   */
  'on_repeated_hour': (string);
  /**
   * "at_shift" | "skip"; "" = by the schedule
   */
  'on_skipped_hour': (string);
  /**
   * "skip" | "latest" (default) | "all": missed fires after an outage
   */
  'catch_up': (string);
  /**
   * most missed fires "all" creates (default 100)
   */
  'catch_up_limit': (number);
  /**
   * "allow" (default) | "skip" | "queue_one": while the last fire is live
   */
  'overlap': (string);
  'owner_team': (string);
  'description': (string);
  /**
   * each fire task's, as Task.timeout_ms
   */
  'timeout_ms'?: (number);
  /**
   * each fire task's, as Task.max_retries
   */
  'max_retries'?: (number);
  /**
   * Server-owned, returned by reads:
   */
  'paused': (boolean);
  /**
   * the latest fire time not after now that has a task (RFC 3339 UTC)
   */
  'last_fire_time': (string);
  'last_fire_task_id': (string);
  'last_fire_state': (_taskring_v1_TaskState__Output);
  /**
   * the next fire time after now (empty when paused)
   */
  'next_fire_time': (string);
  'created_at': (string);
  'updated_at': (string);
  '_timeout_ms'?: "timeout_ms";
  '_max_retries'?: "max_retries";
}
