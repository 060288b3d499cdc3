// Original file: proto/taskring/v1/taskring.proto


/**
 * Server-owned, in the envelope of every task of a graph: what the owner needs without a read.
 */
export interface GraphRef {
  'graph_id'?: (string);
  /**
   * the task's key in its graph
   */
  'key'?: (string);
  /**
   * some task depends on this one: its end releases them
   */
  'has_dependents'?: (boolean);
  /**
   * how many tasks it depends on
   */
  'parents'?: (number);
  /**
   * some task depends on it with on_failure continue: a failed
   */
  'continue_dependents'?: (boolean);
}

/**
 * Server-owned, in the envelope of every task of a graph: what the owner needs without a read.
 */
export interface GraphRef__Output {
  'graph_id': (string);
  /**
   * the task's key in its graph
   */
  'key': (string);
  /**
   * some task depends on this one: its end releases them
   */
  'has_dependents': (boolean);
  /**
   * how many tasks it depends on
   */
  'parents': (number);
  /**
   * some task depends on it with on_failure continue: a failed
   */
  'continue_dependents': (boolean);
}
