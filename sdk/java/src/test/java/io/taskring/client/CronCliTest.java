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

/** {@code Main cron ...} against a fake node on loopback: the flags, the JSON lines, the exit statuses. */
class CronCliTest {
    private static final List<String> KEYS = List.of("namespace", "name", "task_type", "schedule", "time_zone", "payload",
            "on_repeated_hour", "on_skipped_hour", "catch_up", "catch_up_limit", "overlap", "owner_team", "description",
            "timeout_ms", "max_retries", "paused", "next_fire_time", "last_fire_time", "created_at", "updated_at",
            "last_fire_task_id", "last_fire_state");

    private final FakeCronService node = new FakeCronService();
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
        List<String> all = new ArrayList<>(List.of("cron", args[0], "--nodes", "127.0.0.1:" + server.getPort()));
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

    private static final String[] NIGHTLY = {"--namespace", "billing", "--name", "nightly", "--type", "reconcile",
            "--schedule", "0 0 * * *", "--zone", "Asia/Singapore"};

    private static String[] with(String action, String[] base, String... more) {
        List<String> all = new ArrayList<>(List.of(action));
        all.addAll(List.of(base));
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void createPrintsTheStoredRuleAsOneJsonLine() throws Exception {
        assertEquals(0, run(with("create", NIGHTLY, "--payload", "{\"scope\": \"all\"}", "--owner-team", "payments",
                "--description", "midnight SGT", "--overlap", "skip", "--timeout-ms", "30000", "--max-retries", "2",
                "--catch-up", "all", "--catch-up-limit", "5", "--on-repeated-hour", "twice", "--on-skipped-hour", "skip")),
                stderr());
        assertEquals("{\"namespace\":\"billing\",\"name\":\"nightly\",\"task_type\":\"reconcile\",\"schedule\":\"0 0 * * *\","
                + "\"time_zone\":\"Asia/Singapore\",\"payload\":{\"scope\":\"all\"},\"on_repeated_hour\":\"twice\","
                + "\"on_skipped_hour\":\"skip\",\"catch_up\":\"all\",\"catch_up_limit\":5,\"overlap\":\"skip\","
                + "\"owner_team\":\"payments\",\"description\":\"midnight SGT\",\"timeout_ms\":30000,\"max_retries\":2,"
                + "\"paused\":false,\"next_fire_time\":\"2030-01-01T16:00:00+00:00\",\"last_fire_time\":null,"
                + "\"created_at\":\"2029-12-31T10:00:00.250000+00:00\",\"updated_at\":\"2029-12-31T10:00:00.250000+00:00\","
                + "\"last_fire_task_id\":\"\",\"last_fire_state\":null}\n", stdout());
        Taskring.CronRule sent = ((Taskring.PutCronRuleRequest) node.requests.get(0)).getRule();
        assertEquals("{\"scope\":\"all\"}", sent.getPayloadJson());
        assertEquals(30000, sent.getTimeoutMs());
        assertEquals(2, sent.getMaxRetries());
        assertEquals("twice/skip/all/5", sent.getOnRepeatedHour() + "/" + sent.getOnSkippedHour() + "/" + sent.getCatchUp()
                + "/" + sent.getCatchUpLimit());
    }

    @Test
    void unsetTimeoutAndRetriesAreNullAndNotSent() throws Exception {
        assertEquals(0, run(with("create", NIGHTLY)), stderr());
        JsonNode o = new ObjectMapper().readTree(stdout());
        List<String> keys = new ArrayList<>();
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            keys.add(it.next());
        }
        assertEquals(KEYS, keys);
        assertTrue(o.get("timeout_ms").isNull());
        assertTrue(o.get("max_retries").isNull());
        assertTrue(o.get("payload").isObject() && o.get("payload").isEmpty());
        assertEquals("latest", o.get("catch_up").asText(), "what the server filled in is printed");
        Taskring.CronRule sent = ((Taskring.PutCronRuleRequest) node.requests.get(0)).getRule();
        assertFalse(sent.hasTimeoutMs());
        assertFalse(sent.hasMaxRetries());
        assertEquals("", sent.getOverlap());
    }

    @Test
    void aFiredRuleShowsItsLastFire() throws Exception {
        node.rules.put("billing/nightly", CronRuleSpec.builder("billing", "nightly", "reconcile", "0 0 * * *").build()
                .toWire().toBuilder().setPaused(true).setLastFireTime("2029-12-31T16:00:00Z")
                .setLastFireTaskId("cron-x-1893427200000").setLastFireState(Taskring.TaskState.TASK_STATE_RETRY_WAIT).build());
        assertEquals(0, run("get", "--namespace", "billing", "--name", "nightly"), stderr());
        JsonNode o = new ObjectMapper().readTree(stdout());
        assertTrue(o.get("paused").asBoolean());
        assertTrue(o.get("next_fire_time").isNull());
        assertEquals("2029-12-31T16:00:00+00:00", o.get("last_fire_time").asText());
        assertEquals("cron-x-1893427200000", o.get("last_fire_task_id").asText());
        assertEquals("retry_wait", o.get("last_fire_state").asText());
        assertTrue(o.get("created_at").isNull(), "an empty time is null");
    }

    @Test
    void listPrintsOneLinePerRuleAndNothingForNone() {
        assertEquals(0, run(with("create", NIGHTLY)));
        assertEquals(0, run("create", "--namespace", "billing", "--name", "weekly", "--type", "t", "--schedule", "0 0 * * 0",
                "--zone", "UTC"));
        assertEquals(0, run("create", "--namespace", "ops", "--name", "a", "--type", "t", "--schedule", "* * * * *",
                "--zone", "UTC"));
        assertEquals(0, run("list", "--namespace", "billing"));
        String[] lines = stdout().split("\n");
        assertEquals(2, lines.length, stdout());
        assertTrue(lines[0].contains("\"name\":\"nightly\"") && lines[1].contains("\"name\":\"weekly\""), stdout());
        assertEquals(0, run("list"));
        assertEquals(3, stdout().split("\n").length, "no --namespace lists every namespace");
        assertEquals(0, run("list", "--namespace", "nothing-here"));
        assertEquals("", stdout());
    }

    @Test
    void pauseResumeDeleteEachPrintTheRule() throws Exception {
        assertEquals(0, run(with("create", NIGHTLY)));
        String[] ref = {"--namespace", "billing", "--name", "nightly"};
        assertEquals(0, run(with("pause", ref)));
        assertTrue(new ObjectMapper().readTree(stdout()).get("paused").asBoolean());
        assertEquals(0, run(with("resume", ref)));
        assertFalse(new ObjectMapper().readTree(stdout()).get("paused").asBoolean());
        assertEquals(0, run(with("update", NIGHTLY, "--schedule", "30 1 * * *")));
        assertEquals("30 1 * * *", new ObjectMapper().readTree(stdout()).get("schedule").asText(), "a later flag wins");
        assertEquals(0, run(with("delete", ref)));
        assertEquals("nightly", new ObjectMapper().readTree(stdout()).get("name").asText());
        assertTrue(node.rules.isEmpty());
    }

    @Test
    void refusalsExitOneWithTheStatusAndTheServersMessage() {
        assertEquals(0, run(with("create", NIGHTLY)));
        assertEquals(1, run(with("create", NIGHTLY)));
        assertTrue(stderr().contains("ALREADY_EXISTS") && stderr().contains("already exists"), stderr());
        assertEquals("", stdout());
        assertEquals(1, run("create", "--namespace", "billing", "--name", "bad", "--type", "t", "--schedule", "0 0 * * *",
                "--zone", "Mars/Olympus_Mons"));
        assertTrue(stderr().startsWith("InvalidArgumentException: INVALID_ARGUMENT: rule.time_zone: "), stderr());
        assertEquals(1, run("get", "--namespace", "billing", "--name", "no-such-rule"));
        assertTrue(stderr().contains("NOT_FOUND"), stderr());
    }

    @Test
    void badUsageExitsTwoWithoutACall() {
        assertEquals(2, run(with("create", NIGHTLY, "--payload", "[1, 2]")));
        assertTrue(stderr().contains("payload"), stderr());
        assertEquals(2, run(with("create", NIGHTLY, "--payload", "{not json")));
        assertEquals(2, run(with("create", NIGHTLY, "--timeout-ms", "soon")));
        assertEquals(2, run(with("create", NIGHTLY, "--task-id", "x")), "an option of another mode");
        assertEquals(2, run("create", "--namespace", "billing", "--name", "n", "--type", "t"));
        assertTrue(stderr().contains("--schedule"), stderr());
        assertEquals(2, run("get", "--namespace", "billing"));
        assertEquals(2, run("frobnicate"));
        assertEquals(2, Main.run(new String[] {"cron"}, Map.of(), new PrintStream(out), new PrintStream(err)));
        assertEquals(0, node.calls.get());
    }

    @Test
    void theTokenComesFromTheEnvironment() {
        assertEquals(0, run(Map.of("TASKRING_TOKEN", "trk_from-env"), "list"));
        assertEquals(0, run("list"));
        assertEquals(List.of("Bearer trk_from-env", "null"), headers.seen);
    }
}
