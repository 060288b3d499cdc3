package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.taskring.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import taskring.v1.Taskring;

/** {@code Main graph ...} against a fake node on loopback: the flags, the JSON lines, the exit statuses. */
class GraphCliTest {
    private static final String ORDER = """
            {"namespace": "shop", "graph_id": "order-7", "tasks": [
              {"key": "charge", "task_type": "charge", "payload": {"order": 7}},
              {"key": "ship", "task_type": "ship", "after": [{"key": "charge"}]},
              {"key": "email", "task_type": "email", "payload": {"fail": true}, "after": [{"key": "charge"}]},
              {"key": "close", "task_type": "close", "after": [{"key": "ship"}, {"key": "email", "on_failure": "ignore"}],
               "join": {"rule": "all_succeeded"}}]}""";

    @TempDir
    Path dir;
    private final FakeGraphService node = new FakeGraphService();
    private final CronRulesTest.Headers headers = new CronRulesTest.Headers();
    private Server server;
    private ByteArrayOutputStream out = new ByteArrayOutputStream();
    private ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void start() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(ServerInterceptors.intercept(node, headers)).build().start();
    }

    @AfterEach
    void stop() {
        server.shutdownNow();
    }

    private int run(String... args) {
        out = new ByteArrayOutputStream();
        err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of("graph", args[0], "--nodes", "127.0.0.1:" + server.getPort()));
        all.addAll(List.of(args).subList(1, args.length));
        return Main.run(all.toArray(String[]::new), Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String file(String json) throws Exception {
        Path p = Files.createTempFile(dir, "graph", ".json");
        Files.writeString(p, json);
        return p.toString();
    }

    private String stdout() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void submitSendsTheFilesGraphAndPrintsTheReceiptAsOneJsonLine() throws Exception {
        String order = file(ORDER);
        assertEquals(0, run("submit", "--file", order), stderr());
        assertEquals("{\"graph_id\":\"order-7\",\"duplicate\":false,\"tasks\":{"
                + "\"charge\":{\"task_id\":\"id-charge\",\"state\":\"queued\",\"slot\":0},"
                + "\"ship\":{\"task_id\":\"id-ship\",\"state\":\"waiting\",\"slot\":1},"
                + "\"email\":{\"task_id\":\"id-email\",\"state\":\"waiting\",\"slot\":2},"
                + "\"close\":{\"task_id\":\"id-close\",\"state\":\"waiting\",\"slot\":3}}}\n", stdout());
        Taskring.SubmitGraphRequest sent = (Taskring.SubmitGraphRequest) node.requests.get(0);
        assertEquals("shop", sent.getNamespace());
        assertEquals("{\"fail\":true}", sent.getTasks(2).getTask().getPayloadJson());
        assertEquals("{}", sent.getTasks(1).getTask().getPayloadJson(), "no payload: the empty object");
        assertEquals(Taskring.OnFailure.ON_FAILURE_IGNORE, sent.getTasks(3).getDependsOn(1).getOnFailure());
        assertEquals(Taskring.OnFailure.ON_FAILURE_SKIP, sent.getTasks(3).getDependsOn(0).getOnFailure());
        assertEquals(0, run("submit", "--file", order));
        assertTrue(stdout().contains("\"duplicate\":true"), stdout());
    }

    @Test
    void continueIsSentFromTheFileAndPrintedBack() throws Exception {
        String receipt = file(ORDER.replace("\"on_failure\": \"ignore\"", "\"on_failure\": \"continue\""));
        assertEquals(0, run("submit", "--file", receipt), stderr());
        Taskring.SubmitGraphRequest sent = (Taskring.SubmitGraphRequest) node.requests.get(0);
        assertEquals(Taskring.OnFailure.ON_FAILURE_CONTINUE, sent.getTasks(3).getDependsOn(1).getOnFailure());

        Taskring.GetGraphResponse.Builder b = FakeGraphService.finishedOrder().toBuilder();
        b.getNodesBuilder(3).setDependsOn(1, Taskring.GraphEdge.newBuilder().setParentKey("email")
                .setOnFailure(Taskring.OnFailure.ON_FAILURE_CONTINUE).setOutcome("continued"));
        node.graph = b.build();
        assertEquals(0, run("get", "--namespace", "shop", "--graph-id", "order-7"), stderr());
        JsonNode edge = new ObjectMapper().readTree(stdout()).get("nodes").get("close").get("depends_on").get(1);
        assertEquals(new ObjectMapper().readTree(
                "{\"parent_key\":\"email\",\"on_failure\":\"continue\",\"outcome\":\"continued\"}"), edge);
    }

    @Test
    void getPrintsTheGraphWithResultsOnlyWhenAsked() throws Exception {
        node.graph = FakeGraphService.finishedOrder();
        assertEquals(0, run("get", "--namespace", "shop", "--graph-id", "order-7", "--with-results"), stderr());
        JsonNode g = new ObjectMapper().readTree(stdout());
        assertEquals(List.of("graph_id", "namespace", "state", "counts", "nodes"), keys(g));
        assertEquals("finished", g.get("state").asText());
        assertEquals(3, g.get("counts").get("succeeded").asInt());
        assertEquals(List.of("charge", "ship", "email", "close"), keys(g.get("nodes")));
        JsonNode charge = g.get("nodes").get("charge");
        assertEquals(List.of("task_id", "state", "attempts", "reason", "waiting", "result", "depends_on"), keys(charge));
        assertEquals(new ObjectMapper().readTree("{\"type\":\"charge\",\"saw\":{}}"), charge.get("result"));
        JsonNode close = g.get("nodes").get("close");
        assertTrue(close.get("result").isNull(), "none kept: null");
        assertEquals(new ObjectMapper().readTree("[{\"parent_key\":\"ship\",\"on_failure\":\"skip\",\"outcome\":\"succeeded\"},"
                + "{\"parent_key\":\"email\",\"on_failure\":\"ignore\",\"outcome\":\"ignored\"}]"), close.get("depends_on"));
        assertEquals("dead_lettered", g.get("nodes").get("email").get("state").asText());
        assertTrue(((Taskring.GetGraphRequest) node.requests.get(0)).getWithResults());

        assertEquals(0, run("get", "--namespace", "shop", "--graph-id", "order-7"), stderr());
        assertTrue(new ObjectMapper().readTree(stdout()).get("nodes").get("charge").get("result").isNull());
        assertTrue(!((Taskring.GetGraphRequest) node.requests.get(1)).getWithResults());
    }

    @Test
    void refusalsExitOneWithTheStatusAndTheServersMessage() throws Exception {
        // The file's order is not checked here: a cycle goes to the server, which names the edge.
        String cyclic = file("{\"namespace\": \"shop\", \"graph_id\": \"c\", \"tasks\": ["
                + "{\"key\": \"a\", \"task_type\": \"t\", \"after\": [{\"key\": \"b\"}]},"
                + "{\"key\": \"b\", \"task_type\": \"t\", \"after\": [{\"key\": \"a\"}]}]}");
        assertEquals(1, run("submit", "--file", cyclic));
        assertTrue(stderr().startsWith("InvalidArgumentException: INVALID_ARGUMENT: tasks[0].depends_on[0]: closes the cycle"),
                stderr());
        assertEquals("", stdout());
        assertEquals(1, run("get", "--namespace", "shop", "--graph-id", "nope"));
        assertTrue(stderr().startsWith("NotFoundException: NOT_FOUND: "), stderr());
    }

    @Test
    void badUsageExitsTwoWithoutACall() throws Exception {
        assertEquals(2, run("submit"));
        assertTrue(stderr().contains("--file"), stderr());
        assertEquals(2, run("submit", "--file", dir.resolve("missing.json").toString()));
        assertTrue(stderr().contains("--file: cannot read"), stderr());
        assertEquals(2, run("submit", "--file", file("{\"namespace\": \"shop\", \"graph_id\": \"g\", \"tasks\": ["
                + "{\"key\": \"a\", \"task_type\": \"t\", \"afterr\": []}]}")));
        assertTrue(stderr().contains("tasks[0].afterr: unknown field"), stderr());
        assertEquals(2, run("submit", "--file", file("{\"namespace\": \"shop\", \"graph_id\": \"g\", \"tasks\": ["
                + "{\"key\": \"a\", \"task_type\": \"t\"}, {\"key\": \"a\", \"task_type\": \"t\"}]}")));
        assertTrue(stderr().contains("tasks[1].key: repeats tasks[0].key 'a'"), stderr());
        assertEquals(2, run("get", "--namespace", "shop"));
        assertTrue(stderr().contains("--graph-id"), stderr());
        assertEquals(2, run("get", "--namespace", "shop", "--graph-id", "g", "--file", "x"), "an option of another action");
        assertEquals(2, run("frobnicate"));
        assertEquals(0, node.calls.get());
    }

    @Test
    void cancelSendsTheModeAndReasonAndPrintsWhatItDidAsOneJsonLine() throws Exception {
        node.cancelled = FakeGraphService.twoCancelledTwoRunning();
        assertEquals(0, run("cancel", "--namespace", "shop", "--graph-id", "order-7", "--mode", "immediate",
                "--reason", "customer left"), stderr());
        assertEquals("{\"cancelled\":2,\"running\":[\"ship\",\"email\"]}\n", stdout());
        assertEquals(Taskring.CancelGraphRequest.newBuilder().setNamespace("shop").setGraphId("order-7")
                .setMode(Taskring.CancelMode.CANCEL_MODE_IMMEDIATE).setReason("customer left").build(),
                node.requests.get(0));

        node.cancelled = Taskring.CancelGraphResponse.newBuilder().setCancelled(4).build();
        assertEquals(0, run("cancel", "--namespace", "shop", "--graph-id", "order-7"), stderr());
        assertEquals("{\"cancelled\":4,\"running\":[]}\n", stdout());
        assertEquals(Taskring.CancelGraphRequest.newBuilder().setNamespace("shop").setGraphId("order-7")
                .setMode(Taskring.CancelMode.CANCEL_MODE_GRACEFUL).build(), node.requests.get(1),
                "graceful by default, the server's reason");
    }

    @Test
    void cancelsRefusalExitsOneAndABadModeExitsTwoWithoutACall() throws Exception {
        assertEquals(1, run("cancel", "--namespace", "shop", "--graph-id", "nope"));
        assertTrue(stderr().startsWith("NotFoundException: NOT_FOUND: graph shop/nope does not exist"), stderr());
        assertEquals("", stdout());
        assertEquals(1, node.calls.get());

        assertEquals(2, run("cancel", "--namespace", "shop", "--graph-id", "order-7", "--mode", "hard"));
        assertTrue(stderr().contains("--mode must be graceful or immediate, got 'hard'"), stderr());
        assertTrue(stderr().contains("graph cancel --nodes HOST:PORT --namespace NS --graph-id ID"), stderr());
        assertEquals(2, run("cancel", "--namespace", "shop", "--graph-id", "order-7", "--mode", "IMMEDIATE"));
        assertEquals(2, run("cancel", "--namespace", "shop"));
        assertTrue(stderr().contains("--graph-id"), stderr());
        assertEquals(2, run("cancel", "--namespace", "shop", "--graph-id", "order-7", "--with-results"),
                "an option of another action");
        assertEquals(2, run("cancel", "--namespace", "shop", "--graph-id", "order-7", "--reason"), "no value");
        assertEquals(1, node.calls.get(), "nothing more sent");
    }

    private static List<String> keys(JsonNode o) {
        List<String> keys = new ArrayList<>();
        o.fieldNames().forEachRemaining(keys::add);
        return keys;
    }
}
