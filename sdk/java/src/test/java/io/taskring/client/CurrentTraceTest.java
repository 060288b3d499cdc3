package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.junit5.OpenTelemetryExtension;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import taskring.v1.Taskring;

/** A task submitted inside a span carries its traceparent, as in the Python and Go SDKs. */
class CurrentTraceTest {
    @RegisterExtension
    static final OpenTelemetryExtension otel = OpenTelemetryExtension.create();

    private final FakeTaskService node = new FakeTaskService("n0");
    private Server server;
    private ManagedChannel channel;
    private TaskringClient client;
    private Tracer tracer;

    @BeforeEach
    void start() throws Exception {
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name).directExecutor().addService(node).build().start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        client = TaskringClient.builder().channels(List.of(channel)).rpcTimeout(Duration.ofSeconds(5)).build();
        tracer = otel.getOpenTelemetry().getTracer("test");
    }

    @AfterEach
    void stop() {
        client.close();
        channel.shutdownNow();
        server.shutdownNow();
    }

    /** Written out by hand, flags as the SDK set them (sampled, and "random" since Trace Context level 2). */
    private static String traceparentOf(SpanContext sc) {
        return "00-" + sc.getTraceId() + "-" + sc.getSpanId() + "-" + sc.getTraceFlags().asHex();
    }

    private Taskring.Task lastSubmitted() {
        return ((Taskring.SubmitRequest) node.requests.get(node.requests.size() - 1)).getTask();
    }

    private List<Taskring.Task> lastBatch() {
        return ((Taskring.SubmitBatchRequest) node.requests.get(node.requests.size() - 1)).getTasksList();
    }

    @Test
    void aSubmitInsideASpanSendsItsTraceparent() {
        Span request = tracer.spanBuilder("request").startSpan();
        try (Scope ignored = request.makeCurrent()) {
            client.blocking().submit(TaskSpec.builder("shop", "t").build());
            client.blocking().submitBatch(List.of(TaskSpec.builder("shop", "t").taskId("1").build(),
                    TaskSpec.builder("shop", "t").taskId("2").traceId("req-42").build()));
        } finally {
            request.end();
        }
        String want = traceparentOf(request.getSpanContext());
        Taskring.Task single = ((Taskring.SubmitRequest) node.requests.get(0)).getTask();
        assertEquals(want, single.getTraceId());
        List<Taskring.Task> batch = lastBatch();
        assertEquals(2, batch.size());
        assertEquals(want, batch.get(0).getTraceId());
        assertEquals("req-42", batch.get(1).getTraceId(), "a caller's trace id in a batch is kept");
    }

    @Test
    void aTraceIdTheCallerSetIsKept() {
        Span request = tracer.spanBuilder("request").startSpan();
        try (Scope ignored = request.makeCurrent()) {
            client.blocking().submit(TaskSpec.builder("shop", "t").traceId("req-42").build());
        } finally {
            request.end();
        }
        assertEquals("req-42", lastSubmitted().getTraceId());
    }

    @Test
    void outsideASpanTheTraceIdStaysEmpty() {
        client.blocking().submit(TaskSpec.builder("shop", "t").build());
        assertEquals("", lastSubmitted().getTraceId());
        // A span that is not current is not the caller's: only the current context counts.
        Span elsewhere = tracer.spanBuilder("elsewhere").startSpan();
        try {
            client.blocking().submitBatch(List.of(TaskSpec.builder("shop", "t").taskId("1").build()));
        } finally {
            elsewhere.end();
        }
        assertEquals("", lastBatch().get(0).getTraceId());
    }
}
