// Original file: proto/taskring/v1/taskring.proto


export interface ParentResult {
  'key'?: (string);
  'task_id'?: (string);
  /**
   * succeeded, failed, ignored, skipped, cancelled
   */
  'outcome'?: (string);
  /**
   * its handler's return value ("" when none or not delivered)
   */
  'result_json'?: (string);
  /**
   * its last error, for one that failed
   */
  'error'?: (string);
}

export interface ParentResult__Output {
  'key': (string);
  'task_id': (string);
  /**
   * succeeded, failed, ignored, skipped, cancelled
   */
  'outcome': (string);
  /**
   * its handler's return value ("" when none or not delivered)
   */
  'result_json': (string);
  /**
   * its last error, for one that failed
   */
  'error': (string);
}
