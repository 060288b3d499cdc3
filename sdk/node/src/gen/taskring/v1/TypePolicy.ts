// Original file: proto/taskring/v1/taskring.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One task type's entry, in the shape of a key of the policies file (TASKRING_RETRY_POLICIES):
 * its retry policy, unique key, concurrency limits, retry cap, rate limits, fair shares and
 * heartbeat timeout, as JSON. An entry set through the API replaces the file's entry for that
 * type whole; deleting it gives the type back to the file.
 */
export interface TypePolicy {
  'namespace'?: (string);
  'task_type'?: (string);
  /**
   * the entry in effect ("{}" when nothing is declared)
   */
  'policy_json'?: (string);
  /**
   * "api", "file" or "none"
   */
  'source'?: (string);
  /**
   * the API entry's revision (0 when none); see if_revision
   */
  'revision'?: (number | string | Long);
  /**
   * who set the API entry (its token's name)
   */
  'updated_by'?: (string);
  /**
   * when (RFC 3339 UTC)
   */
  'updated_at'?: (string);
  /**
   * the file's entry for the type ("" when it has none)
   */
  'file_policy_json'?: (string);
}

/**
 * One task type's entry, in the shape of a key of the policies file (TASKRING_RETRY_POLICIES):
 * its retry policy, unique key, concurrency limits, retry cap, rate limits, fair shares and
 * heartbeat timeout, as JSON. An entry set through the API replaces the file's entry for that
 * type whole; deleting it gives the type back to the file.
 */
export interface TypePolicy__Output {
  'namespace': (string);
  'task_type': (string);
  /**
   * the entry in effect ("{}" when nothing is declared)
   */
  'policy_json': (string);
  /**
   * "api", "file" or "none"
   */
  'source': (string);
  /**
   * the API entry's revision (0 when none); see if_revision
   */
  'revision': (string);
  /**
   * who set the API entry (its token's name)
   */
  'updated_by': (string);
  /**
   * when (RFC 3339 UTC)
   */
  'updated_at': (string);
  /**
   * the file's entry for the type ("" when it has none)
   */
  'file_policy_json': (string);
}
