package io.taskring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ChannelCredentials;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.StreamObserver;
import io.taskring.executor.TaskringExecutor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.HeartbeatVerdict;
import taskring.v1.Taskring.OutcomeKind;

/** {@code Main executor}: its flags, its errors, and a run answering Execute over mutual TLS. */
class ExecutorCliTest {
    @TempDir
    static Path certs;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final List<TaskringExecutor> executors = new ArrayList<>();

    @BeforeAll
    static void makeCerts() throws Exception {
        Path script = Path.of(System.getProperty("user.dir"), "..", "..", "deploy", "local", "certs.sh").normalize();
        Process p = new ProcessBuilder("bash", script.toString(), certs.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertEquals(0, p.waitFor(), "certs.sh failed");
    }

    @AfterEach
    void cleanUp() {
        channels.forEach(ManagedChannel::shutdownNow);
        executors.forEach(e -> e.stop(Duration.ZERO));
    }

    private static String cert(String name) {
        return certs.resolve(name).toString();
    }

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    private static final Map<String, String> MTLS_ENV = Map.of(
            "TASKRING_EXECUTOR_TLS_CERT_FILE", "/env/server.pem",
            "TASKRING_EXECUTOR_TLS_KEY_FILE", "/env/server.key",
            "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", "/env/ca.pem");

    private int main(Map<String, String> env, String... args) {
        return Main.run(args, env, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    // ---- flags ----

    @Test
    void defaultsAsTheGoCli() {
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "127.0.0.1:22181/x", "--namespace", "shop",
                "--types", "a,b"}, Map.of());
        assertEquals(new ExecutorCommand.Args("127.0.0.1:22181/x", "shop", List.of("a", "b"), "ok", "127.0.0.1", 0,
                null, 64, null, null, null), a);
    }

    @Test
    void everyFlag() {
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "zk1:2181,zk2:2181/t", "--namespace", "shop",
                "--types", "charge", "--behavior", "fail-once", "--listen", "0.0.0.0:7070", "--instance-id", "java-1",
                "--max-in-flight=8", "--tls-cert", "/f/s.pem", "--tls-key", "/f/s.key", "--tls-client-ca", "/f/ca.pem"},
                MTLS_ENV);
        assertEquals(new ExecutorCommand.Args("zk1:2181,zk2:2181/t", "shop", List.of("charge"), "fail-once", "0.0.0.0",
                7070, "java-1", 8, Path.of("/f/s.pem"), Path.of("/f/s.key"), Path.of("/f/ca.pem")), a);
        assertEquals("::1", ExecutorCommand.parse(new String[] {"--zk", "z", "--namespace", "n", "--types", "t",
                "--listen", "[::1]:0"}, Map.of()).host());
    }

    @Test
    void theTlsFlagsDefaultToTheEnvironment() {
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "z", "--namespace", "shop", "--types", "t"},
                MTLS_ENV);
        assertEquals(Path.of("/env/server.pem"), a.tlsCert());
        assertEquals(Path.of("/env/server.key"), a.tlsKey());
        assertEquals(Path.of("/env/ca.pem"), a.tlsClientCa());
        // A flag wins over its variable; an empty one turns mutual TLS off.
        a = ExecutorCommand.parse(new String[] {"--zk", "z", "--namespace", "shop", "--types", "t",
                "--tls-cert", "/f/s.pem", "--tls-client-ca", ""}, MTLS_ENV);
        assertEquals(Path.of("/f/s.pem"), a.tlsCert());
        assertEquals(Path.of("/env/server.key"), a.tlsKey());
        assertNull(a.tlsClientCa());
    }

    @Test
    void missingFlagsAreNamedWithStatusTwo() {
        ExecutorCommand.UsageException e = assertThrows(ExecutorCommand.UsageException.class,
                () -> ExecutorCommand.parse(new String[] {"--zk", "z", "--types", "t"}, Map.of()));
        assertEquals("executor needs --zk, --namespace and --types", e.getMessage());
        assertEquals(2, main(Map.of(), "executor", "--namespace", "shop"));
        assertTrue(stderr().startsWith("taskring: executor needs --zk, --namespace and --types\nusage: executor "), stderr());
        assertEquals("", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void badFlagsAreUsageErrors() {
        String[][] cases = {
            {"--behavior", "explode", "--behavior must be ok, panic-once, fail-once, heartbeat or graph-results, got \"explode\""},
            {"--listen", "nowhere", "--listen must be HOST:PORT, got 'nowhere'"},
            {"--listen", "127.0.0.1:99999", "--listen: port must be in 0..65535, got 99999"},
            {"--max-in-flight", "many", "--max-in-flight: not a number: 'many'"},
            {"--frobnicate", "1", "unknown flag --frobnicate for executor"},
        };
        for (String[] c : cases) {
            err.reset();
            assertEquals(2, main(Map.of(), "executor", "--zk", "z", "--namespace", "shop", "--types", "t", c[0], c[1]), c[0]);
            assertTrue(stderr().startsWith("taskring: " + c[2] + "\n"), stderr());
        }
        err.reset();
        assertEquals(2, main(Map.of(), "executor", "--zk", "z", "--namespace", "Shop!", "--types", "t"));
        assertTrue(stderr().startsWith("taskring: namespace: must match"), stderr());
    }

    @Test
    void tlsMistakesNameTheFlagAndItsVariable() {
        String[] base = {"executor", "--zk", "z", "--namespace", "shop", "--types", "t"};
        assertEquals(2, main(env("TASKRING_EXECUTOR_TLS_CERT_FILE", cert("server.pem")), base));
        assertTrue(stderr().startsWith("taskring: --tls-key (or TASKRING_EXECUTOR_TLS_KEY_FILE): required with --tls-cert"),
                stderr());
        err.reset();
        assertEquals(2, main(Map.of(), concat(base, "--tls-key", cert("server.key"))));
        assertTrue(stderr().startsWith("taskring: --tls-cert (or TASKRING_EXECUTOR_TLS_CERT_FILE): required with --tls-key"),
                stderr());
        err.reset();
        assertEquals(2, main(env("TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", cert("ca.pem")), base));
        assertTrue(stderr().startsWith("taskring: --tls-client-ca (or TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE): mutual TLS needs"),
                stderr());
        // A file that cannot be read: the flag and the path; nothing started (it would need ZooKeeper at "z").
        err.reset();
        String missing = certs.resolve("missing.pem").toString();
        assertEquals(2, main(Map.of(), concat(base, "--tls-cert", cert("server.pem"), "--tls-key", cert("server.key"),
                "--tls-client-ca", missing)));
        assertTrue(stderr().startsWith("taskring: --tls-client-ca: cannot read " + missing), stderr());
        err.reset();
        assertEquals(2, main(Map.of(), concat(base, "--tls-cert", cert("server.key"), "--tls-key", cert("server.key"))));
        assertTrue(stderr().startsWith("taskring: --tls-cert: " + cert("server.key") + " holds no PEM certificate"), stderr());
    }

    @Test
    void outcomeLinesAreTheGoClis() {
        assertEquals("succeeded", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_SUCCEEDED));
        assertEquals("retryable_failure", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE));
        assertEquals("non_retryable_failure", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE));
        assertEquals("timed_out", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_TIMED_OUT));
        assertEquals("no_handler", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_NO_HANDLER));
        assertEquals("not_started", ExecutorCommand.kind(OutcomeKind.OUTCOME_KIND_NOT_STARTED));
        assertEquals("t-9 4294967295 timed_out", ExecutorCommand.line(Taskring.Outcome.newBuilder().setTaskId("t-9")
                .setAttempt(-1).setKind(OutcomeKind.OUTCOME_KIND_TIMED_OUT).build()));
    }

    // ---- behaviours, over TLS, without ZooKeeper ----

    private ChannelCredentials client(String name) throws Exception {
        return TlsChannelCredentials.newBuilder().trustManager(certs.resolve("ca.pem").toFile())
                .keyManager(certs.resolve(name + ".pem").toFile(), certs.resolve(name + ".key").toFile()).build();
    }

    private Map<String, String> execute(String address, String type, int... attempts) throws Exception {
        ManagedChannel c = Grpc.newChannelBuilder(address, client("client")).build();
        channels.add(c);
        Taskring.ExecuteRequest.Builder req = Taskring.ExecuteRequest.newBuilder().setDispatcherNode("test");
        for (int a : attempts) {
            req.addDeliveries(Taskring.Delivery.newBuilder().setAttempt(a).setTimeoutMs(10_000).setTask(
                    Taskring.Task.newBuilder().setTaskId(type + "-" + a).setNamespace("shop").setTaskType(type).setPayloadJson("{}")));
        }
        Map<String, String> kinds = new HashMap<>();
        ExecutorServiceGrpc.newBlockingStub(c).withDeadlineAfter(20, TimeUnit.SECONDS).execute(req.build())
                .getOutcomesList().forEach(o -> kinds.put(o.getTaskId(), ExecutorCommand.kind(o.getKind())));
        return kinds;
    }

    private TaskringExecutor startWithoutZk(String behavior, List<String> lines) {
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "unused:1", "--namespace", "shop",
                "--types", behavior, "--behavior", behavior}, env(
                "TASKRING_EXECUTOR_TLS_CERT_FILE", cert("server.pem"), "TASKRING_EXECUTOR_TLS_KEY_FILE", cert("server.key"),
                "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", cert("ca.pem")));
        TaskringExecutor e = ExecutorCommand.builder(a, o -> lines.add(ExecutorCommand.line(o))).zookeeper(null).build();
        executors.add(e);
        e.start();
        return e;
    }

    @Test
    void behavioursFailTheFirstAttemptOnly() throws Exception {
        List<String> lines = new CopyOnWriteArrayList<>();
        for (String b : List.of("ok", "panic-once", "fail-once")) {
            TaskringExecutor e = startWithoutZk(b, lines);
            Map<String, String> kinds = execute(e.address(), b, 1, 2);
            String first = b.equals("ok") ? "succeeded" : "retryable_failure";
            assertEquals(Map.of(b + "-1", first, b + "-2", "succeeded"), kinds, b);
        }
        await(() -> lines.size() == 6, () -> "lines: " + lines);
        assertEquals(List.of("fail-once-1 1 retryable_failure", "fail-once-2 2 succeeded", "ok-1 1 succeeded",
                "ok-2 2 succeeded", "panic-once-1 1 retryable_failure", "panic-once-2 2 succeeded"),
                lines.stream().sorted().toList());
    }

    // ---- the heartbeat behaviour, on a Work stream of the test's own ----

    private static Taskring.Delivery beating(String id, String payload, String lastDetails) {
        return Taskring.Delivery.newBuilder().setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop")
                .setTaskType("hb").setPayloadJson(payload)).setAttempt(2).setEpoch(9).setTimeoutMs(30_000)
                .setHeartbeatTimeoutMs(5_000).setHeartbeatDetailsJson(lastDetails).build();
    }

    @Test
    void theHeartbeatBehaviourBeatsFromTheLastDetailsAndSaysWhenACancelStopsIt() throws Exception {
        List<String> printed = new CopyOnWriteArrayList<>();
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "unused:1", "--namespace", "shop",
                "--types", "hb", "--behavior", "heartbeat"}, Map.of());
        TaskringExecutor e = ExecutorCommand.builder(a, o -> { }, printed::add).zookeeper(null).build();
        executors.add(e);
        e.start();
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
        channels.add(c);
        LinkedBlockingQueue<Taskring.Outcome> outcomes = new LinkedBlockingQueue<>();
        List<Taskring.Heartbeat> heartbeats = new CopyOnWriteArrayList<>();
        Set<String> cancelled = ConcurrentHashMap.newKeySet();
        // The test's thread and gRPC's both send down the stream: one at a time.
        AtomicReference<StreamObserver<Taskring.ExecuteRequest>> down = new AtomicReference<>();
        down.set(ExecutorServiceGrpc.newStub(c).work(new StreamObserver<>() {
            @Override
            public void onNext(Taskring.ExecuteResponse r) {
                heartbeats.addAll(r.getHeartbeatsList());
                outcomes.addAll(r.getOutcomesList());
                Taskring.ExecuteRequest.Builder answers = Taskring.ExecuteRequest.newBuilder();
                for (Taskring.Heartbeat hb : r.getHeartbeatsList()) {
                    // Only a beat of the handler's own (it carries details): the SDK's first beat goes
                    // before the handler runs, and a cancel answered to it would rightly skip the
                    // handler, which then never prints its "stopped" line.
                    boolean cancel = cancelled.contains(hb.getTaskId()) && !hb.getDetailsJson().isEmpty();
                    answers.addHeartbeatAnswers(Taskring.HeartbeatAnswer.newBuilder().setTaskId(hb.getTaskId())
                            .setAttempt(hb.getAttempt()).setSequence(hb.getSequence())
                            .setVerdict(cancel ? HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL : HeartbeatVerdict.HEARTBEAT_VERDICT_CONTINUE)
                            .setReason(cancel ? "the task was cancelled" : ""));
                }
                if (answers.getHeartbeatAnswersCount() > 0) {
                    synchronized (down) {
                        down.get().onNext(answers.build());
                    }
                }
            }

            @Override
            public void onError(Throwable t) { }

            @Override
            public void onCompleted() { }
        }));
        // Resumed at 100 of 300 ms: about 200 ms of work left, a beat every 40 ms.
        synchronized (down) {
            down.get().onNext(Taskring.ExecuteRequest.newBuilder().setDispatcherNode("test")
                    .addDeliveries(beating("short", "{\"ms\":300,\"every_ms\":40}", "{\"done_ms\":100}")).build());
        }
        Taskring.Outcome o = outcomes.poll(10, TimeUnit.SECONDS);
        assertNotNull(o, "no outcome within 10 s");
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.getKind(), o.getError());
        ObjectMapper json = new ObjectMapper();
        List<Long> done = new ArrayList<>();
        for (Taskring.Heartbeat hb : heartbeats) {
            if (!hb.getDetailsJson().isEmpty()) {
                done.add(json.readTree(hb.getDetailsJson()).get("done_ms").asLong());
            }
        }
        assertTrue(done.size() >= 3 && done.get(0) >= 140 && done.get(done.size() - 1) == 300, "beats " + done);
        assertEquals(done.stream().sorted().toList(), done, "beats " + done);
        assertEquals(List.of(), printed);

        cancelled.add("long");
        synchronized (down) {
            down.get().onNext(Taskring.ExecuteRequest.newBuilder().setDispatcherNode("test")
                    .addDeliveries(beating("long", "{\"ms\":60000}", "")).build());
        }
        o = outcomes.poll(10, TimeUnit.SECONDS);
        assertNotNull(o, "no outcome within 10 s");
        assertEquals(OutcomeKind.OUTCOME_KIND_STOPPED, o.getKind(), o.getError());
        // The STOPPED outcome goes as the answer comes; the line, once the interrupted handler ends.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (printed.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(List.of("stopped long cancelled: the task was cancelled"), printed);
        synchronized (down) {
            down.get().onCompleted();
        }
    }

    // ---- the whole mode against ZooKeeper ----

    @Test
    @EnabledIfEnvironmentVariable(named = "TASKRING_IT_ZK", matches = ".+")
    void servesMutualTlsRegistersAndStopsGracefully() throws Exception {
        String hosts = System.getenv("TASKRING_IT_ZK");
        String chroot = "/taskring-java-cli-it-" + UUID.randomUUID();
        CompletableFuture<String> stop = new CompletableFuture<>();
        CompletableFuture<TaskringExecutor> started = new CompletableFuture<>();
        PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        Map<String, String> tls = env("TASKRING_EXECUTOR_TLS_CERT_FILE", cert("server.pem"),
                "TASKRING_EXECUTOR_TLS_KEY_FILE", cert("server.key"), "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", cert("ca.pem"));
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> ExecutorCommand.run(new String[] {
                "--zk", hosts + chroot, "--namespace", "shop", "--types", "panic-once", "--behavior", "panic-once",
                "--instance-id", "java-cli-it"}, tls, o, e, stop, () -> { }, started::complete));
        TaskringExecutor ex = started.get(30, TimeUnit.SECONDS);
        ZooKeeper zk = new ZooKeeper(hosts, 10_000, event -> { });
        try {
            String znode = chroot + "/executors/shop/java-cli-it";
            assertNotNull(zk.exists(znode, false), "not registered");
            assertEquals("", out.toString(StandardCharsets.UTF_8), "printed before any work");
            assertEquals(Map.of("panic-once-1", "retryable_failure", "panic-once-2", "succeeded"),
                    execute(ex.address(), "panic-once", 1, 2));
            await(() -> out.toString(StandardCharsets.UTF_8).lines().count() == 2, () -> "stdout: " + out);
            assertEquals(List.of("panic-once-1 1 retryable_failure", "panic-once-2 2 succeeded"),
                    out.toString(StandardCharsets.UTF_8).lines().sorted().toList());
            stop.complete("test");
            assertEquals(0, exit.get(30, TimeUnit.SECONDS), stderr());
            assertNull(zk.exists(znode, false), "znode left behind");
            assertTrue(stderr().contains("stopped"), stderr());
        } finally {
            stop.complete("test");
            exit.get(30, TimeUnit.SECONDS);
            if (zk.exists(chroot, false) != null) {
                deleteRecursive(zk, chroot);
            }
            zk.close();
        }
    }

    private static void deleteRecursive(ZooKeeper zk, String path) throws Exception {
        for (String child : zk.getChildren(path, false)) {
            deleteRecursive(zk, path + "/" + child);
        }
        zk.delete(path, -1);
    }

    private static void await(BooleanSupplier condition, java.util.function.Supplier<String> what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 10 s: " + what.get());
            }
            Thread.sleep(10);
        }
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
