package io.taskring.executor;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The max-in-flight cap: a semaphore whose waiters are futures, not blocked threads, so
 * a delivery waiting for a slot costs no thread (Python: one asyncio.Semaphore). A
 * waiter gives up at its deadline. A slot is held for as long as a handler really runs.
 */
final class Slots {
    private final int capacity;
    private final ScheduledExecutorService timer;
    private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    private int used;

    private static final class Waiter {
        final CompletableFuture<Boolean> granted = new CompletableFuture<>();
        ScheduledFuture<?> timeout;
    }

    Slots(int capacity, ScheduledExecutorService timer) {
        this.capacity = capacity;
        this.timer = timer;
    }

    /** Completes true with a slot, or false when {@code deadlineNanos} passes first. */
    CompletableFuture<Boolean> acquire(long deadlineNanos) {
        Waiter w = new Waiter();
        synchronized (this) {
            if (used < capacity) {
                used++;
                return CompletableFuture.completedFuture(true);
            }
            waiters.add(w);
            w.timeout = timer.schedule(() -> giveUp(w), deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }
        return w.granted;
    }

    private void giveUp(Waiter w) {
        boolean removed;
        synchronized (this) {
            removed = waiters.remove(w);
        }
        if (removed) {
            w.granted.complete(false); // outside the lock: callbacks run here
        }
    }

    /** Hands the slot to the oldest waiter, or frees it. */
    void release() {
        Waiter next;
        synchronized (this) {
            next = waiters.poll();
            if (next == null) {
                used--;
                return;
            }
        }
        next.timeout.cancel(false);
        next.granted.complete(true);
    }

    synchronized int inUse() {
        return used;
    }

    synchronized int waiting() {
        return waiters.size();
    }
}
