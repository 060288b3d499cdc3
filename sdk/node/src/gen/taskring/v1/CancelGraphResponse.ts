// Original file: proto/taskring/v1/taskring.proto


export interface CancelGraphResponse {
  /**
   * tasks cancelled now
   */
  'cancelled'?: (number);
  /**
   * keys of the tasks left to finish (see CancelMode)
   */
  'running'?: (string)[];
}

export interface CancelGraphResponse__Output {
  /**
   * tasks cancelled now
   */
  'cancelled': (number);
  /**
   * keys of the tasks left to finish (see CancelMode)
   */
  'running': (string)[];
}
