// Original file: proto/taskring/v1/taskring.proto

import type { SubmitResponse as _taskring_v1_SubmitResponse, SubmitResponse__Output as _taskring_v1_SubmitResponse__Output } from '../../taskring/v1/SubmitResponse';

export interface SubmitBatchResponse {
  /**
   * same order as the request
   */
  'results'?: (_taskring_v1_SubmitResponse)[];
}

export interface SubmitBatchResponse__Output {
  /**
   * same order as the request
   */
  'results': (_taskring_v1_SubmitResponse__Output)[];
}
