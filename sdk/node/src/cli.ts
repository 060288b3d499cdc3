#!/usr/bin/env node
/**
 * A small executor for cross-language tests:
 *
 *   node dist/cli.js executor --zk HOST:PORT/chroot --namespace NS --types a,b \
 *     [--behavior ok|reject-once|fail-once|heartbeat|graph-results] [--host H] [--port P] [--max-in-flight N] [--instance-id ID]
 *     [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
 *
 * Registers in ZooKeeper, serves until SIGTERM/SIGINT, then stops gracefully.
 * --tls-cert/--tls-key serve TLS, --tls-client-ca requires mutual TLS; each
 * defaults to its env var, TASKRING_EXECUTOR_TLS_CERT_FILE, _KEY_FILE and
 * _CLIENT_CA_FILE (a flag given, even empty, overrides it). A bad TLS
 * configuration exits 2 naming the flag or env var, before anything starts.
 * Behaviours: ok succeeds; reject-once returns a rejected promise on attempt 1
 * and succeeds from attempt 2; fail-once throws synchronously on attempt 1 and
 * succeeds from attempt 2 (both are retryable failures); heartbeat works for
 * payload.ms, heartbeating {"done_ms": N} every payload.every_ms (default 100)
 * and resuming from the previous attempt's last details, then succeeds; when
 * ctx.signal is aborted (a CANCEL or LOST answer, the deadline) it prints
 * "stopped <task_id> <why>" on stdout, why being "cancelled: <reason>",
 * "lost: <reason>" or the abort's message, and ends; graph-results prints
 * {"graph_run": <type>, "task_id", "parents": {key: {"outcome", "result"}}},
 * fails non-retryably when the payload says {"fail": true}, else returns
 * {"type": <type>, "saw": <parents>} as its result (cli-graph.ts). Prints one line per
 * delivery on stdout, "<task_id> <attempt> <OUTCOME>" (e.g. SUCCEEDED,
 * RETRYABLE_FAILURE, STOPPED), and "ready <address> <znode>" on stderr once registered.
 *
 *   node dist/cli.js submit --nodes host:port,... --namespace NS --type T [--payload JSON] [--task-id ID] [--delay-ms N]
 *     prints the task_id as the only stdout line.
 *   node dist/cli.js get --nodes host:port,... --task-id ID
 *     prints the task as one JSON line: task_id, namespace, task_type, state, attempts, last_error,
 *     waiting (why it has not started: "" unless its owner holds it at a limit).
 *
 *   node dist/cli.js cron create|update --nodes H:P --namespace NS --name NAME --type T --schedule S
 *       [--zone Z] [--payload JSON] [--owner-team X] [--description X] [--catch-up P] [--catch-up-limit N]
 *       [--overlap P] [--on-repeated-hour P] [--on-skipped-hour P] [--timeout-ms N] [--max-retries N]
 *   node dist/cli.js cron get|pause|resume|delete --nodes H:P --namespace NS --name NAME
 *   node dist/cli.js cron list --nodes H:P [--namespace NS]
 *     print one JSON line per rule (`cronRuleJson`; list: one per rule, nothing for none).
 *     create/update send the whole rule, as the Python `taskring cron` does.
 *
 *   node dist/cli.js policies put --nodes H:P --namespace NS --type T --policy JSON --reason R [--if-revision N]
 *   node dist/cli.js policies get --nodes H:P --namespace NS --type T
 *   node dist/cli.js policies delete --nodes H:P --namespace NS --type T --reason R [--if-revision N]
 *   node dist/cli.js policies list --nodes H:P [--namespace NS]
 *     print one JSON line per type policy (`typePolicyJson`; list: one per policy, nothing for none),
 *     the same command and keys as the Go and Java CLIs.
 *
 *   node dist/cli.js graph submit --nodes H:P --file GRAPH.json
 *   node dist/cli.js graph get --nodes H:P --namespace NS --graph-id ID [--with-results]
 *   node dist/cli.js graph cancel --nodes H:P --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]
 *     print one JSON line (`submittedGraphJson`, `graphInfoJson`, `cancelledGraphJson`; the file and the keys in cli-graph.ts),
 *     the same command and keys as the Go and Java CLIs.
 *
 * submit, get, cron, policies and graph read TASKRING_TOKEN (sent as `authorization: Bearer ...`) and, for TLS,
 * TASKRING_CA_FILE [TASKRING_CLIENT_CERT_FILE TASKRING_CLIENT_KEY_FILE] from the
 * environment, like the Python commands; never from arguments (which `ps` shows).
 * A refused call prints its error on stderr and exits 1.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError, intOption } from './cli-args';
import { GRAPH_ACTIONS, cancelledGraphJson, graphArgs, graphInfoJson, graphResultsHandler, readGraphFile,
  submittedGraphJson, type GraphAction, type GraphArgs } from './cli-graph';
import { Client, tlsCredentials, type ClientOptions } from './client';
import type { CronRuleInfo, CronRuleSpec } from './cron';
import type { GraphSpec } from './graph';
import type { TypePolicy } from './policies';
import { NonRetryableError, TaskringError, TaskStoppedError } from './errors';
import { Executor, type ExecutorOptions } from './executor';
import { TLS_ENV_NAMES, checkExecutorTlsFields, executorServerCredentials, type ExecutorTlsNames } from './executor-tls';
import type { TaskContext } from './context';
import type { Handler } from './runner';

const USAGE = 'usage: cli.js submit --nodes H:P,... --namespace NS --type T [--payload JSON] [--task-id ID] [--delay-ms N]\n' +
  '       cli.js get --nodes H:P,... --task-id ID\n' +
  '       cli.js cron create|update --nodes H:P,... --namespace NS --name NAME --type T --schedule S [--zone Z] ' +
  '[--payload JSON] [--owner-team X] [--description X] [--catch-up P] [--catch-up-limit N] [--overlap P] ' +
  '[--on-repeated-hour P] [--on-skipped-hour P] [--timeout-ms N] [--max-retries N]\n' +
  '       cli.js cron get|pause|resume|delete --nodes H:P,... --namespace NS --name NAME\n' +
  '       cli.js cron list --nodes H:P,... [--namespace NS]\n' +
  '       cli.js policies put --nodes H:P,... --namespace NS --type T --policy JSON --reason R [--if-revision N]\n' +
  '       cli.js policies get --nodes H:P,... --namespace NS --type T\n' +
  '       cli.js policies delete --nodes H:P,... --namespace NS --type T --reason R [--if-revision N]\n' +
  '       cli.js policies list --nodes H:P,... [--namespace NS]\n' +
  '       cli.js graph submit --nodes H:P,... --file GRAPH.json\n' +
  '       cli.js graph get --nodes H:P,... --namespace NS --graph-id ID [--with-results]\n' +
  '       cli.js graph cancel --nodes H:P,... --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]\n' +
  '       cli.js executor --zk HOST:PORT[/chroot] --namespace NS --types a,b ' +
  '[--behavior ok|reject-once|fail-once|heartbeat|graph-results] [--host H] [--port P] [--max-in-flight N] [--instance-id ID] ' +
  '[--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]';

/** Why ctx.signal was aborted, for the "stopped" line: "cancelled: <reason>", "lost: <reason>", or the abort's message. */
function stopReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof TaskStoppedError) return `${reason.verdict}: ${reason.reason}`;
  return reason instanceof Error ? reason.message || reason.name : String(reason);
}

/** A non-negative integer of the payload, or `fallback` when absent. */
function payloadMs(ctx: TaskContext, field: string, fallback: number): number {
  const v = ctx.payload[field];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new NonRetryableError(`heartbeat: payload.${field} must be a non-negative number, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * The heartbeat behaviour: "work" until payload.ms has passed, counted from the
 * done_ms of the previous attempt's last heartbeat, heartbeating {done_ms} every
 * payload.every_ms (default 100); stopped, print "stopped <task_id> <why>" and end.
 */
async function heartbeating(ctx: TaskContext, print: (line: string) => void): Promise<void> {
  const ms = payloadMs(ctx, 'ms', 0);
  const every = payloadMs(ctx, 'every_ms', 100) || 100;
  const last = ctx.lastHeartbeatDetails as { done_ms?: unknown } | undefined;
  const from = typeof last?.done_ms === 'number' ? last.done_ms : 0;
  const start = performance.now();
  const done = (): number => from + Math.floor(performance.now() - start);
  try {
    while (done() < ms) {
      await sleep(every, undefined, { signal: ctx.signal });
      ctx.heartbeat({ done_ms: Math.min(done(), ms) });
    }
  } catch (e) {
    if (!ctx.signal.aborted) throw e;
    print(`stopped ${ctx.taskId} ${stopReason(ctx.signal)}`);
    throw ctx.signal.reason;
  }
}

/** The handler of --behavior; `print` writes one stdout line (heartbeat's "stopped" line, graph-results' runs). */
export function handlerFor(behavior: string, print: (line: string) => void = () => undefined): Handler {
  switch (behavior) {
    case 'ok':
      return async () => undefined;
    case 'reject-once':
      return (ctx) => (ctx.attempt === 1 ? Promise.reject(new Error('rejected on attempt 1 (reject-once)')) : Promise.resolve());
    case 'fail-once':
      return (ctx) => {
        if (ctx.attempt === 1) throw new Error('thrown on attempt 1 (fail-once)');
      };
    case 'heartbeat':
      return (ctx) => heartbeating(ctx, print);
    case 'graph-results':
      return graphResultsHandler(print);
    default:
      throw new RangeError(`--behavior: must be ok, reject-once, fail-once, heartbeat or graph-results, got ${JSON.stringify(behavior)}`);
  }
}

/** The client options of TASKRING_TOKEN and TASKRING_CA_FILE/CLIENT_CERT_FILE/CLIENT_KEY_FILE. */
export function securityFromEnv(env: NodeJS.ProcessEnv): Pick<ClientOptions, 'token' | 'credentials'> {
  const out: Pick<ClientOptions, 'token' | 'credentials'> = {};
  if (env.TASKRING_TOKEN) out.token = env.TASKRING_TOKEN;
  if (env.TASKRING_CA_FILE) {
    out.credentials = tlsCredentials(env.TASKRING_CA_FILE, env.TASKRING_CLIENT_CERT_FILE || undefined,
      env.TASKRING_CLIENT_KEY_FILE || undefined);
  }
  return out;
}

async function clientMode(mode: 'submit' | 'get', rest: string[]): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      nodes: { type: 'string' },
      namespace: { type: 'string' },
      type: { type: 'string' },
      payload: { type: 'string', default: '{}' },
      'task-id': { type: 'string' },
      'delay-ms': { type: 'string' },
      'rpc-timeout-ms': { type: 'string', default: '10000' },
    },
    strict: true,
  });
  const taskId = values['task-id'];
  if (!values.nodes || (mode === 'submit' ? !values.namespace || !values.type : !taskId)) {
    console.error(USAGE);
    return 2;
  }
  const client = new Client({ nodes: values.nodes, rpcTimeoutMs: Number(values['rpc-timeout-ms']), ...securityFromEnv(process.env) });
  try {
    if (mode === 'submit') {
      const r = await client.submit({
        namespace: values.namespace as string,
        taskType: values.type as string,
        payload: JSON.parse(values.payload ?? '{}') as Record<string, unknown>,
        ...(taskId ? { taskId } : {}),
        ...(values['delay-ms'] ? { delayMs: Number(values['delay-ms']) } : {}),
      });
      process.stdout.write(`${r.taskId}\n`);
    } else {
      const t = await client.get(taskId as string);
      process.stdout.write(`${JSON.stringify({ task_id: t.taskId, namespace: t.namespace, task_type: t.taskType,
        state: t.state, attempts: t.attempts, last_error: t.lastError, waiting: t.waiting })}\n`);
    }
    return 0;
  } finally {
    client.close();
  }
}

const iso = (at: Date | null): string | null => (at === null ? null : at.toISOString());

/**
 * The JSON object `cron` prints for a rule: the wire's snake_case names, the
 * payload as an object, unset optionals and empty times as null, the last
 * fire's state in lowercase (null when there is no last fire).
 */
export function cronRuleJson(info: CronRuleInfo): Record<string, unknown> {
  const s = info.spec;
  return {
    namespace: s.namespace,
    name: s.name,
    task_type: s.taskType,
    schedule: s.schedule,
    time_zone: s.timeZone,
    payload: s.payload,
    on_repeated_hour: s.onRepeatedHour,
    on_skipped_hour: s.onSkippedHour,
    catch_up: s.catchUp,
    catch_up_limit: s.catchUpLimit,
    overlap: s.overlap,
    owner_team: s.ownerTeam,
    description: s.description,
    timeout_ms: s.timeoutMs,
    max_retries: s.maxRetries,
    paused: info.paused,
    next_fire_time: iso(info.nextFireTime),
    last_fire_time: iso(info.lastFireTime),
    last_fire_task_id: info.lastFireTaskId,
    last_fire_state: info.lastFireState,
    created_at: iso(info.createdAt),
    updated_at: iso(info.updatedAt),
  };
}

const CRON_ACTIONS = ['create', 'update', 'get', 'pause', 'resume', 'delete', 'list'] as const;
type CronAction = (typeof CRON_ACTIONS)[number];

const CONNECT_OPTIONS = {
  nodes: { type: 'string' },
  'rpc-timeout-ms': { type: 'string', default: '10000' },
} as const satisfies ParseArgsConfig['options'];
const LIST_OPTIONS = { ...CONNECT_OPTIONS, namespace: { type: 'string' } } as const;
const REF_OPTIONS = { ...LIST_OPTIONS, name: { type: 'string' } } as const;
const PUT_OPTIONS = {
  ...REF_OPTIONS,
  type: { type: 'string' },
  schedule: { type: 'string' },
  zone: { type: 'string', default: '' },
  payload: { type: 'string', default: '{}' },
  'owner-team': { type: 'string', default: '' },
  description: { type: 'string', default: '' },
  'catch-up': { type: 'string', default: '' },
  'catch-up-limit': { type: 'string' },
  overlap: { type: 'string', default: '' },
  'on-repeated-hour': { type: 'string', default: '' },
  'on-skipped-hour': { type: 'string', default: '' },
  'timeout-ms': { type: 'string' },
  'max-retries': { type: 'string' },
} as const;

/** The spec of `cron create|update`: every field from its flag, so an update replaces the whole rule. */
function cronSpecOf(values: Record<string, string | boolean | undefined>): CronRuleSpec {
  const str = (flag: string): string => String(values[flag] ?? '');
  if (!values.namespace || !values.name || !values.type || values.schedule === undefined) {
    throw new UsageError('create and update need --namespace, --name, --type and --schedule');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(str('payload'));
  } catch (e) {
    throw new UsageError(`--payload: not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  return {
    namespace: str('namespace'),
    name: str('name'),
    taskType: str('type'),
    schedule: str('schedule'),
    timeZone: str('zone'),
    payload: payload as Record<string, unknown>, // not an object: the SDK's ValidationError says so
    ownerTeam: str('owner-team'),
    description: str('description'),
    catchUp: str('catch-up'),
    catchUpLimit: intOption(values, 'catch-up-limit') ?? 0,
    overlap: str('overlap'),
    onRepeatedHour: str('on-repeated-hour'),
    onSkippedHour: str('on-skipped-hour'),
    timeoutMs: intOption(values, 'timeout-ms') ?? null,
    maxRetries: intOption(values, 'max-retries') ?? null,
  };
}

async function cronMode(rest: string[]): Promise<number> {
  const [action, ...args] = rest;
  if (!CRON_ACTIONS.includes(action as CronAction)) {
    console.error(USAGE);
    return 2;
  }
  const act = action as CronAction;
  let values: Record<string, string | boolean | undefined>;
  let spec: CronRuleSpec | undefined;
  try {
    const options: NonNullable<ParseArgsConfig['options']> =
      act === 'create' || act === 'update' ? PUT_OPTIONS : act === 'list' ? LIST_OPTIONS : REF_OPTIONS;
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as typeof values;
    if (!values.nodes) throw new UsageError('--nodes is required');
    if (act === 'create' || act === 'update') spec = cronSpecOf(values);
    else if (act !== 'list' && (!values.namespace || !values.name)) throw new UsageError('--namespace and --name are required');
    intOption(values, 'rpc-timeout-ms');
  } catch (e) {
    if (!(e instanceof UsageError) && !(e instanceof TypeError)) throw e; // parseArgs throws TypeErrors
    console.error(`cron ${act}: ${e.message}\n${USAGE}`);
    return 2;
  }
  const client = new Client({ nodes: String(values.nodes), rpcTimeoutMs: Number(values['rpc-timeout-ms']), ...securityFromEnv(process.env) });
  const namespace = String(values.namespace ?? '');
  const name = String(values.name ?? '');
  try {
    let rules: CronRuleInfo[];
    switch (act) {
      case 'create': rules = [await client.cron.create(spec as CronRuleSpec)]; break;
      case 'update': rules = [await client.cron.update(spec as CronRuleSpec)]; break;
      case 'list': rules = await client.cron.list(namespace); break;
      default: rules = [await client.cron[act](namespace, name)];
    }
    for (const rule of rules) process.stdout.write(`${JSON.stringify(cronRuleJson(rule))}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof TaskringError)) throw e;
    // An RpcError's message is "<STATUS_NAME>: <server's message>", e.g. "INVALID_ARGUMENT: rule.time_zone: ...".
    console.error(`cron ${act}: ${e.message}`);
    return 1;
  } finally {
    client.close();
  }
}

/**
 * The JSON object `policies` prints for a type policy (the contract of the
 * Go, Java and Node CLIs): exactly namespace, task_type, policy (an object),
 * source, revision (a number), updated_by, updated_at (RFC 3339 UTC, null when
 * none), file_policy (an object, null when the file has no entry).
 */
export function typePolicyJson(p: TypePolicy): Record<string, unknown> {
  return {
    namespace: p.namespace,
    task_type: p.taskType,
    policy: p.policy,
    source: p.source,
    revision: p.revision,
    updated_by: p.updatedBy,
    updated_at: iso(p.updatedAt),
    file_policy: p.filePolicy,
  };
}

const POLICY_ACTIONS = ['put', 'get', 'delete', 'list'] as const;
type PolicyAction = (typeof POLICY_ACTIONS)[number];

const POLICY_REF_OPTIONS = { ...LIST_OPTIONS, type: { type: 'string' } } as const;
const POLICY_DELETE_OPTIONS = { ...POLICY_REF_OPTIONS, reason: { type: 'string' }, 'if-revision': { type: 'string' } } as const;
const POLICY_PUT_OPTIONS = { ...POLICY_DELETE_OPTIONS, policy: { type: 'string' } } as const;

/** What `policies <action>` calls: the parsed command line, checked (UsageError otherwise). */
export interface PolicyArgs {
  action: PolicyAction;
  nodes: string;
  rpcTimeoutMs: number;
  namespace: string;
  taskType: string;
  /** put: the parsed --policy (any JSON value: one that is not an object is the SDK's to refuse). */
  policy: unknown;
  reason: string;
  ifRevision: number | undefined;
}

/**
 * Parse `policies`' arguments (after the word `policies`). A missing flag, an
 * option of another action, --policy that is not JSON or --if-revision that
 * is not an integer throw UsageError (or parseArgs' TypeError): exit 2,
 * nothing sent. `--reason ''` is passed on, for the server to refuse naming `reason`.
 */
export function policyArgs(rest: string[]): PolicyArgs {
  const [action, ...args] = rest;
  if (!POLICY_ACTIONS.includes(action as PolicyAction)) {
    throw new UsageError(`the action must be one of ${POLICY_ACTIONS.join(', ')}, got ${JSON.stringify(action ?? '')}`);
  }
  const act = action as PolicyAction;
  const options: NonNullable<ParseArgsConfig['options']> = act === 'put' ? POLICY_PUT_OPTIONS
    : act === 'delete' ? POLICY_DELETE_OPTIONS : act === 'get' ? POLICY_REF_OPTIONS : LIST_OPTIONS;
  const values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as
    Record<string, string | boolean | undefined>;
  if (!values.nodes) throw new UsageError('--nodes is required');
  if (act !== 'list' && (!values.namespace || !values.type)) throw new UsageError('--namespace and --type are required');
  if ((act === 'put' || act === 'delete') && values.reason === undefined) throw new UsageError('--reason is required');
  let policy: unknown;
  if (act === 'put') {
    if (values.policy === undefined) throw new UsageError('--policy is required');
    try {
      policy = JSON.parse(String(values.policy));
    } catch (e) {
      throw new UsageError(`--policy: not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const ifRevision = intOption(values, 'if-revision');
  return {
    action: act,
    nodes: String(values.nodes),
    rpcTimeoutMs: intOption(values, 'rpc-timeout-ms') ?? 10_000,
    namespace: String(values.namespace ?? ''),
    taskType: String(values.type ?? ''),
    policy,
    reason: String(values.reason ?? ''),
    ifRevision,
  };
}

async function policiesMode(rest: string[]): Promise<number> {
  let a: PolicyArgs;
  try {
    a = policyArgs(rest);
  } catch (e) {
    if (!(e instanceof UsageError) && !(e instanceof TypeError)) throw e; // parseArgs throws TypeErrors
    console.error(`policies${POLICY_ACTIONS.includes(rest[0] as PolicyAction) ? ` ${rest[0]}` : ''}: ${e.message}\n${USAGE}`);
    return 2;
  }
  const client = new Client({ nodes: a.nodes, rpcTimeoutMs: a.rpcTimeoutMs, ...securityFromEnv(process.env) });
  try {
    let policies: TypePolicy[];
    switch (a.action) {
      case 'put':
        // Not an object: the SDK's ValidationError naming policy_json, exit 1, nothing sent.
        policies = [await client.policies.put(a.namespace, a.taskType, a.policy as Record<string, unknown>, a.reason, a.ifRevision)];
        break;
      case 'delete': policies = [await client.policies.delete(a.namespace, a.taskType, a.reason, a.ifRevision)]; break;
      case 'get': policies = [await client.policies.get(a.namespace, a.taskType)]; break;
      default: policies = await client.policies.list(a.namespace);
    }
    for (const p of policies) process.stdout.write(`${JSON.stringify(typePolicyJson(p))}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof TaskringError)) throw e;
    // "<STATUS_NAME>: <server's message>", e.g. "INVALID_ARGUMENT: policy_json.concurrency.per_type: ...".
    console.error(`policies ${a.action}: ${e.message}`);
    return 1;
  } finally {
    client.close();
  }
}

async function graphMode(rest: string[]): Promise<number> {
  let a: GraphArgs;
  let spec: GraphSpec | undefined;
  try {
    a = graphArgs(rest);
    if (a.action === 'submit') spec = readGraphFile(a.file);
  } catch (e) {
    if (!(e instanceof UsageError) && !(e instanceof TypeError)) throw e; // parseArgs throws TypeErrors
    console.error(`graph${GRAPH_ACTIONS.includes(rest[0] as GraphAction) ? ` ${rest[0]}` : ''}: ${e.message}\n${USAGE}`);
    return 2;
  }
  const client = new Client({ nodes: a.nodes, rpcTimeoutMs: a.rpcTimeoutMs, ...securityFromEnv(process.env) });
  try {
    const out = spec !== undefined
      ? submittedGraphJson(await client.submitGraph(spec))
      : a.action === 'cancel'
        ? cancelledGraphJson(await client.cancelGraph(a.namespace, a.graphId, { mode: a.mode, reason: a.reason }))
        : graphInfoJson(await client.getGraph(a.namespace, a.graphId, { withResults: a.withResults }));
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof TaskringError)) throw e;
    // "<STATUS_NAME>: <server's message>", e.g. "INVALID_ARGUMENT: tasks[0].depends_on[0]: closes the cycle ...".
    console.error(`graph ${a.action}: ${e.message}`);
    return 1;
  } finally {
    client.close();
  }
}

const TLS_FLAGS: ExecutorTlsNames = { certFile: '--tls-cert', keyFile: '--tls-key', clientCaFile: '--tls-client-ca' };

/** What `executor` runs with: the Executor's options (handlers aside) and the --behavior. */
export interface ExecutorArgs {
  options: ExecutorOptions & { zk: string };
  types: string[];
  behavior: string;
}

/**
 * Parse `executor`'s arguments, taking each --tls-* flag not given from its
 * env var; the TLS files are read and checked here, so an error names the
 * flag or the env var the value came from. Throws UsageError (exit 2); an
 * unknown flag is parseArgs' TypeError (exit 1), as before.
 */
export function executorArgs(args: string[], env: NodeJS.ProcessEnv = process.env): ExecutorArgs {
  const { values } = parseArgs({
    args,
    options: {
      zk: { type: 'string' },
      namespace: { type: 'string' },
      types: { type: 'string' },
      behavior: { type: 'string', default: 'ok' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      'max-in-flight': { type: 'string', default: '64' },
      'instance-id': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-client-ca': { type: 'string' },
    },
    strict: true,
  });
  if (!values.zk || !values.namespace || !values.types) throw new UsageError(''); // the usage alone, as before
  // Each field from its flag, else its env var; errors name whichever the value came from.
  const given: Partial<Record<keyof ExecutorTlsNames, string>> = {};
  const names = { ...TLS_ENV_NAMES };
  for (const f of ['certFile', 'keyFile', 'clientCaFile'] as const) {
    const flag = values[TLS_FLAGS[f].slice(2) as 'tls-cert' | 'tls-key' | 'tls-client-ca'];
    const value = flag ?? env[TLS_ENV_NAMES[f]];
    if (flag !== undefined) names[f] = TLS_FLAGS[f];
    else if (value === undefined) names[f] = `${TLS_FLAGS[f]} (or ${TLS_ENV_NAMES[f]})`; // missing: name both ways to give it
    if (value !== undefined) given[f] = value;
  }
  let tls;
  try {
    tls = checkExecutorTlsFields(given, names);
    if (tls !== undefined) executorServerCredentials(tls, names);
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  return {
    options: {
      namespace: values.namespace,
      zk: values.zk,
      host: values.host ?? '127.0.0.1',
      port: Number(values.port),
      maxInFlight: Number(values['max-in-flight']),
      ...(values['instance-id'] ? { instanceId: values['instance-id'] } : {}),
      ...(tls === undefined ? {} : { tls }),
    },
    types: values.types.split(',').map((t) => t.trim()).filter(Boolean),
    behavior: values.behavior ?? 'ok',
  };
}

async function main(argv: string[]): Promise<number> {
  const [mode, ...rest] = argv;
  if (mode === 'submit' || mode === 'get') return clientMode(mode, rest);
  if (mode === 'cron') return cronMode(rest);
  if (mode === 'policies') return policiesMode(rest);
  if (mode === 'graph') return graphMode(rest);
  if (mode !== 'executor') {
    console.error(USAGE);
    return 2;
  }
  let parsed: ExecutorArgs;
  try {
    parsed = executorArgs(rest, process.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(e.message ? `executor: ${e.message}\n${USAGE}` : USAGE);
    return 2;
  }
  const print = (line: string): void => { process.stdout.write(`${line}\n`); };
  const handler = handlerFor(parsed.behavior, print);
  const executor = new Executor({
    ...parsed.options,
    onOutcome: (o) => print(`${o.task_id} ${o.attempt} ${String(o.kind).replace(/^OUTCOME_KIND_/, '')}`),
  });
  for (const type of parsed.types) executor.handle(type, handler);
  await executor.start();
  console.error(`ready ${executor.address} ${executor.registrationPath ?? '-'}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await executor.stop(10_000);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => { process.exitCode = code; },
    (e: unknown) => {
      console.error(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
      process.exitCode = 1;
    },
  );
}
