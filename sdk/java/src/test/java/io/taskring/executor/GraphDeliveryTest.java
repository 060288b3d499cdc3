package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/** Deliveries of tasks of graphs over real gRPC on loopback: results kept or not, parents' results handed in. */
class GraphDeliveryTest {
    private final List<TaskringExecutor> executors = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        channels.forEach(ManagedChannel::shutdownNow);
        executors.forEach(e -> e.stop(Duration.ZERO));
    }

    private Map<String, Taskring.Outcome> execute(TaskringExecutor.Builder b, Taskring.Delivery... ds) {
        TaskringExecutor e = b.build();
        executors.add(e);
        e.start();
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
        channels.add(c);
        Taskring.ExecuteResponse r = ExecutorServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS)
                .execute(Taskring.ExecuteRequest.newBuilder().addAllDeliveries(List.of(ds)).setDispatcherNode("test").build());
        Map<String, Taskring.Outcome> out = new HashMap<>();
        r.getOutcomesList().forEach(o -> out.put(o.getTaskId(), o));
        return out;
    }

    private static Taskring.Delivery.Builder delivery(String id, String type, boolean keepResult) {
        return Taskring.Delivery.newBuilder().setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop")
                .setTaskType(type).setPayloadJson("{}")).setAttempt(1).setEpoch(3).setTimeoutMs(5000)
                .setKeepResult(keepResult);
    }

    private static Taskring.ParentResult parent(String key, String outcome, String resultJson, String error) {
        return Taskring.ParentResult.newBuilder().setKey(key).setTaskId("id-" + key).setOutcome(outcome)
                .setResultJson(resultJson).setError(error).build();
    }

    @Test
    void aKeptResultIsSentOnlyWhenTheDeliveryKeepsIt() {
        Map<String, Taskring.Outcome> o = execute(TaskringExecutor.builder().namespace("shop")
                        .handler("charge", ctx -> ctx.setResult(Map.of("charged", 7)))
                        .handler("unjson", ctx -> ctx.setResult(new Object()))
                        .handler("huge", ctx -> ctx.setResult("x".repeat(70_000)))
                        .handler("nothing", ctx -> { })
                        .asyncHandler("async", ctx -> {
                            ctx.setResult(List.of(1, 2));
                            return CompletableFuture.completedFuture(null);
                        }),
                delivery("kept", "charge", true).build(), delivery("not-kept", "charge", false).build(),
                delivery("unjson-kept", "unjson", true).build(), delivery("unjson-not-kept", "unjson", false).build(),
                delivery("huge", "huge", true).build(), delivery("nothing", "nothing", true).build(),
                delivery("async", "async", true).build());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("kept").getKind());
        assertEquals("{\"charged\":7}", o.get("kept").getResultJson());
        assertEquals("", o.get("not-kept").getResultJson(), "no dependents: nothing sent");
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("unjson-kept").getKind());
        assertTrue(o.get("unjson-kept").getError().startsWith("result: "), o.get("unjson-kept").getError());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("unjson-not-kept").getKind(), "not kept: not even encoded");
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("huge").getKind());
        assertEquals("result: 70002 bytes as JSON, more than 65536", o.get("huge").getError());
        assertEquals("", o.get("huge").getResultJson());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("nothing").getKind());
        assertEquals("", o.get("nothing").getResultJson());
        assertEquals("[1,2]", o.get("async").getResultJson());
    }

    @Test
    void aFailedHandlersResultIsNotSent() {
        Map<String, Taskring.Outcome> o = execute(TaskringExecutor.builder().namespace("shop").handler("t", ctx -> {
            ctx.setResult(Map.of("half", true));
            throw new IllegalStateException("db down");
        }), delivery("1", "t", true).build());
        assertEquals(OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, o.get("1").getKind());
        assertEquals("", o.get("1").getResultJson());
    }

    @Test
    void theParentsResultsAreHandedInByKey() {
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        AtomicReference<TaskContext> plain = new AtomicReference<>();
        execute(TaskringExecutor.builder().namespace("shop").handler("close", seen::set).handler("plain", plain::set),
                delivery("close", "close", false)
                        .addParentResults(parent("ship", "succeeded", "{\"tracking\":\"Z-1\"}", ""))
                        .addParentResults(parent("email", "ignored", "", "NonRetryableException: no such address"))
                        .addParentResults(parent("audit", "succeeded", "null", ""))
                        .build(),
                delivery("plain", "plain", false).build());
        TaskContext ctx = seen.get();
        assertFalse(ctx.keepsResult());
        assertFalse(ctx.parentResultsTruncated());
        Map<String, ParentResult> parents = ctx.parentResults();
        assertEquals(List.of("ship", "email", "audit"), List.copyOf(parents.keySet()));
        ParentResult ship = parents.get("ship");
        assertEquals(new ParentResult("ship", "id-ship", "succeeded", "", "{\"tracking\":\"Z-1\"}", false), ship);
        assertEquals("Z-1", ship.result().get("tracking").asText());
        assertEquals(Map.of("tracking", "Z-1"), ship.resultAs(Map.class));
        ParentResult email = parents.get("email");
        assertEquals("ignored", email.outcome());
        assertEquals("NonRetryableException: no such address", email.error());
        assertNull(email.result(), "none kept: null");
        assertTrue(parents.get("audit").result().isNull(), "a kept JSON null is a value, not 'none'");
        assertTrue(plain.get().parentResults().isEmpty(), "a task of no graph has no parents");
        assertFalse(plain.get().keepsResult());
    }

    @Test
    void aResultLeftOutOfATruncatedDeliverySaysSoInsteadOfReadingAsNone() {
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        execute(TaskringExecutor.builder().namespace("shop").handler("t", seen::set),
                delivery("1", "t", true).setParentResultsTruncated(true)
                        .addParentResults(parent("big", "succeeded", "{\"rows\":1}", ""))
                        .addParentResults(parent("left-out", "succeeded", "", ""))
                        .addParentResults(parent("failed", "failed", "", "boom"))
                        .build());
        TaskContext ctx = seen.get();
        assertTrue(ctx.keepsResult());
        assertTrue(ctx.parentResultsTruncated());
        Map<String, ParentResult> parents = ctx.parentResults();
        assertFalse(parents.get("big").truncated());
        assertEquals(1, parents.get("big").result().get("rows").asInt());
        assertTrue(parents.get("left-out").truncated());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> parents.get("left-out").result());
        assertTrue(e.getMessage().contains("getGraph"), e.getMessage());
        assertFalse(parents.get("failed").truncated(), "a failed parent had no result to leave out");
        assertNull(parents.get("failed").result());
    }
}
