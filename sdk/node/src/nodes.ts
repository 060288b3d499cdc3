/**
 * The dispatcher nodes a Client talks to, taken in turn.
 *
 * Any node accepts any task, so calls are spread round-robin: each call goes
 * to the next node. When a node answers UNAVAILABLE (down, restarting, or its
 * store refused) an *idempotent* call is tried once more on the next node; a
 * non-idempotent one (a submit without a task id, which the server would give a
 * second id) is not, because it may have been applied. One retry, not a loop:
 * a cluster-wide outage should reach the caller quickly, not hide behind
 * retries.
 */
import { status as Status } from '@grpc/grpc-js';

export class NodeList<T> {
  private next = 0;

  constructor(private readonly nodes: readonly T[]) {
    if (nodes.length === 0) throw new RangeError('nodes: give at least one dispatcher address');
  }

  get size(): number {
    return this.nodes.length;
  }

  /** The node for the next call. */
  pick(): T {
    const node = this.nodes[this.next % this.nodes.length] as T;
    this.next = (this.next + 1) % this.nodes.length;
    return node;
  }

  /**
   * Run `call` on the next node; for an idempotent call that fails with
   * UNAVAILABLE, run it once more on the node after (when there is one).
   */
  async run<R>(idempotent: boolean, call: (node: T) => Promise<R>): Promise<R> {
    const first = this.pick();
    try {
      return await call(first);
    } catch (err) {
      if (!idempotent || this.nodes.length < 2 || !isUnavailable(err)) throw err;
      return await call(this.pick());
    }
  }

  all(): readonly T[] {
    return this.nodes;
  }
}

function isUnavailable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === Status.UNAVAILABLE;
}
