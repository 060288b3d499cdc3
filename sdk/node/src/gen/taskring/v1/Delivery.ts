// Original file: proto/taskring/v1/taskring.proto

import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from '../../taskring/v1/Task';
import type { ParentResult as _taskring_v1_ParentResult, ParentResult__Output as _taskring_v1_ParentResult__Output } from '../../taskring/v1/ParentResult';
import type { Long } from '@grpc/proto-loader';

export interface Delivery {
  'task'?: (_taskring_v1_Task | null);
  /**
   * 1 for the first run
   */
  'attempt'?: (number);
  /**
   * the slot's ownership epoch (fencing token)
   */
  'epoch'?: (number | string | Long);
  /**
   * the handler's deadline for this attempt
   */
  'timeout_ms'?: (number);
  /**
   * 0: no limit. Otherwise the handler must start within this many ms of the
   * delivery's arrival, or not at all (OUTCOME_KIND_NOT_STARTED). The dispatcher
   * sends what remains of its ZooKeeper session lease, so that no attempt starts
   * after another node may own the task's slot (an executor queueing deliveries
   * behind its in-flight cap would otherwise start one from a lost epoch).
   */
  'start_within_ms'?: (number);
  /**
   * 0: none. Otherwise the handler must not start at or after this instant (unix
   * epoch ms, on the dispatcher's clock, which follows the store's): the same end of
   * the lease, for a batch that was held up between the dispatcher and the executor
   * (a dispatcher frozen just as it sent it). Whichever of the two comes first wins;
   * skew between the two machines' clocks moves this one, not start_within_ms.
   */
  'start_by_unix_ms'?: (number | string | Long);
  /**
   * 0: the handler need not heartbeat. Otherwise the attempt is alive only while its
   * heartbeats come: when none reaches the dispatcher for this long, the attempt is over
   * and recorded as timed out (retryable), and a later heartbeat or outcome of it is
   * refused. The SDK sends the first heartbeat itself as the handler starts; the handler
   * calls heartbeat() at least this often after that (the task's type declares it).
   */
  'heartbeat_timeout_ms'?: (number);
  /**
   * The details of the last heartbeat an earlier attempt of this task sent (JSON text),
   * for resuming where it stopped; "" when there are none.
   */
  'heartbeat_details_json'?: (string);
  /**
   * A task of a graph that other tasks depend on: the handler's return value is sent back
   * (Outcome.result_json) and handed to them. Unset: nothing is sent (no cost).
   */
  'keep_result'?: (boolean);
  /**
   * A task of a graph: how each task it depends on ended, with its result, by key order.
   */
  'parent_results'?: (_taskring_v1_ParentResult)[];
  /**
   * The parents' results came to more than 1 MiB: those past it carry none here (read them
   * with GetGraph with_results).
   */
  'parent_results_truncated'?: (boolean);
}

export interface Delivery__Output {
  'task': (_taskring_v1_Task__Output | null);
  /**
   * 1 for the first run
   */
  'attempt': (number);
  /**
   * the slot's ownership epoch (fencing token)
   */
  'epoch': (string);
  /**
   * the handler's deadline for this attempt
   */
  'timeout_ms': (number);
  /**
   * 0: no limit. Otherwise the handler must start within this many ms of the
   * delivery's arrival, or not at all (OUTCOME_KIND_NOT_STARTED). The dispatcher
   * sends what remains of its ZooKeeper session lease, so that no attempt starts
   * after another node may own the task's slot (an executor queueing deliveries
   * behind its in-flight cap would otherwise start one from a lost epoch).
   */
  'start_within_ms': (number);
  /**
   * 0: none. Otherwise the handler must not start at or after this instant (unix
   * epoch ms, on the dispatcher's clock, which follows the store's): the same end of
   * the lease, for a batch that was held up between the dispatcher and the executor
   * (a dispatcher frozen just as it sent it). Whichever of the two comes first wins;
   * skew between the two machines' clocks moves this one, not start_within_ms.
   */
  'start_by_unix_ms': (string);
  /**
   * 0: the handler need not heartbeat. Otherwise the attempt is alive only while its
   * heartbeats come: when none reaches the dispatcher for this long, the attempt is over
   * and recorded as timed out (retryable), and a later heartbeat or outcome of it is
   * refused. The SDK sends the first heartbeat itself as the handler starts; the handler
   * calls heartbeat() at least this often after that (the task's type declares it).
   */
  'heartbeat_timeout_ms': (number);
  /**
   * The details of the last heartbeat an earlier attempt of this task sent (JSON text),
   * for resuming where it stopped; "" when there are none.
   */
  'heartbeat_details_json': (string);
  /**
   * A task of a graph that other tasks depend on: the handler's return value is sent back
   * (Outcome.result_json) and handed to them. Unset: nothing is sent (no cost).
   */
  'keep_result': (boolean);
  /**
   * A task of a graph: how each task it depends on ended, with its result, by key order.
   */
  'parent_results': (_taskring_v1_ParentResult__Output)[];
  /**
   * The parents' results came to more than 1 MiB: those past it carry none here (read them
   * with GetGraph with_results).
   */
  'parent_results_truncated': (boolean);
}
