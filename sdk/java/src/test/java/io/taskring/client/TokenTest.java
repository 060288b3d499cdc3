package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.taskring.TaskState;
import io.taskring.cli.Main;
import io.taskring.errors.PermissionDeniedException;
import io.taskring.errors.RpcException;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The token (authorization: Bearer) and TLS options, against fake nodes that check them. */
class TokenTest {
    private static final String SECRET = "trk_java-test-secret-never-shown";
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /** Records the authorization header of every call; refuses one without SECRET, as a node with a tokens file does. */
    static final class Checker implements ServerInterceptor {
        final List<String> seen = Collections.synchronizedList(new ArrayList<>());

        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            String got = headers.get(AUTHORIZATION);
            seen.add(String.valueOf(got));
            if (!("Bearer " + SECRET).equals(got)) {
                call.close(Status.UNAUTHENTICATED.withDescription(got == null
                        ? "authorization: a token is required" : "authorization: the token is not known to this node"), new Metadata());
                return new ServerCall.Listener<>() {};
            }
            return next.startCall(call, headers);
        }
    }

    private final Checker checker = new Checker();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void stop() {
        channels.forEach(ManagedChannel::shutdownNow);
        servers.forEach(Server::shutdownNow);
    }

    private ManagedChannel inProcess() throws Exception {
        String name = InProcessServerBuilder.generateName();
        servers.add(InProcessServerBuilder.forName(name).directExecutor()
                .addService(ServerInterceptors.intercept(new FakeTaskService("n0"), checker)).build().start());
        ManagedChannel c = InProcessChannelBuilder.forName(name).directExecutor().build();
        channels.add(c);
        return c;
    }

    @Test
    void everyCallCarriesTheBearerToken() throws Exception {
        try (TaskringClient client = TaskringClient.builder().channels(List.of(inProcess())).token(SECRET).build()) {
            client.blocking().submit(TaskSpec.builder("shop", "t").build());
            client.blocking().submitBatch(List.of(TaskSpec.builder("shop", "t").build()));
            client.blocking().get("t1");
            assertEquals(TaskState.CANCELLED, client.blocking().cancel("t1"));
        }
        assertEquals(Collections.nCopies(4, "Bearer " + SECRET), checker.seen);
    }

    @Test
    void withoutATokenTheRefusalIsPermissionDeniedAndAWrongSecretIsNotInTheError() throws Exception {
        ManagedChannel channel = inProcess();
        try (TaskringClient none = TaskringClient.builder().channels(List.of(channel)).build()) {
            RpcException e = assertThrows(RpcException.class, () -> none.blocking().get("t1"));
            assertInstanceOf(PermissionDeniedException.class, e);
            assertEquals(Status.Code.UNAUTHENTICATED, e.code());
        }
        String wrong = "trk_wrong-secret-of-another-node";
        try (TaskringClient bad = TaskringClient.builder().channels(List.of(channel)).token(wrong).build()) {
            RpcException e = assertThrows(RpcException.class, () -> bad.blocking().get("t1"));
            assertFalse(e.toString().contains(wrong), e.toString());
        }
        assertEquals(List.of("null", "Bearer " + wrong), checker.seen);
    }

    @Test
    void aBadTokenIsRefusedWithoutRepeatingIt() {
        assertThrows(IllegalArgumentException.class, () -> TaskringClient.builder().token(""));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TaskringClient.builder().token("trk_has a space"));
        assertFalse(e.getMessage().contains("trk_has"), e.getMessage());
        assertFalse(new BearerToken(SECRET).toString().contains(SECRET));
        assertThrows(IllegalArgumentException.class, () -> TaskringClient.builder().tls(Path.of("ca.pem"), Path.of("c.pem"), null));
    }

    /** Mutual TLS with deploy/local/certs.sh's certificates: their PKCS#8 keys are what grpc-java reads. */
    @Test
    void mutualTlsAndTheTokenOverARealTlsListener(@TempDir Path dir) throws Exception {
        Path script = Path.of(System.getProperty("user.dir"), "..", "..", "deploy", "local", "certs.sh").normalize();
        Process p = new ProcessBuilder("bash", script.toString(), dir.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertEquals(0, p.waitFor(), "certs.sh failed");
        File f = dir.toFile();
        TlsServerCredentials.Builder creds = TlsServerCredentials.newBuilder()
                .keyManager(new File(f, "server.pem"), new File(f, "server.key"))
                .trustManager(new File(f, "ca.pem"))
                .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
        Server server = Grpc.newServerBuilderForPort(0, creds.build())
                .addService(ServerInterceptors.intercept(new FakeTaskService("tls"), checker)).build().start();
        servers.add(server);
        String node = "127.0.0.1:" + server.getPort();
        try (TaskringClient client = TaskringClient.builder().nodes(node).token(SECRET).rpcTimeout(Duration.ofSeconds(10))
                .tls(dir.resolve("ca.pem"), dir.resolve("client.pem"), dir.resolve("client.key")).build()) {
            assertEquals(TaskState.SUCCEEDED, client.blocking().get("t1").state());
        }
        assertEquals(List.of("Bearer " + SECRET), checker.seen);
        // The CLI takes the same from the environment.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"submit", "--nodes", node, "--namespace", "shop", "--type", "t", "--task-id", "cli-1"},
                Map.of("TASKRING_TOKEN", SECRET, "TASKRING_CA_FILE", dir.resolve("ca.pem").toString(),
                        "TASKRING_CLIENT_CERT_FILE", dir.resolve("client.pem").toString(),
                        "TASKRING_CLIENT_KEY_FILE", dir.resolve("client.key").toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        assertEquals("cli-1\n", out.toString(StandardCharsets.UTF_8));
        // Without the token the CLI exits 1, the refusal on stderr.
        err.reset();
        code = Main.run(new String[] {"get", "--nodes", node, "--task-id", "x"},
                Map.of("TASKRING_CA_FILE", dir.resolve("ca.pem").toString(),
                        "TASKRING_CLIENT_CERT_FILE", dir.resolve("client.pem").toString(),
                        "TASKRING_CLIENT_KEY_FILE", dir.resolve("client.key").toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(1, code);
        assertEquals("PermissionDeniedException: UNAUTHENTICATED: authorization: a token is required",
                err.toString(StandardCharsets.UTF_8).strip());
        assertFalse(Files.readString(dir.resolve("client.key")).contains("EC PRIVATE KEY"));
        server.shutdown().awaitTermination(5, TimeUnit.SECONDS);
    }
}
