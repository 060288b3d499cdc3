// Original file: proto/taskring/v1/taskring.proto

import type { GraphTask as _taskring_v1_GraphTask, GraphTask__Output as _taskring_v1_GraphTask__Output } from '../../taskring/v1/GraphTask';

export interface AddGraphTasksRequest {
  'namespace'?: (string);
  'graph_id'?: (string);
  /**
   * the running task that adds (its handler's ctx)
   */
  'adder_task_id'?: (string);
  /**
   * its attempt now running: a call from an attempt given up is refused
   */
  'adder_attempt'?: (number);
  /**
   * Keys as in SubmitGraph; each new task's key in the graph is "<adder key>:<key>". depends_on
   * names a task of this call by its key, else a task of the graph by its key in the graph.
   */
  'tasks'?: (_taskring_v1_GraphTask)[];
  /**
   * keys of waiting tasks of the graph that must also wait for every new task
   */
  'also_before'?: (string)[];
}

export interface AddGraphTasksRequest__Output {
  'namespace': (string);
  'graph_id': (string);
  /**
   * the running task that adds (its handler's ctx)
   */
  'adder_task_id': (string);
  /**
   * its attempt now running: a call from an attempt given up is refused
   */
  'adder_attempt': (number);
  /**
   * Keys as in SubmitGraph; each new task's key in the graph is "<adder key>:<key>". depends_on
   * names a task of this call by its key, else a task of the graph by its key in the graph.
   */
  'tasks': (_taskring_v1_GraphTask__Output)[];
  /**
   * keys of waiting tasks of the graph that must also wait for every new task
   */
  'also_before': (string)[];
}
