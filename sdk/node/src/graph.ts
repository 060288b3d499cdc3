/**
 * Graphs: tasks that depend on other tasks, submitted in one call
 * (Python: taskring/graph.py; docs/graphs.md).
 *
 *   const g = new Graph('order-1042');                 // the graph id: yours, idempotent
 *   const charge = g.task('charge', { namespace: 'shop', taskType: 'charge_card', payload: { order: 1042 } });
 *   const ship = g.task('ship', { namespace: 'shop', taskType: 'ship_order' }, { after: [charge] });
 *   const email = g.task('email', { namespace: 'shop', taskType: 'send_email' }, { after: [charge.onFailure('ignore')] });
 *   g.task('close', { namespace: 'shop', taskType: 'close_order' }, { after: [ship, email], join: Join.noneFailed() });
 *   await client.submitGraph(g);
 *
 * A task runs when its join rule is met by the ends of the tasks it comes
 * `after`, and is skipped (with the reason) when the rule can no longer be met.
 *
 * Two ways to describe a graph:
 * - the `Graph` builder, which checks at once what needs no server: a repeated
 *   key, a dependency on a task not added before (so a built graph has no
 *   cycle). Its errors name the field as the server does ("tasks[2].depends_on[0]").
 * - a plain `GraphSpec` (e.g. read from a file), checked only for what the
 *   wire cannot carry, as `TaskSpec`s are (envelope.ts): the server judges the
 *   rest, cycles included, and names the field in an InvalidArgumentError.
 */
import { ValidationError } from './errors';
import { INT32_MAX, integer, requiredText, specToWire } from './envelope';
import type { CancelGraphRequest } from './gen/taskring/v1/CancelGraphRequest';
import type { CancelMode as WireCancelMode } from './gen/taskring/v1/CancelMode';
import type { OnFailure as WireOnFailure } from './gen/taskring/v1/OnFailure';
import type { JoinRule as WireJoinRule } from './gen/taskring/v1/JoinRule';
import type { SubmitGraphRequest } from './gen/taskring/v1/SubmitGraphRequest';
import type { Join as WireJoin } from './gen/taskring/v1/Join';
import type { TaskSpec } from './task';

/**
 * What the failure (dead letter) of a task means to one task after it: 'skip'
 * counts it as failed (the join rule decides; the default rule then skips),
 * 'ignore' counts it as done, as if it had succeeded without a result;
 * 'continue' lets the task go at once on the parent's first failed attempt, as
 * done ("continued"), without waiting for its retries (a success before any
 * failure counts as a success).
 */
export type OnFailure = 'skip' | 'ignore' | 'continue';

/** When a task becomes due, from the ends of the tasks it comes after (see `Join`). */
export type JoinRule = 'all_succeeded' | 'all_done' | 'none_failed' | 'any_succeeded' | 'at_least';

/** A join rule; `atLeast` is for the rule 'at_least' only (0 otherwise). */
export interface Join {
  rule: JoinRule;
  atLeast?: number;
}

export const Join = Object.freeze({
  /** Every parent succeeded (a failure under onFailure('ignore') counts as done). The default. */
  allSucceeded: (): Join => ({ rule: 'all_succeeded', atLeast: 0 }),
  /** Every parent ended, whatever its end. */
  allDone: (): Join => ({ rule: 'all_done', atLeast: 0 }),
  /** Every parent ended and none failed (a skipped parent is fine). */
  noneFailed: (): Join => ({ rule: 'none_failed', atLeast: 0 }),
  /** One parent succeeded. */
  anySucceeded: (): Join => ({ rule: 'any_succeeded', atLeast: 0 }),
  /** At least `k` parents succeeded (1 to the number of parents; the server checks the upper bound). */
  atLeast: (k: number): Join => {
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > INT32_MAX) {
      throw new ValidationError('at_least', `must be a whole number >= 1, got ${String(k)}`);
    }
    return { rule: 'at_least', atLeast: k };
  },
});

/** One dependency: the task with `key`, and what its failure means here (default 'skip'). */
export interface Dependency {
  key: string;
  onFailure?: OnFailure;
}

/** One task of a `GraphSpec`. */
export interface GraphTaskSpec {
  /** Unique in the graph: [A-Za-z0-9][A-Za-z0-9._:-]{0,127}. */
  key: string;
  /** Of the graph's namespace; no taskId, uniqueKey or scheduleTime (the server refuses them in a graph). */
  task: TaskSpec;
  after?: readonly Dependency[];
  /** Default: Join.allSucceeded(). */
  join?: Join;
}

/** A graph as plain data: what `Client.submitGraph` sends. */
export interface GraphSpec {
  namespace: string;
  /** Yours: a retried submit with the same tasks answers `duplicate: true`. */
  graphId: string;
  tasks: readonly GraphTaskSpec[];
}

const ON_FAILURE_TO_WIRE: Readonly<Record<OnFailure, WireOnFailure>> = {
  skip: 'ON_FAILURE_SKIP',
  ignore: 'ON_FAILURE_IGNORE',
  continue: 'ON_FAILURE_CONTINUE',
};

const RULE_TO_WIRE: Readonly<Record<JoinRule, WireJoinRule>> = {
  all_succeeded: 'JOIN_RULE_ALL_SUCCEEDED',
  all_done: 'JOIN_RULE_ALL_DONE',
  none_failed: 'JOIN_RULE_NONE_FAILED',
  any_succeeded: 'JOIN_RULE_ANY_SUCCEEDED',
  at_least: 'JOIN_RULE_AT_LEAST',
};

function onFailureToWire(value: unknown, field: string): WireOnFailure {
  const policy = value === undefined ? 'skip' : value;
  if (typeof policy !== 'string' || !Object.hasOwn(ON_FAILURE_TO_WIRE, policy)) {
    throw new ValidationError(field, `must be skip, ignore or continue, got ${JSON.stringify(value)}`);
  }
  return ON_FAILURE_TO_WIRE[policy as OnFailure];
}

function joinToWire(join: Join | undefined, field: string): WireJoin {
  if (join === undefined) return { rule: RULE_TO_WIRE.all_succeeded, at_least: 0 };
  if (typeof join !== 'object' || join === null) throw new ValidationError(field, 'must be an object');
  if (typeof join.rule !== 'string' || !Object.hasOwn(RULE_TO_WIRE, join.rule)) {
    throw new ValidationError(`${field}.rule`,
      `must be one of ${Object.keys(RULE_TO_WIRE).join(', ')}; got ${JSON.stringify(join.rule)}`);
  }
  // Only the wire's range here: whether it fits the rule and the number of parents is the server's to say.
  const atLeast = integer(join.atLeast ?? 0, `${field}.at_least`, 0, INT32_MAX);
  return { rule: RULE_TO_WIRE[join.rule], at_least: atLeast };
}

/**
 * The wire SubmitGraphRequest of a spec, checked only for what the wire cannot
 * carry; errors name the wire's fields ("tasks[1].depends_on[0].on_failure"),
 * and a task's own fields as `Client.submit` does, prefixed ("tasks[1].task.delayMs").
 * `traceId` goes on every task that has none (the caller's trace, as submitBatch does).
 */
export function graphToWire(spec: GraphSpec, traceId = ''): SubmitGraphRequest {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError('graph', 'must be an object');
  if (!Array.isArray(spec.tasks)) throw new ValidationError('tasks', 'must be an array of tasks');
  return {
    namespace: requiredText(spec.namespace, 'namespace'),
    graph_id: requiredText(spec.graphId, 'graph_id'),
    tasks: spec.tasks.map((t: GraphTaskSpec, i) => {
      const p = `tasks[${i}]`;
      if (typeof t !== 'object' || t === null) throw new ValidationError(p, 'must be an object');
      const after = t.after ?? [];
      if (!Array.isArray(after)) throw new ValidationError(`${p}.depends_on`, 'must be an array of dependencies');
      const task = specToWire(t.task, `${p}.task.`);
      if (!task.trace_id && traceId) task.trace_id = traceId;
      return {
        key: requiredText(t.key, `${p}.key`),
        task,
        depends_on: after.map((d: Dependency, j) => {
          const f = `${p}.depends_on[${j}]`;
          if (typeof d !== 'object' || d === null) throw new ValidationError(f, 'must be a dependency { key, onFailure }');
          return { key: requiredText(d.key, `${f}.key`), on_failure: onFailureToWire(d.onFailure, `${f}.on_failure`) };
        }),
        join: joinToWire(t.join, `${p}.join`),
      };
    }),
  };
}

/**
 * How `Client.cancelGraph` treats the graph's running tasks: 'graceful' (the
 * default) lets them finish (a failed one is not retried) and starts nothing
 * new; 'immediate' also tells those of types that heartbeat to stop at their
 * next heartbeat (the others finish as under 'graceful').
 */
export type CancelMode = 'graceful' | 'immediate';

/** The options of `Client.cancelGraph`. */
export interface CancelGraphOptions {
  /** Default 'graceful'. */
  mode?: CancelMode;
  /** Kept in each cancelled task's history; "" (the default): the server's. */
  reason?: string;
}

const CANCEL_MODE_TO_WIRE: Readonly<Record<CancelMode, WireCancelMode>> = {
  graceful: 'CANCEL_MODE_GRACEFUL',
  immediate: 'CANCEL_MODE_IMMEDIATE',
};

/**
 * The wire CancelGraphRequest (Python: `cancel_graph_request`): a mode other
 * than 'graceful' or 'immediate' is a ValidationError on `mode`, nothing sent.
 */
export function cancelGraphToWire(namespace: string, graphId: string, options: CancelGraphOptions = {}): CancelGraphRequest {
  if (typeof options !== 'object' || options === null) throw new ValidationError('options', 'must be an object');
  const mode = options.mode === undefined ? 'graceful' : options.mode;
  if (typeof mode !== 'string' || !Object.hasOwn(CANCEL_MODE_TO_WIRE, mode)) {
    throw new ValidationError('mode', `must be graceful or immediate, got ${JSON.stringify(options.mode)}`);
  }
  return {
    namespace: requiredText(namespace, 'namespace'),
    graph_id: requiredText(graphId, 'graph_id'),
    mode: CANCEL_MODE_TO_WIRE[mode],
    reason: requiredText(options.reason === undefined ? '' : options.reason, 'reason'),
  };
}

/** A task added to a `Graph`: name it in a later task's `after`. */
export class GraphTaskHandle {
  /** @internal Made by `Graph.task`. */
  constructor(readonly key: string, readonly graph: Graph) {
    Object.freeze(this);
  }

  /** This dependency with another failure policy: `charge.onFailure('ignore')` (as itself, it is 'skip'). */
  onFailure(policy: OnFailure): Dependency {
    return { key: this.key, onFailure: policy };
  }
}

/**
 * A graph of tasks of one namespace (the first task's), built in order: a task
 * can only come after tasks added before it, so a graph built here has no
 * cycle. `task()` throws a ValidationError naming the field as the server
 * would ("tasks[1].key", "tasks[2].depends_on[0]") and adds nothing then.
 */
export class Graph {
  readonly graphId: string;
  readonly #tasks: GraphTaskSpec[] = [];
  /** Key -> its index, for the checks and the error messages. */
  readonly #index = new Map<string, number>();

  constructor(graphId: string) {
    if (typeof graphId !== 'string' || graphId === '') throw new ValidationError('graph_id', 'must be a non-empty string');
    this.graphId = graphId;
  }

  /** Add a task that runs after `after` (tasks added before it) by `join` (default: all succeeded). */
  task(key: string, spec: TaskSpec, options: { after?: readonly (GraphTaskHandle | Dependency)[]; join?: Join } = {}): GraphTaskHandle {
    const i = this.#tasks.length;
    if (typeof key !== 'string' || key === '') throw new ValidationError(`tasks[${i}].key`, 'must be a non-empty string');
    const earlier = this.#index.get(key);
    if (earlier !== undefined) throw new ValidationError(`tasks[${i}].key`, `repeats tasks[${earlier}].key ${JSON.stringify(key)}`);
    const after: Dependency[] = [];
    const seen = new Map<string, number>();
    for (const [j, given] of (options.after ?? []).entries()) {
      const f = `tasks[${i}].depends_on[${j}]`;
      if (given instanceof GraphTaskHandle && given.graph !== this) {
        throw new ValidationError(f, `${JSON.stringify(given.key)} is a task of another graph`);
      }
      const dep: Dependency = given instanceof GraphTaskHandle ? { key: given.key } : given;
      if (typeof dep !== 'object' || dep === null || !this.#index.has(dep.key)) {
        const named = typeof dep === 'object' && dep !== null ? JSON.stringify(dep.key) : String(dep);
        throw new ValidationError(f, `names ${named}, which is no task added before this one`);
      }
      const again = seen.get(dep.key);
      if (again !== undefined) throw new ValidationError(f, `repeats tasks[${i}].depends_on[${again}]`);
      seen.set(dep.key, j);
      onFailureToWire(dep.onFailure, `${f}.on_failure`);
      after.push({ key: dep.key, onFailure: dep.onFailure ?? 'skip' });
    }
    if (options.join !== undefined) joinToWire(options.join, `tasks[${i}].join`);
    specToWire(spec, `tasks[${i}].task.`); // what the wire cannot carry, refused here rather than at submit
    this.#tasks.push({ key, task: spec, after, join: options.join ?? Join.allSucceeded() });
    this.#index.set(key, i);
    return new GraphTaskHandle(key, this);
  }

  /** The graph as plain data, for `Client.submitGraph` (which takes the Graph itself too). */
  toSpec(): GraphSpec {
    const first = this.#tasks[0];
    if (first === undefined) throw new ValidationError('tasks', 'a graph needs at least one task');
    return { namespace: first.task.namespace, graphId: this.graphId, tasks: [...this.#tasks] };
  }
}
