/**
 * What the server answers about a graph (Python: SubmittedGraph, GraphInfo,
 * CancelledGraph in taskring/graph.py): the receipt of `Client.submitGraph`,
 * the view of `Client.getGraph` and what `Client.cancelGraph` did. Tasks and nodes are Maps by key, in the order the tasks
 * were added (a key may be any name, "constructor" too, which a plain object
 * would confuse with its prototype's).
 */
import { ProtocolError } from './errors';
import { stateFromWire } from './envelope';
import type { CancelGraphResponse__Output } from './gen/taskring/v1/CancelGraphResponse';
import type { GetGraphResponse__Output } from './gen/taskring/v1/GetGraphResponse';
import type { GraphNode__Output } from './gen/taskring/v1/GraphNode';
import type { SubmitGraphResponse__Output } from './gen/taskring/v1/SubmitGraphResponse';
import type { Join, JoinRule, OnFailure } from './graph';
import type { TaskState } from './task';

/** One task of a submitted graph. */
export interface GraphTaskRef {
  key: string;
  /** Derived by the server from the namespace, the graph id and the key. */
  taskId: string;
  state: TaskState;
  slot: number;
}

/** The server's receipt for a graph. */
export interface SubmittedGraph {
  graphId: string;
  /** The graph existed with the same tasks: nothing was written. */
  duplicate: boolean;
  /** By key, in the order they were added. */
  tasks: ReadonlyMap<string, GraphTaskRef>;
}

/** One dependency as it stands. */
export interface GraphEdge {
  parentKey: string;
  onFailure: OnFailure;
  /**
   * How the parent ended for this edge: succeeded, failed, ignored, continued
   * (failed an attempt under 'continue'), skipped, cancelled; "" while it has not.
   */
  outcome: string;
}

/** One task of a graph as it stands. */
export interface GraphNode {
  key: string;
  taskId: string;
  state: TaskState;
  attempts: number;
  join: Join;
  dependsOn: GraphEdge[];
  /** Why it was skipped or cancelled, or its last error; "" when none. */
  reason: string;
  /** What a waiting task waits for, in words; "" otherwise. */
  waiting: string;
  /** Its handler's kept result as JSON (with `withResults`); "" when none. */
  resultJson: string;
  /** The same, decoded; null when none was kept or asked for. */
  result: unknown;
}

/** A graph as it stands (`Client.getGraph`). */
export interface GraphInfo {
  graphId: string;
  namespace: string;
  /** "running" while any task has not ended, "finished" once all have ("incomplete" while its tasks are being written). */
  state: string;
  /** Tasks by state ("succeeded": 3, ...); states with none are left out. */
  counts: Record<string, number>;
  /** By key, in the order they were added. */
  nodes: ReadonlyMap<string, GraphNode>;
}

/** What `Client.cancelGraph` did. */
export interface CancelledGraph {
  /** Tasks cancelled now. */
  cancelled: number;
  /** Keys of the running tasks left to finish ('graceful', or types without heartbeats). */
  running: string[];
}

const ON_FAILURE_FROM_WIRE: Readonly<Record<string, OnFailure>> = {
  ON_FAILURE_UNSPECIFIED: 'skip', // the proto's default policy
  ON_FAILURE_SKIP: 'skip',
  ON_FAILURE_IGNORE: 'ignore',
  ON_FAILURE_CONTINUE: 'continue',
};

const RULE_FROM_WIRE: Readonly<Record<string, JoinRule>> = {
  JOIN_RULE_UNSPECIFIED: 'all_succeeded', // the proto's default rule
  JOIN_RULE_ALL_SUCCEEDED: 'all_succeeded',
  JOIN_RULE_ALL_DONE: 'all_done',
  JOIN_RULE_NONE_FAILED: 'none_failed',
  JOIN_RULE_ANY_SUCCEEDED: 'any_succeeded',
  JOIN_RULE_AT_LEAST: 'at_least',
};

/** A value of a wire enum this SDK knows; an unknown one means the server is newer. */
function known<T>(table: Readonly<Record<string, T>>, value: unknown, what: string): T {
  const v = typeof value === 'string' && Object.hasOwn(table, value) ? table[value] : undefined;
  if (v === undefined) throw new ProtocolError(`server sent unknown ${what} ${String(value)}; upgrade the taskring SDK`);
  return v;
}

/** A kept result the server sent as JSON text; "" is null. */
export function decodeResult(text: string, key: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ProtocolError(`server sent a result of ${JSON.stringify(key)} that is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function submittedGraphFromWire(msg: SubmitGraphResponse__Output): SubmittedGraph {
  return {
    graphId: msg.graph_id,
    duplicate: msg.duplicate,
    tasks: new Map(msg.tasks.map((t) => [t.key, { key: t.key, taskId: t.task_id, state: stateFromWire(t.state), slot: t.slot }])),
  };
}

export function cancelledGraphFromWire(msg: CancelGraphResponse__Output): CancelledGraph {
  return { cancelled: msg.cancelled, running: [...msg.running] };
}

function nodeFromWire(n: GraphNode__Output): GraphNode {
  return {
    key: n.key,
    taskId: n.task_id,
    state: stateFromWire(n.state),
    attempts: n.attempts,
    join: { rule: known(RULE_FROM_WIRE, n.join?.rule ?? 'JOIN_RULE_UNSPECIFIED', 'join rule'), atLeast: n.join?.at_least ?? 0 },
    dependsOn: n.depends_on.map((e) => ({
      parentKey: e.parent_key,
      onFailure: known(ON_FAILURE_FROM_WIRE, e.on_failure, 'failure policy'),
      outcome: e.outcome,
    })),
    reason: n.reason,
    waiting: n.waiting,
    resultJson: n.result_json,
    result: decodeResult(n.result_json, n.key),
  };
}

export function graphInfoFromWire(msg: GetGraphResponse__Output): GraphInfo {
  return {
    graphId: msg.graph_id,
    namespace: msg.namespace,
    state: msg.state,
    counts: { ...msg.counts },
    nodes: new Map(msg.nodes.map((n) => [n.key, nodeFromWire(n)])),
  };
}
