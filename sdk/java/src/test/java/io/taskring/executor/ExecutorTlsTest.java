package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/**
 * TLS and mutual TLS on the executor's Execute, over real gRPC on loopback with
 * deploy/local/certs.sh's certificates, without ZooKeeper.
 */
class ExecutorTlsTest {
    @TempDir
    static Path certs;

    private final List<TaskringExecutor> executors = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final AtomicInteger ran = new AtomicInteger();

    /** deploy/local/certs.sh into {@code dir}: ca, server, client, other-ca, other-client. */
    static void writeCerts(Path dir) throws Exception {
        Path script = Path.of(System.getProperty("user.dir"), "..", "..", "deploy", "local", "certs.sh").normalize();
        Process p = new ProcessBuilder("bash", script.toString(), dir.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertEquals(0, p.waitFor(), "certs.sh failed");
    }

    @BeforeAll
    static void makeCerts() throws Exception {
        writeCerts(certs);
    }

    @AfterEach
    void cleanUp() {
        channels.forEach(ManagedChannel::shutdownNow);
        executors.forEach(e -> e.stop(Duration.ZERO));
    }

    static Path cert(String name) {
        return certs.resolve(name);
    }

    private TaskringExecutor.Builder executor() {
        return TaskringExecutor.builder().namespace("shop").handler("ok", ctx -> ran.incrementAndGet());
    }

    private TaskringExecutor start(TaskringExecutor.Builder b) {
        TaskringExecutor e = b.build();
        executors.add(e);
        e.start();
        return e;
    }

    private static ChannelCredentials trusting(String ca) throws IOException {
        return TlsChannelCredentials.newBuilder().trustManager(cert(ca).toFile()).build();
    }

    private static ChannelCredentials showing(String ca, String client) throws IOException {
        return TlsChannelCredentials.newBuilder().trustManager(cert(ca).toFile())
                .keyManager(cert(client + ".pem").toFile(), cert(client + ".key").toFile()).build();
    }

    /** One delivery of "ok" over a fresh channel. */
    private Taskring.Outcome execute(TaskringExecutor e, ChannelCredentials creds) {
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), creds).build();
        channels.add(c);
        Taskring.ExecuteRequest req = Taskring.ExecuteRequest.newBuilder().setDispatcherNode("test")
                .addDeliveries(Taskring.Delivery.newBuilder().setAttempt(1).setTimeoutMs(10_000)
                        .setTask(Taskring.Task.newBuilder().setTaskId("t1").setNamespace("shop").setTaskType("ok")
                                .setPayloadJson("{}")))
                .build();
        Taskring.ExecuteResponse r = ExecutorServiceGrpc.newBlockingStub(c).withDeadlineAfter(20, TimeUnit.SECONDS).execute(req);
        assertEquals(1, r.getOutcomesCount());
        return r.getOutcomes(0);
    }

    /** The call fails before any handler runs. */
    private void refused(TaskringExecutor e, ChannelCredentials creds) {
        int before = ran.get();
        StatusRuntimeException err = assertThrows(StatusRuntimeException.class, () -> execute(e, creds));
        assertEquals(Status.Code.UNAVAILABLE, err.getStatus().getCode(), err.toString());
        assertEquals(before, ran.get(), "the handler ran for a refused connection");
    }

    @Test
    void tlsServesAClientThatTrustsTheCaAndNoOtherClient() throws Exception {
        TaskringExecutor e = start(executor().tls(cert("server.pem"), cert("server.key")));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, trusting("ca.pem")).getKind());
        assertEquals(1, ran.get());
        refused(e, InsecureChannelCredentials.create());
        refused(e, trusting("other-ca.pem"));
        // TLS only: a client certificate is not asked for, and one shown does not hurt.
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, showing("ca.pem", "other-client")).getKind());
    }

    @Test
    void mutualTlsRequiresAClientCertificateTheClientCaSigned() throws Exception {
        TaskringExecutor e = start(executor().tls(cert("server.pem"), cert("server.key"), cert("ca.pem")));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, showing("ca.pem", "client")).getKind());
        assertEquals(1, ran.get());
        refused(e, trusting("ca.pem"));
        refused(e, showing("ca.pem", "other-client"));
        refused(e, InsecureChannelCredentials.create());
    }

    @Test
    void withoutTlsTheExecutorStaysPlaintext() throws Exception {
        TaskringExecutor e = start(executor().tlsFromEnv(Map.of()));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, InsecureChannelCredentials.create()).getKind());
        refused(e, trusting("ca.pem"));
    }

    /** TLS 1.0 and 1.1 are refused, 1.2 and 1.3 served; openssl s_client offers one version at a time. */
    @Test
    void tlsOnePointTwoAtLeast() throws Exception {
        assumeTrue(run("openssl", "version").exit == 0, "no openssl");
        TaskringExecutor e = start(executor().tls(cert("server.pem"), cert("server.key")));
        for (String v : List.of("-tls1", "-tls1_1")) {
            Result r = sClient(e, v);
            assertNotEquals(0, r.exit, v + " was accepted:\n" + r.output);
            assertTrue(r.output.contains("protocol version") || r.output.contains("no protocols available"), r.output);
        }
        for (String v : List.of("-tls1_2", "-tls1_3")) {
            Result r = sClient(e, v);
            assertEquals(0, r.exit, v + " was refused:\n" + r.output);
            assertTrue(r.output.contains("Verify return code: 0 (ok)"), r.output);
        }
    }

    private record Result(int exit, String output) {}

    private static Result sClient(TaskringExecutor e, String version) throws Exception {
        return run("openssl", "s_client", "-connect", e.address(), version, "-cipher", "DEFAULT@SECLEVEL=0",
                "-CAfile", cert("ca.pem").toString(), "-alpn", "h2");
    }

    private static Result run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close(); // s_client: EOF on stdin ends the session after the handshake
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS), "openssl hangs");
        return new Result(p.exitValue(), out);
    }

    // ---- configuration errors: each names the option; nothing listens ----

    private static IllegalArgumentException badConfig(TaskringExecutor.Builder b) {
        return assertThrows(IllegalArgumentException.class, b::build);
    }

    @Test
    void certWithoutKeyAndTheReverseNameTheMissingOne() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> executor().tls(cert("server.pem"), null));
        assertTrue(e.getMessage().startsWith("tls_key_file: "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> executor().tls(null, cert("server.key")));
        assertTrue(e.getMessage().startsWith("tls_cert_file: "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> executor().tls(null, null, cert("ca.pem")));
        assertTrue(e.getMessage().startsWith("tls_client_ca_file: "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> executor().tls(null, null));
        assertTrue(e.getMessage().startsWith("tls_cert_file: "), e.getMessage());
    }

    @Test
    void anUnreadableFileNamesTheOptionAndThePath() {
        Path missing = certs.resolve("missing.pem");
        IllegalArgumentException e = badConfig(executor().tls(missing, cert("server.key")));
        assertTrue(e.getMessage().startsWith("tls_cert_file: cannot read " + missing), e.getMessage());
        e = badConfig(executor().tls(cert("server.pem"), missing));
        assertTrue(e.getMessage().startsWith("tls_key_file: cannot read " + missing), e.getMessage());
        e = badConfig(executor().tls(cert("server.pem"), cert("server.key"), missing));
        assertTrue(e.getMessage().startsWith("tls_client_ca_file: cannot read " + missing), e.getMessage());
        e = badConfig(executor().tls(certs, cert("server.key"))); // a directory
        assertTrue(e.getMessage().startsWith("tls_cert_file: cannot read " + certs), e.getMessage());
    }

    @Test
    void aFileThatIsNotPemNamesTheOptionAndThePath(@TempDir Path dir) throws Exception {
        Path junk = Files.writeString(dir.resolve("junk.txt"), "not a certificate\n");
        IllegalArgumentException e = badConfig(executor().tls(junk, cert("server.key")));
        assertTrue(e.getMessage().startsWith("tls_cert_file: " + junk), e.getMessage());
        e = badConfig(executor().tls(cert("server.pem"), junk));
        assertTrue(e.getMessage().startsWith("tls_key_file: " + junk), e.getMessage());
        e = badConfig(executor().tls(cert("server.pem"), cert("server.key"), junk));
        assertTrue(e.getMessage().startsWith("tls_client_ca_file: " + junk), e.getMessage());
        // Swapped: a key where the certificate goes, a certificate where the key goes.
        e = badConfig(executor().tls(cert("server.key"), cert("server.pem")));
        assertTrue(e.getMessage().startsWith("tls_cert_file: "), e.getMessage());
        // A PEM certificate block with a broken body.
        Path broken = Files.writeString(dir.resolve("broken.pem"),
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        e = badConfig(executor().tls(broken, cert("server.key")));
        assertTrue(e.getMessage().startsWith("tls_cert_file: " + broken + " is not a PEM certificate"), e.getMessage());
        // SEC1 "EC PRIVATE KEY", which grpc-java cannot read: said so, with the fix.
        Path sec1 = dir.resolve("sec1.key");
        assertEquals(0, new ProcessBuilder("openssl", "ec", "-in", cert("server.key").toString(), "-out", sec1.toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor());
        e = badConfig(executor().tls(cert("server.pem"), sec1));
        assertTrue(e.getMessage().startsWith("tls_key_file: " + sec1 + " is a EC PRIVATE KEY"), e.getMessage());
        assertTrue(e.getMessage().contains("openssl pkcs8 -topk8 -nocrypt"), e.getMessage());
    }

    @Test
    void aBadFileStartsNothing() throws Exception {
        TaskringExecutor.Builder b = executor().listen("127.0.0.1", 0).tls(certs.resolve("missing.pem"), cert("server.key"));
        badConfig(b);
        // The builder is still usable once fixed.
        TaskringExecutor e = start(b.tls(cert("server.pem"), cert("server.key")));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, trusting("ca.pem")).getKind());
    }

    // ---- the environment helper ----

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void tlsFromEnvServesMutualTls() throws Exception {
        TaskringExecutor e = start(executor().tlsFromEnv(env(
                "TASKRING_EXECUTOR_TLS_CERT_FILE", cert("server.pem").toString(),
                "TASKRING_EXECUTOR_TLS_KEY_FILE", cert("server.key").toString(),
                "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", cert("ca.pem").toString())));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, showing("ca.pem", "client")).getKind());
        refused(e, trusting("ca.pem"));
    }

    @Test
    void tlsFromEnvServesTlsWithoutAClientCa() throws Exception {
        TaskringExecutor e = start(executor().tlsFromEnv(env(
                "TASKRING_EXECUTOR_TLS_CERT_FILE", cert("server.pem").toString(),
                "TASKRING_EXECUTOR_TLS_KEY_FILE", cert("server.key").toString(),
                "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", "")));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(e, trusting("ca.pem")).getKind());
    }

    @Test
    void tlsFromEnvNamesTheVariableThatIsMissingOrBad() {
        String pem = cert("server.pem").toString();
        String key = cert("server.key").toString();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> executor().tlsFromEnv(env("TASKRING_EXECUTOR_TLS_CERT_FILE", pem)));
        assertTrue(e.getMessage().startsWith("TASKRING_EXECUTOR_TLS_KEY_FILE: "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> executor().tlsFromEnv(env("TASKRING_EXECUTOR_TLS_KEY_FILE", key)));
        assertTrue(e.getMessage().startsWith("TASKRING_EXECUTOR_TLS_CERT_FILE: "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> executor().tlsFromEnv(env("TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE", pem)));
        assertTrue(e.getMessage().startsWith("TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE: "), e.getMessage());
        e = badConfig(executor().tlsFromEnv(env("TASKRING_EXECUTOR_TLS_CERT_FILE", pem,
                "TASKRING_EXECUTOR_TLS_KEY_FILE", "/nonexistent/server.key")));
        assertTrue(e.getMessage().startsWith("TASKRING_EXECUTOR_TLS_KEY_FILE: cannot read /nonexistent/server.key"),
                e.getMessage());
    }
}
