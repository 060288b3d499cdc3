/**
 * A handler's result in a graph (Python: ParentResult, result_json_of in
 * taskring/context.py; docs/graphs.md).
 *
 * A handler's return value (what its promise resolves to) is its result. It
 * is sent only for a delivery with `keep_result` (a task of a graph that
 * others depend on: `ctx.keepsResult`); otherwise it is ignored, as before,
 * and costs nothing. Sent, it must be JSON of at most MAX_RESULT_BYTES; else
 * the attempt fails NON-RETRYABLY with an error "result: ...": a retry would
 * return the same value again.
 *
 * The tasks after it find it in `ctx.parentResults`, with how each parent ended.
 */
import { ProtocolError, TaskringError } from './errors';
import type { ParentResult__Output } from './gen/taskring/v1/ParentResult';

/** The most a handler's result may take as JSON, in UTF-8 bytes (the server refuses more). */
export const MAX_RESULT_BYTES = 65_536;

/**
 * `{ json }` of a handler's return value, or `{ error }` saying why it cannot
 * be kept. undefined and null are no result (""). Beside what JSON.stringify
 * refuses (a cycle, a BigInt, a bare function), NaN/Infinity, Map and Set are
 * refused too: JSON.stringify would silently make them null and {}.
 */
export function resultJsonOf(value: unknown): { json: string; error: string } {
  if (value === undefined || value === null) return { json: '', error: '' };
  let json: string | undefined;
  try {
    json = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new RangeError(`${v} is not valid JSON`);
      if (v instanceof Map || v instanceof Set) throw new TypeError(`a ${v.constructor.name}, which JSON would write as {}`);
      return v;
    });
  } catch (e) {
    // One line: the outcome's error is shown in lists (V8's cycle message spans several).
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ');
    return { json: '', error: `result: the handler's return value is not JSON (${why})` };
  }
  if (json === undefined) return { json: '', error: `result: the handler's return value is not JSON (a ${typeof value})` };
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_RESULT_BYTES) return { json: '', error: `result: ${bytes} bytes as JSON, more than ${MAX_RESULT_BYTES}` };
  return { json, error: '' };
}

/** How a task that this one depends on ended, and what its handler returned. */
export class ParentResult {
  readonly key: string;
  readonly taskId: string;
  /**
   * 'succeeded', 'failed', 'ignored' (failed under onFailure('ignore')), 'continued'
   * (failed an attempt under onFailure('continue')), 'skipped' or 'cancelled'.
   */
  readonly outcome: string;
  /** Its last error, for one that failed; "" otherwise. */
  readonly error: string;
  /** Its handler's return value as JSON; "" when it returned none, failed, or was not delivered (`truncated`). */
  readonly resultJson: string;
  /**
   * The parents' results came to more than 1 MiB and this one's was left out
   * of the delivery: read it with `client.getGraph(namespace, graphId, { withResults: true })`.
   */
  readonly truncated: boolean;
  #decoded: { value: unknown } | undefined;

  constructor(wire: ParentResult__Output, deliveryTruncated: boolean) {
    this.key = wire.key;
    this.taskId = wire.task_id;
    this.outcome = wire.outcome;
    this.error = wire.error;
    this.resultJson = wire.result_json;
    // Only a success has a result to leave out; the server says which were left out only as a whole.
    this.truncated = deliveryTruncated && !wire.result_json && wire.outcome === 'succeeded';
    Object.freeze(this);
  }

  /**
   * The value its handler returned, decoded (null when none). Throws when it
   * was not delivered (`truncated`), rather than pass for "returned nothing".
   */
  get result(): unknown {
    if (this.truncated) {
      throw new TaskringError(`the result of ${JSON.stringify(this.key)} was not delivered: the parents' results are over 1 MiB;`
        + ' read it with client.getGraph(namespace, graphId, { withResults: true })');
    }
    if (this.#decoded === undefined) {
      let value: unknown = null;
      if (this.resultJson) {
        try {
          value = JSON.parse(this.resultJson);
        } catch (e) {
          throw new ProtocolError(`the result of ${JSON.stringify(this.key)} is not JSON: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      this.#decoded = { value };
    }
    return this.#decoded.value;
  }

  /** For JSON.stringify and console.log: the fields and the decoded result (when delivered). */
  toJSON(): Record<string, unknown> {
    return { key: this.key, taskId: this.taskId, outcome: this.outcome, error: this.error,
      result: this.truncated ? undefined : this.result, truncated: this.truncated };
  }
}

/** The parents of a delivery by key, in the server's (key) order. */
export function parentResultsFromWire(wire: readonly ParentResult__Output[], truncated: boolean): Map<string, ParentResult> {
  return new Map(wire.map((p) => [p.key, new ParentResult(p, truncated)]));
}
