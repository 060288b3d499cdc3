package io.taskring.vectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.util.JsonFormat;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.taskring.errors.GrpcErrors;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.RpcException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import taskring.v1.TaskServiceGrpc;
import taskring.v1.Taskring;

/**
 * The server cases of sdk/vectors/validation.json, sent as raw SubmitRequest.task to the
 * dispatcher at TASKRING_IT_NODES (one host:port); the SDK's InvalidArgumentException must
 * name the vector's error_field. Cases whose outcome depends on the clock (a scheduleTime:
 * the vectors assume the clock at their "now") are skipped unless TASKRING_IT_VECTOR_CLOCK=1
 * says the server under test runs at that time. OK cases write real tasks.
 */
@EnabledIfEnvironmentVariable(named = "TASKRING_IT_NODES", matches = ".+")
class ServerValidationIT {
    private static final JsonNode FILE = Vectors.load("validation.json");
    private static ManagedChannel channel;

    @BeforeAll
    static void connect() {
        channel = Grpc.newChannelBuilder(System.getenv("TASKRING_IT_NODES").split(",")[0], InsecureChannelCredentials.create()).build();
    }

    @AfterAll
    static void close() {
        channel.shutdownNow();
    }

    @TestFactory
    Stream<DynamicTest> serverCases() {
        boolean vectorClock = "1".equals(System.getenv("TASKRING_IT_VECTOR_CLOCK"));
        return Vectors.list(FILE.get("cases")).stream()
                .filter(c -> "server".equals(c.path("checked_by").asText()))
                .filter(c -> vectorClock || !c.get("task").has("scheduleTime"))
                .map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                    ObjectNode json = ((ObjectNode) c.get("task")).deepCopy();
                    if (json.has("payload_size_bytes")) {
                        int n = json.remove("payload_size_bytes").asInt();
                        json.put("payloadJson", "{\"x\":\"" + "a".repeat(n - 8) + "\"}");
                    }
                    Taskring.Task.Builder task = Taskring.Task.newBuilder();
                    JsonFormat.parser().merge(Vectors.JSON.writeValueAsString(json), task);
                    try {
                        TaskServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                                .submit(Taskring.SubmitRequest.newBuilder().setTask(task).build());
                        if (!c.path("ok").asBoolean(false)) {
                            fail("accepted, expected an error naming " + c.get("error_field").asText());
                        }
                    } catch (StatusRuntimeException e) {
                        RpcException mapped = GrpcErrors.fromThrowable(e);
                        if (c.path("ok").asBoolean(false)) {
                            fail("refused an ok case: " + mapped.getMessage());
                        }
                        InvalidArgumentException invalid = assertInstanceOf(InvalidArgumentException.class, mapped, mapped.getMessage());
                        assertEquals(c.get("error_field").asText(), invalid.field(), invalid.getMessage());
                    }
                }));
    }
}
