/**
 * What every command of cli.ts (and cli-graph.ts) parses its flags with: the
 * error of a bad command line, and integer options.
 */

/** Thrown for a bad command line: printed with the usage, exit status 2. */
export class UsageError extends Error {}

/** An integer option (as Python's argparse `type=int`); undefined when not given. */
export function intOption(values: Record<string, unknown>, flag: string): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^[+-]?\d+$/.test(raw.trim())) {
    throw new UsageError(`--${flag}: must be an integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw.trim());
}
