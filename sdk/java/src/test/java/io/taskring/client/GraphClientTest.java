package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.taskring.TaskState;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.NotFoundException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** submitGraph, getGraph and cancelGraph against two in-process fake nodes: receipts, graphs, errors, retries. */
class GraphClientTest {
    private final List<FakeGraphService> nodes = new ArrayList<>();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private TaskringClient client;

    @BeforeEach
    void start() throws Exception {
        for (int i = 0; i < 2; i++) {
            String name = InProcessServerBuilder.generateName();
            FakeGraphService node = new FakeGraphService();
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

    private static Graph order() {
        Graph g = new Graph("order-7");
        Graph.Node charge = g.task("charge", TaskSpec.builder("shop", "charge").build());
        g.task("ship", TaskSpec.builder("shop", "ship").build(), charge);
        return g;
    }

    @Test
    void aSubmittedGraphAnswersItsTasksByKeyInOrder() {
        SubmittedGraph r = client.blocking().submitGraph(order());
        assertEquals("order-7", r.graphId());
        assertFalse(r.duplicate());
        assertEquals(List.of("charge", "ship"), List.copyOf(r.tasks().keySet()));
        assertEquals(new GraphTaskRef("charge", "id-charge", TaskState.QUEUED, 0), r.tasks().get("charge"));
        assertEquals(new GraphTaskRef("ship", "id-ship", TaskState.WAITING, 1), r.tasks().get("ship"));
        Taskring.SubmitGraphRequest sent = (Taskring.SubmitGraphRequest) nodes.get(0).requests.get(0);
        assertEquals(order().toWire(), sent);
    }

    @Test
    void aRetriedSubmitIsTriedOnTheNextNodeAfterUnavailable() {
        nodes.get(0).failWith = Status.UNAVAILABLE;
        SubmittedGraph r = client.blocking().submitGraph(order());
        assertEquals(1, nodes.get(0).calls.get());
        assertEquals(1, nodes.get(1).calls.get(), "a graph's submit is idempotent by its id: retried");
        assertFalse(r.duplicate());
    }

    @Test
    void aRefusalIsAnInvalidArgumentNamingTheField() {
        Graph g = Graph.anyOrder("cyclic");
        g.task("a", TaskSpec.builder("shop", "t").build(), Graph.After.of("b"));
        g.task("b", TaskSpec.builder("shop", "t").build(), Graph.After.of("a"));
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> client.blocking().submitGraph(g));
        assertEquals("tasks[0].depends_on[0]", e.field());
        assertTrue(e.problem().startsWith("closes the cycle"), e.problem());
    }

    @Test
    void aGraphIsReadWithItsNodesEdgesAndCounts() {
        nodes.forEach(n -> n.graph = FakeGraphService.finishedOrder());
        GraphInfo g = client.blocking().getGraph("shop", "order-7");
        Taskring.GetGraphRequest sent = (Taskring.GetGraphRequest) nodes.get(0).requests.get(0);
        assertEquals(Taskring.GetGraphRequest.newBuilder().setNamespace("shop").setGraphId("order-7").build(), sent);
        assertTrue(g.isFinished());
        assertEquals(Map.of("succeeded", 3L, "dead_lettered", 1L), g.counts());
        assertEquals(List.of("charge", "ship", "email", "close"), List.copyOf(g.nodes().keySet()));
        GraphNode email = g.nodes().get("email");
        assertEquals(TaskState.DEAD_LETTERED, email.state());
        assertEquals("NonRetryableException: no such address", email.reason());
        assertEquals(List.of(new GraphEdge("charge", OnFailure.SKIP, "succeeded")), email.dependsOn(),
                "an unspecified policy reads as skip");
        GraphNode close = g.nodes().get("close");
        assertEquals(Join.atLeast(2), close.join());
        assertEquals(List.of(new GraphEdge("ship", OnFailure.SKIP, "succeeded"),
                new GraphEdge("email", OnFailure.IGNORE, "ignored")), close.dependsOn());
        assertNull(g.nodes().get("charge").result(), "no results unless asked for");
    }

    @Test
    void aContinueEdgeIsReadWithItsPolicyAndOutcome() {
        Taskring.GetGraphResponse.Builder b = FakeGraphService.finishedOrder().toBuilder();
        b.getNodesBuilder(3).setDependsOn(1, Taskring.GraphEdge.newBuilder().setParentKey("email")
                .setOnFailure(Taskring.OnFailure.ON_FAILURE_CONTINUE).setOutcome("continued"));
        Taskring.GetGraphResponse graph = b.build();
        nodes.forEach(n -> n.graph = graph);
        GraphNode close = client.blocking().getGraph("shop", "order-7").nodes().get("close");
        assertEquals(new GraphEdge("email", OnFailure.CONTINUE, "continued"), close.dependsOn().get(1));
    }

    @Test
    void resultsComeOnlyWhenAskedForDecoded() {
        nodes.forEach(n -> n.graph = FakeGraphService.finishedOrder());
        GraphInfo g = client.blocking().getGraph("shop", "order-7", true);
        assertTrue(((Taskring.GetGraphRequest) nodes.get(0).requests.get(0)).getWithResults());
        GraphNode charge = g.nodes().get("charge");
        assertEquals("charge", charge.result().get("type").asText());
        assertTrue(charge.result().get("saw").isObject());
        assertEquals(Map.of("tracking", "Z-1"), g.nodes().get("ship").resultAs(Map.class));
        assertNull(g.nodes().get("close").result(), "none kept: null, not an error");
    }

    @Test
    void anUnknownGraphIsNotFound() {
        assertThrows(NotFoundException.class, () -> client.blocking().getGraph("shop", "nope", true));
    }

    @Test
    void aCancelSendsTheModeAndReasonAndAnswersWhatItDid() {
        nodes.forEach(n -> n.cancelled = FakeGraphService.twoCancelledTwoRunning());
        CancelledGraph c = client.blocking().cancelGraph("shop", "order-7", CancelMode.IMMEDIATE, "customer left");
        assertEquals(new CancelledGraph(2, List.of("ship", "email")), c);
        assertEquals(Taskring.CancelGraphRequest.newBuilder().setNamespace("shop").setGraphId("order-7")
                .setMode(Taskring.CancelMode.CANCEL_MODE_IMMEDIATE).setReason("customer left").build(),
                nodes.get(0).requests.get(0));
    }

    @Test
    void theShortCancelIsGracefulWithTheServersReasonAndTheAsyncClientAnswersTheSame() {
        Taskring.CancelGraphResponse none = Taskring.CancelGraphResponse.newBuilder().setCancelled(0).build();
        nodes.forEach(n -> n.cancelled = none);
        assertEquals(new CancelledGraph(0, List.of()), client.blocking().cancelGraph("shop", "order-7")); // node 0
        assertEquals(new CancelledGraph(0, List.of()),
                client.cancelGraph("shop", "order-7", CancelMode.GRACEFUL, "").join()); // node 1
        Taskring.CancelGraphRequest graceful = Taskring.CancelGraphRequest.newBuilder().setNamespace("shop")
                .setGraphId("order-7").setMode(Taskring.CancelMode.CANCEL_MODE_GRACEFUL).build();
        assertEquals(List.of(graceful), nodes.get(0).requests, "graceful is sent as GRACEFUL, not left UNSPECIFIED");
        assertEquals(List.of(graceful), nodes.get(1).requests);
    }

    @Test
    void aCancelsModesAreNamedAsEverySdkNamesThem() {
        assertEquals(CancelMode.GRACEFUL, CancelMode.parse("graceful"));
        assertEquals(CancelMode.IMMEDIATE, CancelMode.parse("immediate"));
        assertEquals("immediate", CancelMode.IMMEDIATE.wireName());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CancelMode.parse("IMMEDIATE"));
        assertEquals("mode must be graceful or immediate, got 'IMMEDIATE'", e.getMessage());
        assertThrows(NullPointerException.class, () -> client.blocking().cancelGraph("shop", "order-7", null, ""));
        assertEquals(0, nodes.get(0).calls.get() + nodes.get(1).calls.get(), "nothing sent");
    }

    @Test
    void aCancelIsTriedOnTheNextNodeAfterUnavailable() {
        nodes.get(0).failWith = Status.UNAVAILABLE;
        nodes.get(1).cancelled = FakeGraphService.twoCancelledTwoRunning();
        assertEquals(2, client.blocking().cancelGraph("shop", "order-7").cancelled());
        assertEquals(1, nodes.get(0).calls.get());
        assertEquals(1, nodes.get(1).calls.get(), "a repeated cancel cancels nothing more: retried");
    }

    @Test
    void aCancelsRefusalsAreTheSdksExceptions() {
        assertThrows(NotFoundException.class, () -> client.blocking().cancelGraph("shop", "nope"));
        nodes.forEach(n -> n.failWith = Status.INVALID_ARGUMENT.withDescription("reason: is 1001 characters, at most 1000"));
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> client.blocking().cancelGraph("shop", "order-7", CancelMode.GRACEFUL, "x".repeat(1001)));
        assertEquals("reason", e.field());
        assertEquals("is 1001 characters, at most 1000", e.problem());
    }
}
