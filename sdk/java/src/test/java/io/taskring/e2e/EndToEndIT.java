package io.taskring.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.taskring.TaskState;
import io.taskring.cli.Main;
import io.taskring.client.SubmitResult;
import io.taskring.client.TaskEvent;
import io.taskring.client.TaskInfo;
import io.taskring.client.TaskSpec;
import io.taskring.client.TaskringClient;
import io.taskring.errors.NonRetryableException;
import io.taskring.executor.TaskringExecutor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The Java client and executor against a real dispatcher: TASKRING_IT_NODES (host:port,...)
 * and TASKRING_IT_DISPATCHER_ZK, the ZooKeeper connect string (with chroot) that dispatcher
 * watches, where the executor registers. Writes real tasks in namespace java-e2e.
 */
@EnabledIfEnvironmentVariable(named = "TASKRING_IT_NODES", matches = ".+")
@EnabledIfEnvironmentVariable(named = "TASKRING_IT_DISPATCHER_ZK", matches = ".+")
class EndToEndIT {
    private static final String NS = "java-e2e";
    private static final Map<Long, String> cancelled = new ConcurrentHashMap<>();
    private static TaskringExecutor executor;
    private static TaskringClient client;

    @BeforeAll
    static void start() {
        executor = TaskringExecutor.builder()
                .namespace(NS)
                .zookeeper(System.getenv("TASKRING_IT_DISPATCHER_ZK"))
                .instanceId("java-e2e-" + ProcessHandle.current().pid())
                .maxInFlight(8)
                .handler("cancel_order", ctx -> cancelled.put(ctx.payload().get("order").asLong(), ctx.taskId()))
                .handler("never", ctx -> { throw new NonRetryableException("order " + ctx.payload().get("order") + " does not exist"); })
                .build();
        executor.start();
        client = TaskringClient.builder().nodes(System.getenv("TASKRING_IT_NODES")).build();
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (executor != null) {
            executor.stop(Duration.ofSeconds(5));
        }
    }

    private static TaskInfo waitForState(String taskId, TaskState want) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        TaskInfo info = client.blocking().get(taskId);
        while (info.state() != want && System.nanoTime() < end) {
            Thread.sleep(200);
            info = client.blocking().get(taskId);
        }
        assertEquals(want, info.state(), "history " + info.history());
        return info;
    }

    @Test
    void aSubmittedTaskRunsOnTheJavaExecutor() throws Exception {
        String id = "java-e2e-" + UUID.randomUUID();
        long order = System.nanoTime();
        SubmitResult r = client.submit(TaskSpec.builder(NS, "cancel_order").taskId(id)
                .payload(Map.of("order", order)).scheduleTime(Instant.now().plusMillis(500)).timeout(Duration.ofSeconds(10)).build()).get();
        assertEquals(id, r.taskId());
        TaskInfo info = waitForState(id, TaskState.SUCCEEDED);
        assertEquals(id, cancelled.get(order));
        List<TaskState> states = info.history().stream().map(TaskEvent::state).toList();
        assertTrue(states.contains(TaskState.ACCEPTED) && states.get(states.size() - 1) == TaskState.SUCCEEDED, states.toString());

        // the same id again is a duplicate, not a second task
        assertTrue(client.blocking().submit(TaskSpec.builder(NS, "cancel_order").taskId(id).payload(Map.of("order", order)).build()).duplicate());

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, Main.run(new String[] {"get", "--nodes", System.getenv("TASKRING_IT_NODES"), "--task-id", id},
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("\"state\":\"succeeded\""), out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aNonRetryableFailureIsDeadLetteredWithTheError() throws Exception {
        String id = client.blocking().submit(TaskSpec.builder(NS, "never").payload(Map.of("order", 7)).maxRetries(3).build()).taskId();
        TaskInfo info = waitForState(id, TaskState.DEAD_LETTERED);
        assertTrue(info.lastError().contains("NonRetryableException: order 7 does not exist"), info.lastError());
        assertEquals(1, info.attempts());
    }

    @Test
    void stoppingPastTheGraceHandsTheTaskBackForARetry() throws Exception {
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        TaskringExecutor stopping = TaskringExecutor.builder()
                .namespace("java-e2e-stop")
                .zookeeper(System.getenv("TASKRING_IT_DISPATCHER_ZK"))
                .handler("slow", ctx -> {
                    running.countDown();
                    Thread.sleep(60_000);
                })
                .build();
        stopping.start();
        String id;
        try {
            id = client.blocking().submit(TaskSpec.builder("java-e2e-stop", "slow").timeout(Duration.ofSeconds(120))
                    .retryPolicy(io.taskring.RetryPolicy.tiered(Duration.ofMinutes(10))).build()).taskId();
            assertTrue(running.await(60, TimeUnit.SECONDS), "the handler never started");
        } finally {
            stopping.stop(Duration.ofMillis(300));
        }
        TaskInfo info = waitForState(id, TaskState.RETRY_WAIT);
        assertTrue(info.lastError().contains("executor stopped before the task finished"), info.lastError());
        client.blocking().cancel(id);
    }

    @Test
    void aDelayedTaskCanBeCancelled() throws Exception {
        String id = client.blocking().submit(TaskSpec.builder(NS, "cancel_order").payload(Map.of("order", 1))
                .delay(Duration.ofMinutes(10)).build()).taskId();
        assertEquals(TaskState.CANCELLED, client.blocking().cancel(id));
        assertEquals(TaskState.CANCELLED, client.blocking().get(id).state());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(1, Main.run(new String[] {"cancel", "--nodes", System.getenv("TASKRING_IT_NODES"), "--task-id", "no-such-" + id},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
    }
}
