/**
 * Heartbeats of running attempts, on the Work stream they came by.
 *
 * A delivery with `heartbeat_timeout_ms` > 0 is alive only while its heartbeats
 * reach the dispatcher. They go up the stream inside ExecuteResponse.heartbeats
 * and each gets an answer down it, in ExecuteRequest.heartbeat_answers, matched
 * to the attempt by (task_id, attempt). One `HeartbeatStream` per Work stream
 * holds what that needs: the stream's sequence counter and the attempts that
 * have sent a heartbeat and are still running, each with the AbortController
 * of its handler, which a CANCEL or LOST answer aborts with a
 * `TaskStoppedError` (runner.ts then answers the attempt STOPPED).
 *
 * Only attempts that heartbeat are in the table: a delivery without a
 * heartbeat timeout whose handler never calls heartbeat() costs nothing here.
 */
import { TaskStoppedError, ValidationError } from './errors';
import type { Heartbeat } from './gen/taskring/v1/Heartbeat';
import type { HeartbeatAnswer__Output } from './gen/taskring/v1/HeartbeatAnswer';
import type { Logger } from './log';

/** The dispatcher refuses larger details (HEARTBEAT_VERDICT_INVALID); refuse them before sending. */
export const MAX_DETAILS_BYTES = 65_536;

/**
 * The wire text of a heartbeat's details: "" for none (the dispatcher keeps the
 * last ones), else their JSON. Throws `ValidationError` naming `details` for what
 * JSON cannot carry or what is over MAX_DETAILS_BYTES in UTF-8.
 */
export function encodeDetails(details: unknown): string {
  if (details === undefined) return '';
  let json: string | undefined;
  try {
    json = JSON.stringify(details);
  } catch (e) { // a cycle, a BigInt, a toJSON that throws
    throw new ValidationError('details', `not serializable to JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (json === undefined) throw new ValidationError('details', `not serializable to JSON: a ${typeof details}`);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_DETAILS_BYTES) {
    throw new ValidationError('details', `${bytes} bytes of JSON, over the limit of ${MAX_DETAILS_BYTES}`);
  }
  return json;
}

/** The last details of an earlier attempt, decoded; undefined when there are none. */
export function decodeDetails(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    // The dispatcher stores only details it parsed; a resume hint is never worth failing the task over.
    return undefined;
  }
}

/** The heartbeat side of one Work stream. */
export class HeartbeatStream {
  private sequence = 0;
  /** Running attempts that have heartbeaten, by `key()`: their handler's controller. */
  private readonly attempts = new Map<string, AbortController>();

  /**
   * @param send queues a heartbeat on the stream (written with the next outcomes, or alone)
   * @param log where INVALID answers are reported
   */
  constructor(
    private readonly send: (heartbeat: Heartbeat) => void,
    private readonly log: Logger,
  ) {}

  /** Send a heartbeat of this attempt; from now on its answers reach `controller`. */
  beat(taskId: string, attempt: number, controller: AbortController, detailsJson: string): void {
    this.attempts.set(key(taskId, attempt), controller);
    this.sequence += 1; // a double counts exactly far past any stream's lifetime of heartbeats
    this.send({ task_id: taskId, attempt, details_json: detailsJson, sequence: this.sequence });
  }

  /** The attempt has been answered: later answers for it are ignored. */
  release(taskId: string, attempt: number, controller: AbortController): void {
    const k = key(taskId, attempt);
    // A duplicate delivery of the same attempt may have taken the entry over; leave it to that one.
    if (this.attempts.get(k) === controller) this.attempts.delete(k);
  }

  /** Act on one answer from the dispatcher. */
  answer(a: HeartbeatAnswer__Output): void {
    const controller = this.attempts.get(key(a.task_id, a.attempt));
    if (controller === undefined) return; // that attempt is no longer running here
    switch (a.verdict) {
      case 'HEARTBEAT_VERDICT_CANCEL':
        controller.abort(new TaskStoppedError('cancelled', a.reason));
        break;
      case 'HEARTBEAT_VERDICT_LOST':
        controller.abort(new TaskStoppedError('lost', a.reason));
        break;
      case 'HEARTBEAT_VERDICT_INVALID': // nothing recorded, the lease not extended: the handler goes on
        this.log.warn(`heartbeat ${a.sequence} of task ${a.task_id} attempt ${a.attempt} refused: ${a.reason}`);
        break;
      default: // CONTINUE: recorded; UNSPECIFIED (a newer dispatcher's verdict): nothing to act on
        break;
    }
  }
}

/** Task ids are [A-Za-z0-9._:-] (the server's syntax): no newline, so two pairs never share a key. */
function key(taskId: string, attempt: number): string {
  return `${taskId}\n${attempt}`;
}
