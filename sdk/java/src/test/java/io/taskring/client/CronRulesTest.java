package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.taskring.errors.AlreadyExistsException;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.NotFoundException;
import io.taskring.errors.PermissionDeniedException;
import io.taskring.errors.UnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** client.cron() against two in-process fake nodes' CronService: the calls, the token, the errors, the retries. */
class CronRulesTest {
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /** Records the authorization header and the method of every call. */
    static final class Headers implements ServerInterceptor {
        final List<String> seen = Collections.synchronizedList(new ArrayList<>());
        final List<String> methods = Collections.synchronizedList(new ArrayList<>());

        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            seen.add(String.valueOf(headers.get(AUTHORIZATION)));
            methods.add(call.getMethodDescriptor().getFullMethodName());
            return next.startCall(call, headers);
        }
    }

    private final List<FakeCronService> nodes = List.of(new FakeCronService(), new FakeCronService());
    private final Headers headers = new Headers();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private TaskringClient client;

    @BeforeEach
    void start() throws Exception {
        for (FakeCronService node : nodes) {
            String name = InProcessServerBuilder.generateName();
            servers.add(InProcessServerBuilder.forName(name).directExecutor()
                    .addService(ServerInterceptors.intercept(node, headers)).build().start());
            channels.add(InProcessChannelBuilder.forName(name).directExecutor().build());
        }
        client = TaskringClient.builder().channels(channels).token("trk_cron-secret").rpcTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop() {
        client.close();
        channels.forEach(ManagedChannel::shutdownNow);
        servers.forEach(Server::shutdownNow);
    }

    private static CronRuleSpec nightly() {
        return CronRuleSpec.builder("billing", "nightly", "reconcile", "0 0 * * *").timeZone("Asia/Singapore")
                .payload(Map.of("scope", "all")).timeout(Duration.ofSeconds(30)).maxRetries(2).build();
    }

    @Test
    void createSendsTheRuleAndReturnsItAsStored() {
        CronRuleInfo info = client.blocking().cron().create(nightly());
        Taskring.PutCronRuleRequest sent = (Taskring.PutCronRuleRequest) nodes.get(0).requests.get(0);
        assertEquals(nightly().toWire(), sent.getRule());
        assertEquals("latest", info.spec().catchUp(), "the server's normalised rule, not the spec sent");
        assertEquals(Optional.of(Instant.parse(FakeCronService.NEXT_FIRE)), info.nextFireTime());
        assertEquals(Optional.of(Duration.ofSeconds(30)), info.spec().timeout());
        assertEquals(List.of("Bearer trk_cron-secret"), headers.seen, "cron calls carry the client's token");
    }

    @Test
    void everyCallReachesItsRpc() {
        BlockingCronRules cron = client.blocking().cron();
        nodes.forEach(n -> n.rules.put("billing/nightly", nightly().toWire()));
        nodes.forEach(n -> n.rules.put("other/x", CronRuleSpec.builder("other", "x", "t", "* * * * *").build().toWire()));
        assertEquals("nightly", cron.get("billing", "nightly").spec().name());
        assertEquals(List.of("nightly"), cron.list("billing").stream().map(r -> r.spec().name()).toList());
        assertEquals(List.of("billing", "other"), cron.list("").stream().map(r -> r.spec().namespace()).toList());
        CronRuleInfo paused = cron.pause("billing", "nightly");
        assertTrue(paused.paused());
        assertEquals(Optional.empty(), paused.nextFireTime());
        CronRuleInfo resumed = client.cron().resume("billing", "nightly").join();
        assertEquals(Optional.of(Instant.parse(FakeCronService.NEXT_FIRE)), resumed.nextFireTime());
        CronRuleInfo updated = cron.update(nightly().toBuilder().schedule("30 1 * * *").build());
        assertEquals("30 1 * * *", updated.spec().schedule());
        assertEquals("nightly", cron.delete("billing", "nightly").spec().name());
        assertEquals(List.of("GetCronRule", "ListCronRules", "ListCronRules", "PauseCronRule", "ResumeCronRule",
                        "UpdateCronRule", "DeleteCronRule"),
                headers.methods.stream().map(m -> m.substring("taskring.v1.CronService/".length())).toList());
    }

    @Test
    void refusalsArriveAsTheTypedExceptions() {
        BlockingCronRules cron = client.blocking().cron();
        cron.create(nightly());
        cron.create(nightly().toBuilder().schedule("1 * * * *").build()); // round robin: now on both nodes
        AlreadyExistsException dup = assertThrows(AlreadyExistsException.class, () -> cron.create(nightly()));
        assertTrue(dup.getMessage().contains("already exists"), dup.getMessage());
        InvalidArgumentException bad = assertThrows(InvalidArgumentException.class,
                () -> cron.create(nightly().toBuilder().timeZone("Mars/Olympus_Mons").build()));
        assertEquals("rule.time_zone", bad.field());
        assertThrows(NotFoundException.class, () -> cron.get("billing", "no-such-rule"));
        assertThrows(NotFoundException.class, () -> cron.delete("billing", "no-such-rule"));
        assertThrows(NotFoundException.class, () -> cron.update(CronRuleSpec.builder("billing", "no-such-rule", "t",
                "* * * * *").timeZone("UTC").build()));
        nodes.forEach(n -> n.failWith = Status.PERMISSION_DENIED.withDescription("token may not write cron rules"));
        CompletionException async = assertThrows(CompletionException.class, () -> client.cron().list("billing").join());
        assertInstanceOf(PermissionDeniedException.class, async.getCause());
    }

    @Test
    void onlyReadsAreTriedAgainOnTheNextNode() {
        BlockingCronRules cron = client.blocking().cron();
        nodes.get(0).failWith = Status.UNAVAILABLE.withDescription("draining");
        nodes.get(1).rules.put("billing/nightly", nightly().toWire());
        // Call 1 starts on node 0 (round robin), which answers UNAVAILABLE: a get goes on to node 1.
        assertEquals("nightly", cron.get("billing", "nightly").spec().name());
        assertEquals(List.of(1, 1), nodes.stream().map(n -> n.calls.get()).toList());
        // Call 2 starts on node 1.
        assertEquals(1, cron.list("billing").size());
        // Call 3 starts on node 0 again: a create is not repeated on node 1 (it may have been written).
        assertThrows(UnavailableException.class, () -> cron.create(CronRuleSpec.builder("billing", "other", "t", "* * * * *").build()));
        assertEquals(List.of(2, 2), nodes.stream().map(n -> n.calls.get()).toList());
        assertEquals(Collections.emptySet(), nodes.get(1).rules.keySet().stream()
                .filter(k -> k.endsWith("/other")).collect(java.util.stream.Collectors.toSet()));
    }
}
