// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';
import type { Dependency as _taskring_v1_Dependency, Dependency__Output as _taskring_v1_Dependency__Output } from '../../taskring/v1/Dependency';
import type { Join as _taskring_v1_Join, Join__Output as _taskring_v1_Join__Output } from '../../taskring/v1/Join';

export interface GraphTask {
  /**
   * unique in the graph: [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}
   */
  'key'?: (string);
  /**
   * of the graph's namespace; task_id, unique_key and cron fields unset
   */
  'task'?: (_taskring_v1_Task | null);
  'depends_on'?: (_taskring_v1_Dependency)[];
  'join'?: (_taskring_v1_Join | null);
}

export interface GraphTask__Output {
  /**
   * unique in the graph: [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}
   */
  'key': (string);
  /**
   * of the graph's namespace; task_id, unique_key and cron fields unset
   */
  'task': (_taskring_v1_Task__Output | null);
  'depends_on': (_taskring_v1_Dependency__Output)[];
  'join': (_taskring_v1_Join__Output | null);
}
