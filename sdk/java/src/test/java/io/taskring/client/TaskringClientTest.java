package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.taskring.TaskState;
import io.taskring.errors.AlreadyExistsException;
import io.taskring.errors.DeadlineExceededException;
import io.taskring.errors.FailedPreconditionException;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.NotFoundException;
import io.taskring.errors.PermissionDeniedException;
import io.taskring.errors.ResourceExhaustedException;
import io.taskring.errors.RpcException;
import io.taskring.errors.UnavailableException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** The client against three in-process fake dispatcher nodes. */
class TaskringClientTest {
    private final List<FakeTaskService> nodes = new ArrayList<>();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private TaskringClient client;

    @BeforeEach
    void start() throws Exception {
        for (int i = 0; i < 3; i++) {
            String name = InProcessServerBuilder.generateName();
            FakeTaskService node = new FakeTaskService("n" + i);
            nodes.add(node);
            servers.add(InProcessServerBuilder.forName(name).directExecutor().addService(node).build().start());
            channels.add(InProcessChannelBuilder.forName(name).directExecutor().build());
        }
        client = TaskringClient.builder().channels(channels).rpcTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop() {
        client.close();
        channels.forEach(ManagedChannel::shutdownNow);
        servers.forEach(Server::shutdownNow);
    }

    @Test
    void callsGoRoundRobinOverTheNodes() {
        for (int i = 0; i < 9; i++) {
            client.blocking().get("t" + i);
        }
        for (FakeTaskService n : nodes) {
            assertEquals(3, n.calls.get(), n.name);
        }
    }

    @Test
    void submitEncodesTheEnvelopeAndDecodesTheReceipt() {
        SubmitResult r = client.blocking().submit(TaskSpec.builder("shop", "cancel_order")
                .payload(Map.of("order", 42))
                .scheduleTime(OffsetDateTime.of(2030, 1, 1, 8, 0, 0, 0, ZoneOffset.ofHours(8)))
                .build());
        assertEquals("srv-n0", r.taskId());
        assertEquals(TaskState.ACCEPTED, r.state());
        assertEquals(7, r.slot());
        assertEquals(OffsetDateTime.parse("2030-01-02T03:04:05.678Z"), r.dueAt());
        Taskring.Task sent = ((Taskring.SubmitRequest) nodes.get(0).requests.get(0)).getTask();
        assertEquals("{\"order\":42}", sent.getPayloadJson());
        assertEquals("2030-01-01T08:00:00+08:00", sent.getScheduleTime());
        assertEquals(Taskring.Priority.PRIORITY_NORMAL, sent.getPriority());
    }

    @Test
    void delayIsRoundedUpToWholeMilliseconds() {
        client.blocking().submit(TaskSpec.builder("shop", "x").delay(Duration.ofNanos(1_500_001)).build());
        assertEquals(2, ((Taskring.SubmitRequest) nodes.get(0).requests.get(0)).getTask().getDelayMs());
    }

    @Test
    void getReturnsStateAndHistory() {
        TaskInfo info = client.blocking().get("abc");
        assertEquals(TaskState.SUCCEEDED, info.state());
        assertEquals(42, info.payload().get("order").asInt());
        assertEquals("", info.lastError());
        assertEquals("concurrency limit per_type (at most 20 running)", info.waiting());
        assertEquals(List.of(TaskState.ACCEPTED, TaskState.SUCCEEDED), info.history().stream().map(TaskEvent::state).toList());
    }

    @Test
    void submitBatchKeepsOrderAndEmptyBatchMakesNoCall() {
        List<SubmitResult> r = client.blocking().submitBatch(List.of(
                TaskSpec.builder("shop", "a").build(), TaskSpec.builder("shop", "b").build()));
        assertEquals(List.of("b0", "b1"), r.stream().map(SubmitResult::taskId).toList());
        assertEquals(List.of(), client.blocking().submitBatch(List.of()));
        assertEquals(1, nodes.stream().mapToInt(n -> n.calls.get()).sum());
    }

    @Test
    void statusCodesMapToTypedExceptions() {
        Map<Status, Class<? extends RpcException>> cases = Map.of(
                Status.NOT_FOUND.withDescription("task_id: no such task"), NotFoundException.class,
                Status.ALREADY_EXISTS, AlreadyExistsException.class,
                Status.FAILED_PRECONDITION, FailedPreconditionException.class,
                Status.RESOURCE_EXHAUSTED, ResourceExhaustedException.class,
                Status.DEADLINE_EXCEEDED, DeadlineExceededException.class,
                Status.PERMISSION_DENIED, PermissionDeniedException.class,
                Status.UNAUTHENTICATED, PermissionDeniedException.class,
                Status.INTERNAL, RpcException.class);
        cases.forEach((status, type) -> {
            nodes.forEach(n -> n.failWith = status);
            RpcException e = assertThrows(RpcException.class, () -> client.blocking().cancel("x"));
            assertEquals(type, e.getClass(), status.toString());
            assertEquals(status.getCode(), e.code());
        });
    }

    @Test
    void invalidArgumentNamesTheField() {
        nodes.forEach(n -> n.failWith = Status.INVALID_ARGUMENT.withDescription("tasks[2].payload_json: is not a JSON object"));
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> client.blocking().submit("shop", "x", null));
        assertEquals("tasks[2].payload_json", e.field());
        assertEquals("is not a JSON object", e.problem());
        assertEquals("INVALID_ARGUMENT: tasks[2].payload_json: is not a JSON object", e.getMessage());

        InvalidArgumentException noField = new InvalidArgumentException("bad request: something", null);
        assertEquals("", noField.field());
        assertEquals("bad request: something", noField.problem());
    }

    @Test
    void futureFailsWithTheTypedExceptionAsCause() {
        nodes.forEach(n -> n.failWith = Status.NOT_FOUND);
        CompletionException e = assertThrows(CompletionException.class, () -> client.get("x").join());
        assertInstanceOf(NotFoundException.class, e.getCause());
    }

    @Test
    void idempotentCallsTryTheNextNodeOnceOnUnavailable() {
        nodes.get(0).failWith = Status.UNAVAILABLE;
        assertEquals(TaskState.CANCELLED, client.blocking().cancel("x")); // n0 fails, n1 answers
        assertEquals(1, nodes.get(0).calls.get());
        assertEquals(1, nodes.get(1).calls.get());

        nodes.forEach(n -> n.calls.set(0));
        nodes.get(1).failWith = Status.UNAVAILABLE;
        nodes.get(2).failWith = Status.UNAVAILABLE;
        // next turn is n1: fails, retried once on n2, which fails too; n0 is not tried
        assertThrows(UnavailableException.class, () -> client.blocking().get("x"));
        assertEquals(List.of(0, 1, 1), nodes.stream().map(n -> n.calls.get()).toList());
    }

    @Test
    void submitWithTaskIdIsRetriedButWithoutIsNot() {
        nodes.get(0).failWith = Status.UNAVAILABLE;
        SubmitResult r = client.blocking().submit(TaskSpec.builder("shop", "x").taskId("order-42").build());
        assertEquals("order-42", r.taskId());
        assertEquals(1, nodes.get(1).calls.get());

        nodes.get(1).failWith = Status.UNAVAILABLE; // next turn is n1; without a task id it is not retried on n2
        assertThrows(UnavailableException.class, () -> client.blocking().submit("shop", "x", Map.of()));
        assertEquals(2, nodes.get(1).calls.get());
        assertEquals(0, nodes.get(2).calls.get());
    }

    @Test
    void nonUnavailableErrorsAreNotRetried() {
        nodes.get(0).failWith = Status.NOT_FOUND;
        assertThrows(NotFoundException.class, () -> client.blocking().get("x"));
        assertEquals(0, nodes.get(1).calls.get());
    }
}
