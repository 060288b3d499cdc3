/**
 * The `graph` commands of cli.ts and its executor's `graph-results` behaviour,
 * the contract shared with the Go and Java CLIs (tests/integration/test_sdk_graphs.py):
 *
 *   cli.js graph submit --nodes H:P,... --file GRAPH.json
 *     GRAPH.json: {"namespace", "graph_id", "tasks": [{"key", "task_type", "payload",
 *     "after": [{"key", "on_failure": "skip"|"ignore"|"continue"}], "join": {"rule", "at_least"}}]};
 *     prints {"graph_id", "duplicate", "tasks": {key: {"task_id", "state", "slot"}}}.
 *   cli.js graph get --nodes H:P,... --namespace NS --graph-id ID [--with-results]
 *     prints {"graph_id", "namespace", "state", "counts", "nodes": {key: {"task_id", "state",
 *     "attempts", "reason", "waiting", "result", "depends_on": [{"parent_key", "on_failure", "outcome"}]}}}.
 *   cli.js graph cancel --nodes H:P,... --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]
 *     prints {"cancelled", "running": [key, ...]}: how many tasks it cancelled and the running ones
 *     left to finish. A --mode other than graceful or immediate is a UsageError: exit 2, nothing sent.
 *
 * The file is sent as a `GraphSpec`, not through the `Graph` builder: the
 * server is the judge of a graph from elsewhere (a cycle, a key named before
 * it is defined), and its refusal names the field.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFileSync } from 'node:fs';
import { UsageError, intOption } from './cli-args';
import type { TaskContext } from './context';
import { NonRetryableError } from './errors';
import type { CancelMode, Dependency, GraphSpec, GraphTaskSpec, Join } from './graph';
import type { CancelledGraph, GraphInfo, SubmittedGraph } from './graph-info';
import type { Handler } from './runner';

export const GRAPH_ACTIONS = ['submit', 'get', 'cancel'] as const;
export type GraphAction = (typeof GRAPH_ACTIONS)[number];

const CONNECT = {
  nodes: { type: 'string' },
  'rpc-timeout-ms': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];
const SUBMIT_OPTIONS = { ...CONNECT, file: { type: 'string' } } as const;
const GET_OPTIONS = {
  ...CONNECT,
  namespace: { type: 'string' },
  'graph-id': { type: 'string' },
  'with-results': { type: 'boolean', default: false },
} as const;
const CANCEL_OPTIONS = {
  ...CONNECT,
  namespace: { type: 'string' },
  'graph-id': { type: 'string' },
  mode: { type: 'string', default: 'graceful' },
  reason: { type: 'string', default: '' },
} as const;
const CANCEL_MODES: readonly string[] = ['graceful', 'immediate'] satisfies CancelMode[];

/** What `graph <action>` does: the parsed command line, checked (UsageError otherwise). */
export interface GraphArgs {
  action: GraphAction;
  nodes: string;
  rpcTimeoutMs: number;
  /** submit: the path of GRAPH.json. */
  file: string;
  namespace: string;
  graphId: string;
  withResults: boolean;
  /** cancel: 'graceful' unless --mode immediate. */
  mode: CancelMode;
  /** cancel: "" unless --reason. */
  reason: string;
}

/**
 * Parse `graph`'s arguments (after the word `graph`). A missing flag or an
 * option of the other action throws UsageError (or parseArgs' TypeError): exit 2, nothing sent.
 */
export function graphArgs(rest: string[]): GraphArgs {
  const [action, ...args] = rest;
  if (!GRAPH_ACTIONS.includes(action as GraphAction)) {
    throw new UsageError(`the action must be one of ${GRAPH_ACTIONS.join(', ')}, got ${JSON.stringify(action ?? '')}`);
  }
  const act = action as GraphAction;
  const options: NonNullable<ParseArgsConfig['options']> =
    act === 'submit' ? SUBMIT_OPTIONS : act === 'get' ? GET_OPTIONS : CANCEL_OPTIONS;
  const values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as
    Record<string, string | boolean | undefined>;
  if (!values.nodes) throw new UsageError('--nodes is required');
  if (act === 'submit' && !values.file) throw new UsageError('--file is required');
  if (act !== 'submit' && (!values.namespace || !values['graph-id'])) throw new UsageError('--namespace and --graph-id are required');
  if (act === 'cancel' && !CANCEL_MODES.includes(String(values.mode))) {
    throw new UsageError(`--mode: must be graceful or immediate, got ${JSON.stringify(values.mode)}`);
  }
  return {
    action: act,
    nodes: String(values.nodes),
    rpcTimeoutMs: intOption(values, 'rpc-timeout-ms') ?? 10_000,
    file: String(values.file ?? ''),
    namespace: String(values.namespace ?? ''),
    graphId: String(values['graph-id'] ?? ''),
    withResults: values['with-results'] === true,
    mode: (values.mode ?? 'graceful') as CancelMode,
    reason: String(values.reason ?? ''),
  };
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `where` must be a JSON object with no keys but `allowed` (a misspelt key must not be dropped unseen). */
function objectOf(v: unknown, where: string, allowed: readonly string[]): Json {
  if (!isObject(v)) throw new UsageError(`--file: ${where}: must be a JSON object`);
  const unknown = Object.keys(v).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw new UsageError(`--file: ${where}: unknown key ${JSON.stringify(unknown[0])}; allowed: ${allowed.join(', ')}`);
  return v;
}

function arrayOf(v: unknown, where: string): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new UsageError(`--file: ${where}: must be a JSON array`);
  return v;
}

/**
 * The GraphSpec of GRAPH.json's text. Its structure (objects, arrays, known
 * keys) is checked here: UsageError, exit 2. The values go on as they are, for
 * the SDK (a ValidationError) or the server (an InvalidArgumentError) to judge:
 * exit 1, the field named.
 */
export function graphFileSpec(text: string): GraphSpec {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--file: not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const g = objectOf(doc, 'the graph', ['namespace', 'graph_id', 'tasks']);
  const namespace = g.namespace as string;
  const tasks = arrayOf(g.tasks, 'tasks').map((raw, i): GraphTaskSpec => {
    const t = objectOf(raw, `tasks[${i}]`, ['key', 'task_type', 'payload', 'after', 'join']);
    const after = arrayOf(t.after, `tasks[${i}].after`).map((d, j): Dependency => {
      const dep = objectOf(d, `tasks[${i}].after[${j}]`, ['key', 'on_failure']);
      return dep.on_failure === undefined ? { key: dep.key as string } : { key: dep.key as string, onFailure: dep.on_failure as Dependency['onFailure'] };
    });
    const spec: GraphTaskSpec = {
      key: t.key as string,
      task: { namespace, taskType: t.task_type as string, payload: t.payload as Json | undefined },
      after,
    };
    if (t.join !== undefined) {
      const join = objectOf(t.join, `tasks[${i}].join`, ['rule', 'at_least']);
      spec.join = { rule: join.rule as Join['rule'], atLeast: (join.at_least ?? 0) as number };
    }
    return spec;
  });
  return { namespace, graphId: g.graph_id as string, tasks };
}

/** Read and parse GRAPH.json; an unreadable file is a UsageError too. */
export function readGraphFile(file: string): GraphSpec {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`--file: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  return graphFileSpec(text);
}

/** The JSON line `graph submit` prints: exactly graph_id, duplicate, tasks by key (in order). */
export function submittedGraphJson(s: SubmittedGraph): Json {
  return {
    graph_id: s.graphId,
    duplicate: s.duplicate,
    // Object.fromEntries defines own properties: any key is safe, in the graph's order.
    tasks: Object.fromEntries([...s.tasks].map(([key, t]) => [key, { task_id: t.taskId, state: t.state, slot: t.slot }])),
  };
}

/** The JSON line `graph get` prints: the contract's keys; result null when none. */
export function graphInfoJson(g: GraphInfo): Json {
  return {
    graph_id: g.graphId,
    namespace: g.namespace,
    state: g.state,
    counts: g.counts,
    nodes: Object.fromEntries([...g.nodes].map(([key, n]) => [key, {
      task_id: n.taskId,
      state: n.state,
      attempts: n.attempts,
      reason: n.reason,
      waiting: n.waiting,
      result: n.result,
      depends_on: n.dependsOn.map((e) => ({ parent_key: e.parentKey, on_failure: e.onFailure, outcome: e.outcome })),
    }])),
  };
}

/** The JSON line `graph cancel` prints: exactly cancelled, running (keys, as the server gave them). */
export function cancelledGraphJson(c: CancelledGraph): Json {
  return { cancelled: c.cancelled, running: c.running };
}

/** What a `graph-results` handler saw of its parents: {key: {outcome, result}}. */
function saw(ctx: TaskContext): Json {
  return Object.fromEntries([...ctx.parentResults].map(([key, p]) => [key, { outcome: p.outcome, result: p.result }]));
}

/**
 * The executor's `graph-results` behaviour: print {"graph_run": <type>,
 * "task_id", "parents": <saw>} on stdout, then fail non-retryably when the
 * payload says {"fail": true}, else return {"type": <type>, "saw": <saw>} as
 * the task's result.
 */
export function graphResultsHandler(print: (line: string) => void): Handler {
  return (ctx) => {
    const parents = saw(ctx);
    print(JSON.stringify({ graph_run: ctx.taskType, task_id: ctx.taskId, parents }));
    if (ctx.payload.fail === true) throw new NonRetryableError('graph-results: the payload says {"fail": true}');
    return { type: ctx.taskType, saw: parents };
  };
}
