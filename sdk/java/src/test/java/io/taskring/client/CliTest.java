package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.taskring.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The cross-language CLI against a fake node on loopback. */
class CliTest {
    private final FakeTaskService node = new FakeTaskService("n0");
    private Server server;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void start() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(node).build().start();
    }

    @AfterEach
    void stop() {
        server.shutdownNow();
    }

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String nodes() {
        return "127.0.0.1:" + server.getPort();
    }

    @Test
    void getPrintsOneJsonLine() {
        assertEquals(0, run("get", "--nodes", nodes(), "--task-id", "abc"));
        assertEquals("{\"task_id\":\"abc\",\"state\":\"succeeded\",\"attempts\":1,\"last_error\":\"\",\"waiting\":\"concurrency limit per_type (at most 20 running)\",\"history\":["
                + "{\"state\":\"accepted\",\"at\":\"2030-01-02T03:04:05.678000+00:00\",\"at_epoch_ms\":1893553445678,\"node\":\"n0\",\"attempt\":0,\"detail\":\"\"},"
                + "{\"state\":\"succeeded\",\"at\":\"2030-01-02T03:04:06+00:00\",\"at_epoch_ms\":1893553446000,\"node\":\"n0\",\"attempt\":1,\"detail\":\"\"}]}\n",
                out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void cancelPrintsTheState() {
        assertEquals(0, run("cancel", "--nodes", nodes(), "--task-id", "abc"));
        assertEquals("cancelled\n", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void errorsGoToStderrWithStatusOne() {
        node.failWith = Status.NOT_FOUND.withDescription("task_id: no task abc");
        assertEquals(1, run("get", "--nodes", nodes(), "--task-id", "abc"));
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("NotFoundException: NOT_FOUND: task_id: no task abc"));
        assertEquals(2, run("frobnicate"));
    }

    @Test
    void aFlagTheModeDoesNotKnowIsRefusedNamingIt() {
        assertEquals(2, run("submit", "--nodes", nodes(), "--namespace", "shop", "--type", "ok", "--max-retries", "2"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--max-retries: not a flag of submit"),
                err.toString(StandardCharsets.UTF_8));
        assertEquals("", out.toString(StandardCharsets.UTF_8), "nothing submitted");
        assertEquals(2, run("get", "--nodes", nodes(), "--task-id", "abc", "--delay-ms", "5"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--delay-ms: not a flag of get"));
    }
}
