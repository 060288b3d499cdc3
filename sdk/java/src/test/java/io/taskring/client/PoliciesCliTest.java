package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** {@code Main policies ...} against a fake node on loopback: the flags, the JSON lines, the exit statuses. */
class PoliciesCliTest {
    private static final List<String> KEYS = List.of("namespace", "task_type", "policy", "source", "revision",
            "updated_by", "updated_at", "file_policy");

    private final FakePolicyService node = new FakePolicyService();
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
        return run(Map.of(), args);
    }

    private int run(Map<String, String> env, String... args) {
        out = new ByteArrayOutputStream();
        err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of("policies", args[0], "--nodes", "127.0.0.1:" + server.getPort()));
        all.addAll(List.of(args).subList(1, args.length));
        return Main.run(all.toArray(String[]::new), env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String stdout() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private static List<String> keys(JsonNode o) {
        List<String> keys = new ArrayList<>();
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            keys.add(it.next());
        }
        return keys;
    }

    private static final String[] EXPORT = {"--namespace", "shop", "--type", "export"};

    private static String[] with(String action, String[] base, String... more) {
        List<String> all = new ArrayList<>(List.of(action));
        all.addAll(List.of(base));
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void putPrintsTheEntryInEffectAsOneJsonLine() {
        node.file.put("shop/export", "{\"retry_cap\":2}");
        assertEquals(0, run(with("put", EXPORT, "--policy", "{\"concurrency\": {\"per_type\": 20}}",
                "--reason", "raise the limit")), stderr());
        assertEquals("{\"namespace\":\"shop\",\"task_type\":\"export\",\"policy\":{\"concurrency\":{\"per_type\":20}},"
                + "\"source\":\"api\",\"revision\":1,\"updated_by\":\"ops-token\","
                + "\"updated_at\":\"2030-01-02T03:04:05.678000+00:00\",\"file_policy\":{\"retry_cap\":2}}\n", stdout());
        Taskring.PutTypePolicyRequest sent = (Taskring.PutTypePolicyRequest) node.requests.get(0);
        assertEquals("{\"concurrency\":{\"per_type\":20}}", sent.getPolicyJson());
        assertEquals("raise the limit", sent.getReason());
        assertFalse(sent.hasIfRevision());
    }

    @Test
    void getOfATypeWithNoEntryPrintsNullsAndTheKeysInOrder() throws Exception {
        assertEquals(0, run(with("get", EXPORT)), stderr());
        JsonNode o = new ObjectMapper().readTree(stdout());
        assertEquals(KEYS, keys(o));
        assertEquals("none", o.get("source").asText());
        assertTrue(o.get("policy").isObject() && o.get("policy").isEmpty());
        assertTrue(o.get("revision").isIntegralNumber());
        assertEquals(0, o.get("revision").asLong());
        assertEquals("", o.get("updated_by").asText());
        assertTrue(o.get("updated_at").isNull(), "an empty updated_at is null");
        assertTrue(o.get("file_policy").isNull(), "an empty file_policy_json is null");
    }

    @Test
    void ifRevisionIsSentAndAStaleOneIsRefused() {
        assertEquals(0, run(with("put", EXPORT, "--policy", "{}", "--reason", "r", "--if-revision", "0")), stderr());
        Taskring.PutTypePolicyRequest sent = (Taskring.PutTypePolicyRequest) node.requests.get(0);
        assertTrue(sent.hasIfRevision());
        assertEquals(0, sent.getIfRevision());
        assertEquals(1, run(with("put", EXPORT, "--policy", "{}", "--reason", "r", "--if-revision", "0")));
        assertTrue(stderr().startsWith("FailedPreconditionException: FAILED_PRECONDITION: "), stderr());
        assertEquals("", stdout());
        assertEquals(1, run(with("delete", EXPORT, "--reason", "r", "--if-revision", "5")));
        assertTrue(stderr().contains("FAILED_PRECONDITION"), stderr());
        assertEquals(0, run(with("delete", EXPORT, "--reason", "back to the file", "--if-revision", "1")), stderr());
        Taskring.DeleteTypePolicyRequest del = (Taskring.DeleteTypePolicyRequest) node.requests.get(node.requests.size() - 1);
        assertEquals(1, del.getIfRevision());
        assertEquals("back to the file", del.getReason());
        assertTrue(stdout().contains("\"source\":\"none\""), stdout());
    }

    @Test
    void listPrintsOneLinePerPolicyAndNothingForNone() {
        node.file.put("shop/import", "{}");
        assertEquals(0, run(with("put", EXPORT, "--policy", "{\"retry_cap\":1}", "--reason", "r")));
        assertEquals(0, run("put", "--namespace", "ops", "--type", "a", "--policy", "{}", "--reason", "r"));
        assertEquals(0, run("list", "--namespace", "shop"));
        String[] lines = stdout().split("\n");
        assertEquals(2, lines.length, stdout());
        assertTrue(lines[0].contains("\"task_type\":\"export\"") && lines[1].contains("\"task_type\":\"import\""), stdout());
        assertEquals(0, run("list"));
        assertEquals(3, stdout().split("\n").length, "no --namespace lists every namespace");
        assertEquals(0, run("list", "--namespace", "nothing-here"));
        assertEquals("", stdout());
    }

    @Test
    void refusalsExitOneWithTheStatusAndTheServersMessage() {
        assertEquals(1, run(with("put", EXPORT, "--policy", "{\"concurrency\":{\"per_type\":0}}", "--reason", "r")));
        assertTrue(stderr().startsWith("InvalidArgumentException: INVALID_ARGUMENT: policy_json.concurrency.per_type: "),
                stderr());
        assertEquals(1, run(with("put", EXPORT, "--policy", "{}", "--reason", "")));
        assertTrue(stderr().contains("INVALID_ARGUMENT: reason: "), stderr());
        assertEquals(1, run(with("delete", EXPORT, "--reason", "r")));
        assertTrue(stderr().startsWith("NotFoundException: NOT_FOUND: "), stderr());
        assertEquals("", stdout());
    }

    @Test
    void badUsageExitsTwoWithoutACall() {
        assertEquals(2, run(with("put", EXPORT, "--policy", "[1, 2]", "--reason", "r")));
        assertTrue(stderr().contains("policy_json"), stderr());
        assertEquals(2, run(with("put", EXPORT, "--policy", "{not json", "--reason", "r")));
        assertTrue(stderr().contains("policy_json"), stderr());
        assertEquals(2, run(with("put", EXPORT, "--policy", "{}", "--reason", "r", "--if-revision", "latest")));
        assertEquals(2, run(with("put", EXPORT, "--policy", "{}")));
        assertTrue(stderr().contains("--reason"), stderr());
        assertEquals(2, run(with("delete", EXPORT)));
        assertEquals(2, run(with("get", EXPORT, "--reason", "r")), "an option of another action");
        assertEquals(2, run(with("get", EXPORT, "--name", "x")), "an option of another command");
        assertEquals(2, run("get", "--namespace", "shop"));
        assertTrue(stderr().contains("--type"), stderr());
        assertEquals(2, run("list", "--namespace"));
        assertEquals(2, run("frobnicate"));
        assertEquals(2, Main.run(new String[] {"policies"}, Map.of(), new PrintStream(out), new PrintStream(err)));
        assertEquals(0, node.calls.get());
    }

    @Test
    void theTokenComesFromTheEnvironment() {
        assertEquals(0, run(Map.of("TASKRING_TOKEN", "trk_from-env"), "list"));
        assertEquals(0, run("list"));
        assertEquals(List.of("Bearer trk_from-env", "null"), headers.seen);
    }
}
