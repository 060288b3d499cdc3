package io.taskring.examples;

import io.taskring.client.SubmitResult;
import io.taskring.client.TaskSpec;
import io.taskring.client.TaskringClient;
import io.taskring.errors.NonRetryableException;
import io.taskring.executor.TaskringExecutor;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The order-cancel task of the design: when an order is placed, submit cancel_order due in
 * 30 minutes; when it runs, the handler cancels the order unless it was paid meanwhile.
 *
 * <pre>
 *   java -cp "$(cat target/classpath.txt):target/classes:target/test-classes" \
 *       io.taskring.examples.OrderCancel 127.0.0.1:7070 127.0.0.1:22181/taskring
 * </pre>
 */
public final class OrderCancel {
    /** Stands in for the shop's order service. */
    static final class Orders {
        private final Set<Long> paid = ConcurrentHashMap.newKeySet();
        private final Set<Long> cancelled = ConcurrentHashMap.newKeySet();

        boolean exists(long order) { return order > 0; }
        boolean isPaid(long order) { return paid.contains(order); }
        void cancel(long order) { cancelled.add(order); }
    }

    public static void main(String[] args) throws Exception {
        String nodes = args.length > 0 ? args[0] : "127.0.0.1:7070";
        String zookeeper = args.length > 1 ? args[1] : "127.0.0.1:22181/taskring";
        Orders orders = new Orders();

        // The executor: runs cancel_order for namespace "shop", announced in ZooKeeper.
        TaskringExecutor executor = TaskringExecutor.builder()
                .namespace("shop")
                .zookeeper(zookeeper)
                .listen("127.0.0.1", 0)
                .maxInFlight(16)
                .handler("cancel_order", ctx -> {
                    long order = ctx.payload().get("order").asLong();
                    if (!orders.exists(order)) {
                        throw new NonRetryableException("order " + order + " does not exist"); // dead-letter now
                    }
                    if (orders.isPaid(order)) {
                        return; // paid in time: nothing to do
                    }
                    orders.cancel(order); // idempotent: a second delivery cancels nothing new
                })
                .build();
        executor.start();

        // The client: submit cancel_order for order 42, due in 30 minutes. The task id makes
        // the submit safe to retry (a retry is reported as a duplicate, not a second task).
        try (TaskringClient client = TaskringClient.builder().nodes(nodes).build()) {
            SubmitResult r = client.submit(TaskSpec.builder("shop", "cancel_order")
                    .taskId("cancel-order-42")
                    .payload(Map.of("order", 42))
                    .delay(Duration.ofMinutes(30))
                    .timeout(Duration.ofSeconds(30))
                    .maxRetries(5)
                    .build()).get();
            System.out.println(r.taskId() + " " + r.state() + " due at " + r.dueAt() + (r.duplicate() ? " (duplicate)" : ""));
        }

        Runtime.getRuntime().addShutdownHook(new Thread(() -> executor.stop(Duration.ofSeconds(10))));
        Thread.currentThread().join(); // serve until SIGTERM/SIGINT
    }
}
