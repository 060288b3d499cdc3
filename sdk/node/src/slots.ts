/**
 * The cap on handlers running at once (maxInFlight), shared by every Execute
 * call of an executor. A waiter gives up at its delivery's deadline, so a
 * delivery that waits for a slot past its deadline is answered without running
 * (Python: the asyncio.Semaphore of _runner.py under asyncio.timeout_at).
 * Slots are handed over in arrival order.
 */
import { performance } from 'node:perf_hooks';

interface Waiter {
  grant(): void;
}

export class Slots {
  private free: number;
  private readonly waiters: Waiter[] = [];

  constructor(readonly capacity: number) {
    this.free = capacity;
  }

  /** Slots taken now. */
  get taken(): number {
    return this.capacity - this.free;
  }

  /** Deliveries waiting for a slot now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * Take a slot: true at once when one is free, else when one frees up before
   * `deadline` (performance.now() ms); false at the deadline or when `signal` aborts.
   */
  acquire(deadline: number, signal?: AbortSignal): Promise<boolean> {
    if (this.free > 0 && this.waiters.length === 0) {
      this.free -= 1;
      return Promise.resolve(true);
    }
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (got: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(got);
      };
      const waiter: Waiter = { grant: () => done(true) };
      const leave = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        done(false);
      };
      const onAbort = (): void => leave();
      const timer = setTimeout(leave, Math.max(0, deadline - performance.now()));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next !== undefined) next.grant(); // the slot passes straight to the next waiter
    else this.free += 1;
  }
}
