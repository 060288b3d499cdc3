#!/usr/bin/env node
/**
 * A small executor for cross-language tests:
 *
 *   node dist/cli.js executor --zk HOST:PORT/chroot --namespace NS --types a,b \
 *     [--behavior ok|reject-once|fail-once] [--host H] [--port P] [--max-in-flight N] [--instance-id ID]
 *
 * Registers in ZooKeeper, serves until SIGTERM/SIGINT, then stops gracefully.
 * Behaviours: ok succeeds; reject-once returns a rejected promise on attempt 1
 * and succeeds from attempt 2; fail-once throws synchronously on attempt 1 and
 * succeeds from attempt 2 (both are retryable failures). Prints one line per
 * delivery on stdout, "<task_id> <attempt> <OUTCOME>" (e.g. SUCCEEDED,
 * RETRYABLE_FAILURE), and "ready <address> <znode>" on stderr once registered.
 *
 *   node dist/cli.js submit --nodes host:port,... --namespace NS --type T [--payload JSON] [--task-id ID] [--delay-ms N]
 *     prints the task_id as the only stdout line.
 *   node dist/cli.js get --nodes host:port,... --task-id ID
 *     prints the task as one JSON line: task_id, namespace, task_type, state, attempts, last_error.
 *
 * submit and get read TASKRING_TOKEN (sent as `authorization: Bearer ...`) and, for TLS,
 * TASKRING_CA_FILE [TASKRING_CLIENT_CERT_FILE TASKRING_CLIENT_KEY_FILE] from the
 * environment, like the Python commands; never from arguments (which `ps` shows).
 * A refused call prints its error on stderr and exits 1.
 */
import { parseArgs } from 'node:util';
import { Client, tlsCredentials, type ClientOptions } from './client';
import { Executor } from './executor';
import type { Handler } from './runner';

const USAGE = 'usage: cli.js submit --nodes H:P,... --namespace NS --type T [--payload JSON] [--task-id ID] [--delay-ms N]\n' +
  '       cli.js get --nodes H:P,... --task-id ID\n' +
  '       cli.js executor --zk HOST:PORT[/chroot] --namespace NS --types a,b ' +
  '[--behavior ok|reject-once|fail-once] [--host H] [--port P] [--max-in-flight N] [--instance-id ID]';

function handlerFor(behavior: string): Handler {
  switch (behavior) {
    case 'ok':
      return async () => undefined;
    case 'reject-once':
      return (ctx) => (ctx.attempt === 1 ? Promise.reject(new Error('rejected on attempt 1 (reject-once)')) : Promise.resolve());
    case 'fail-once':
      return (ctx) => {
        if (ctx.attempt === 1) throw new Error('thrown on attempt 1 (fail-once)');
      };
    default:
      throw new RangeError(`--behavior: must be ok, reject-once or fail-once, got ${JSON.stringify(behavior)}`);
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
        state: t.state, attempts: t.attempts, last_error: t.lastError })}\n`);
    }
    return 0;
  } finally {
    client.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [mode, ...rest] = argv;
  if (mode === 'submit' || mode === 'get') return clientMode(mode, rest);
  if (mode !== 'executor') {
    console.error(USAGE);
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      zk: { type: 'string' },
      namespace: { type: 'string' },
      types: { type: 'string' },
      behavior: { type: 'string', default: 'ok' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      'max-in-flight': { type: 'string', default: '64' },
      'instance-id': { type: 'string' },
    },
    strict: true,
  });
  if (!values.zk || !values.namespace || !values.types) {
    console.error(USAGE);
    return 2;
  }
  const handler = handlerFor(values.behavior ?? 'ok');
  const executor = new Executor({
    namespace: values.namespace,
    zk: values.zk,
    host: values.host ?? '127.0.0.1',
    port: Number(values.port),
    maxInFlight: Number(values['max-in-flight']),
    ...(values['instance-id'] ? { instanceId: values['instance-id'] } : {}),
    onOutcome: (o) => {
      process.stdout.write(`${o.task_id} ${o.attempt} ${String(o.kind).replace(/^OUTCOME_KIND_/, '')}\n`);
    },
  });
  for (const type of values.types.split(',').map((t) => t.trim()).filter(Boolean)) executor.handle(type, handler);
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
