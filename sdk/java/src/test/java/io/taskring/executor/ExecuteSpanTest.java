package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.testing.junit5.OpenTelemetryExtension;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/** A traced task's handler runs in a child span of the submitter's, as in the Python and Go SDKs. */
class ExecuteSpanTest {
    /** The global OpenTelemetry, with an SDK that keeps every ended span in memory. */
    @RegisterExtension
    static final OpenTelemetryExtension otel = OpenTelemetryExtension.create();

    /** The span context each handler saw as current, by task id. */
    private final Map<String, SpanContext> seen = new ConcurrentHashMap<>();
    private TaskringExecutor executor;
    private ManagedChannel channel;
    private ExecutorServiceGrpc.ExecutorServiceBlockingStub stub;

    @BeforeEach
    void start() {
        executor = TaskringExecutor.builder().namespace("shop")
                .handler("ok", ctx -> seen.put(ctx.taskId(), Span.current().getSpanContext()))
                .handler("boom", ctx -> { throw new IllegalStateException("upstream down"); })
                .asyncHandler("async_ok", ctx -> {
                    seen.put(ctx.taskId(), Span.current().getSpanContext());
                    return CompletableFuture.runAsync(() -> { });
                })
                .asyncHandler("async_boom", ctx -> CompletableFuture.supplyAsync(() -> {
                    throw new IllegalStateException("later");
                }).thenApply(v -> null))
                .build();
        executor.start();
        channel = Grpc.newChannelBuilder(executor.address(), InsecureChannelCredentials.create()).build();
        stub = ExecutorServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        executor.stop(Duration.ZERO);
    }

    private static Taskring.Delivery delivery(String id, String type, String traceId) {
        return Taskring.Delivery.newBuilder()
                .setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop").setTaskType(type)
                        .setPayloadJson("{}").setTraceId(traceId))
                .setAttempt(3).setEpoch(1).setTimeoutMs(5000).build();
    }

    private Map<String, OutcomeKind> execute(Taskring.Delivery... ds) {
        Taskring.ExecuteResponse r = stub.execute(Taskring.ExecuteRequest.newBuilder()
                .addAllDeliveries(List.of(ds)).setDispatcherNode("test").build());
        Map<String, OutcomeKind> out = new HashMap<>();
        r.getOutcomesList().forEach(o -> out.put(o.getTaskId(), o.getKind()));
        return out;
    }

    /** The ended execute spans by task id, once there are {@code n}: an async handler's may end after its outcome. */
    private static Map<String, SpanData> executeSpans(int n) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            Map<String, SpanData> out = new HashMap<>();
            for (SpanData s : otel.getSpans()) {
                if (s.getName().startsWith("taskring.execute ")) {
                    out.put(s.getAttributes().get(AttributeKey.stringKey("taskring.task_id")), s);
                }
            }
            if (out.size() >= n) {
                return out;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("ended execute spans " + out.keySet() + ", want " + n);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    @Test
    void aTracedTasksHandlerRunsInAChildSpanOfTheSubmitters() {
        Span request = otel.getOpenTelemetry().getTracer("test").spanBuilder("request").startSpan();
        request.end();
        SpanContext parent = request.getSpanContext();
        String traceparent = "00-" + parent.getTraceId() + "-" + parent.getSpanId() + "-01";

        Map<String, OutcomeKind> out = execute(delivery("1", "ok", traceparent), delivery("2", "boom", traceparent),
                delivery("3", "async_ok", traceparent), delivery("4", "async_boom", traceparent));
        assertEquals(Map.of("1", OutcomeKind.OUTCOME_KIND_SUCCEEDED, "2", OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE,
                "3", OutcomeKind.OUTCOME_KIND_SUCCEEDED, "4", OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE), out);

        Map<String, SpanData> spans = executeSpans(4);
        SpanData ok = spans.get("1");
        assertEquals("taskring.execute shop/ok", ok.getName());
        assertEquals(SpanKind.CONSUMER, ok.getKind());
        assertEquals(parent.getTraceId(), ok.getTraceId());
        assertEquals(parent.getSpanId(), ok.getParentSpanId());
        assertTrue(ok.getParentSpanContext().isRemote(), "the parent came from the task, not this process");
        assertEquals(Attributes.builder().put("taskring.task_id", "1").put("taskring.attempt", 3L)
                .put("taskring.namespace", "shop").put("taskring.task_type", "ok").build().asMap(),
                ok.getAttributes().asMap());
        assertEquals(StatusCode.UNSET, ok.getStatus().getStatusCode());
        assertEquals(ok.getSpanContext(), seen.get("1"), "the handler runs with the execute span current");

        SpanData boom = spans.get("2");
        assertEquals(parent.getSpanId(), boom.getParentSpanId());
        assertEquals(StatusCode.ERROR, boom.getStatus().getStatusCode());
        assertEquals("IllegalStateException: upstream down", boom.getStatus().getDescription());
        assertTrue(boom.getEvents().stream().anyMatch(e -> e.getName().equals("exception")), "exception recorded");

        SpanData asyncOk = spans.get("3");
        assertEquals("taskring.execute shop/async_ok", asyncOk.getName());
        assertEquals(parent.getSpanId(), asyncOk.getParentSpanId());
        assertEquals(StatusCode.UNSET, asyncOk.getStatus().getStatusCode());
        assertEquals(asyncOk.getSpanContext(), seen.get("3"));

        SpanData asyncBoom = spans.get("4");
        assertEquals(StatusCode.ERROR, asyncBoom.getStatus().getStatusCode());
        assertEquals("IllegalStateException: later", asyncBoom.getStatus().getDescription());
    }

    @Test
    void anUntracedTaskRunsWithoutASpan() {
        Map<String, OutcomeKind> out = execute(delivery("1", "ok", ""), delivery("3", "async_ok", "req-42"));
        assertEquals(Map.of("1", OutcomeKind.OUTCOME_KIND_SUCCEEDED, "3", OutcomeKind.OUTCOME_KIND_SUCCEEDED), out);
        assertFalse(seen.get("1").isValid());
        assertFalse(seen.get("3").isValid());
        assertEquals(List.of(), otel.getSpans());
    }

    @Test
    void isTraceparentChecksTheShapeOnly() {
        assertTrue(ExecuteSpan.isTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        assertFalse(ExecuteSpan.isTraceparent("req-42"));
        assertFalse(ExecuteSpan.isTraceparent(""));
        assertFalse(ExecuteSpan.isTraceparent(null));
        assertFalse(ExecuteSpan.isTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        assertFalse(ExecuteSpan.isTraceparent("00-" + "x".repeat(52)));
        assertFalse(ExecuteSpan.isTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0"));
    }
}
