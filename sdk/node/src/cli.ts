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
 */
import { parseArgs } from 'node:util';
import { Executor } from './executor';
import type { Handler } from './runner';

const USAGE = 'usage: cli.js executor --zk HOST:PORT[/chroot] --namespace NS --types a,b ' +
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

async function main(argv: string[]): Promise<number> {
  const [mode, ...rest] = argv;
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

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (e: unknown) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exitCode = 1;
  },
);
