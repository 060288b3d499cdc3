// Original file: proto/taskring/v1/taskring.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Up the Work stream, in ExecuteResponse.heartbeats, for a delivery with
 * heartbeat_timeout_ms > 0. Every heartbeat gets one answer down the stream.
 */
export interface Heartbeat {
  'task_id'?: (string);
  'attempt'?: (number);
  /**
   * "": keep the details of the last heartbeat. Otherwise a JSON value (at most
   * 65,536 bytes) stored with the task; the next attempt receives the last one in
   * Delivery.heartbeat_details_json.
   */
  'details_json'?: (string);
  /**
   * Chosen by the executor, unique on its stream; the answer carries it back.
   */
  'sequence'?: (number | string | Long);
}

/**
 * Up the Work stream, in ExecuteResponse.heartbeats, for a delivery with
 * heartbeat_timeout_ms > 0. Every heartbeat gets one answer down the stream.
 */
export interface Heartbeat__Output {
  'task_id': (string);
  'attempt': (number);
  /**
   * "": keep the details of the last heartbeat. Otherwise a JSON value (at most
   * 65,536 bytes) stored with the task; the next attempt receives the last one in
   * Delivery.heartbeat_details_json.
   */
  'details_json': (string);
  /**
   * Chosen by the executor, unique on its stream; the answer carries it back.
   */
  'sequence': (string);
}
