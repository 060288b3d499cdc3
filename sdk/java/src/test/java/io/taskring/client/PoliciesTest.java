package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.taskring.errors.FailedPreconditionException;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.NotFoundException;
import io.taskring.errors.PermissionDeniedException;
import io.taskring.errors.ProtocolException;
import io.taskring.errors.UnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** client.policies() against two in-process fake nodes' PolicyService: the calls, the token, the errors, the retries. */
class PoliciesTest {
    private static final String LIMITS = "{\"concurrency\": {\"per_type\": 20}, \"retry_cap\": 5}";

    private final List<FakePolicyService> nodes = List.of(new FakePolicyService(), new FakePolicyService());
    private final CronRulesTest.Headers headers = new CronRulesTest.Headers();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private TaskringClient client;

    @BeforeEach
    void start() throws Exception {
        for (FakePolicyService node : nodes) {
            String name = InProcessServerBuilder.generateName();
            servers.add(InProcessServerBuilder.forName(name).directExecutor()
                    .addService(ServerInterceptors.intercept(node, headers)).build().start());
            channels.add(InProcessChannelBuilder.forName(name).directExecutor().build());
        }
        client = TaskringClient.builder().channels(channels).token("trk_policy-secret").rpcTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop() {
        client.close();
        channels.forEach(ManagedChannel::shutdownNow);
        servers.forEach(Server::shutdownNow);
    }

    private static ObjectNode json(String text) throws Exception {
        return (ObjectNode) new ObjectMapper().readTree(text);
    }

    @Test
    void putSendsCompactJsonAndTheReasonAndReturnsTheEntryInEffect() throws Exception {
        TypePolicy p = client.blocking().policies().put("shop", "export", LIMITS, "raise the export limit");
        Taskring.PutTypePolicyRequest sent = (Taskring.PutTypePolicyRequest) nodes.get(0).requests.get(0);
        assertEquals("{\"concurrency\":{\"per_type\":20},\"retry_cap\":5}", sent.getPolicyJson());
        assertEquals("raise the export limit", sent.getReason());
        assertFalse(sent.hasIfRevision(), "no if_revision unless given");
        assertEquals(json(LIMITS), p.policy());
        assertEquals("api", p.source());
        assertEquals(1, p.revision());
        assertEquals("ops-token", p.updatedBy());
        assertEquals(Optional.of(Instant.parse(FakePolicyService.UPDATED)), p.updatedAt());
        assertEquals(Optional.empty(), p.filePolicy());
        assertEquals(List.of("Bearer trk_policy-secret"), headers.seen, "policy calls carry the client's token");
    }

    @Test
    void aPolicyMayBeAMapOrAJacksonObject() throws Exception {
        BlockingPolicies policies = client.blocking().policies();
        policies.put("shop", "a", Map.of("retry_cap", 3), "r");
        policies.put("shop", "b", json("{\"retry_cap\": 4}"), "r");
        assertEquals("{\"retry_cap\":3}", ((Taskring.PutTypePolicyRequest) nodes.get(0).requests.get(0)).getPolicyJson());
        assertEquals("{\"retry_cap\":4}", ((Taskring.PutTypePolicyRequest) nodes.get(1).requests.get(0)).getPolicyJson());
    }

    @Test
    void aPolicyThatIsNotAJsonObjectIsRefusedBeforeAnyCall() throws Exception {
        BlockingPolicies blocking = client.blocking().policies();
        Policies async = client.policies();
        for (Object bad : new Object[] {"[1, 2]", "\"retry_cap\"", "{not json", "", "null", List.of(1), 42,
                new ObjectMapper().readTree("[]"), null}) {
            InvalidTaskSpecException e = assertThrows(InvalidTaskSpecException.class,
                    () -> blocking.put("shop", "export", bad, "r"), String.valueOf(bad));
            assertEquals("policy_json", e.field());
            assertThrows(InvalidTaskSpecException.class, () -> async.put("shop", "export", bad, "r", 0));
        }
        assertEquals(0, nodes.get(0).calls.get() + nodes.get(1).calls.get(), "nothing sent");
    }

    @Test
    void everyCallReachesItsRpc() throws Exception {
        BlockingPolicies policies = client.blocking().policies();
        nodes.forEach(n -> n.file.put("shop/import", "{\"retry_cap\":2}"));
        nodes.forEach(n -> n.file.put("other/x", "{}"));
        TypePolicy none = policies.get("shop", "nothing-declared");
        assertEquals("none", none.source());
        assertEquals(json("{}"), none.policy());
        TypePolicy fromFile = client.policies().get("shop", "import").join();
        assertEquals("file", fromFile.source());
        assertEquals(Optional.of(json("{\"retry_cap\":2}")), fromFile.filePolicy());
        assertEquals(List.of("import"), policies.list("shop").stream().map(TypePolicy::taskType).toList());
        assertEquals(List.of("other", "shop"), policies.list().stream().map(TypePolicy::namespace).toList());
        nodes.forEach(n -> n.api.put("shop/import", Taskring.TypePolicy.newBuilder().setNamespace("shop")
                .setTaskType("import").setPolicyJson("{\"retry_cap\":9}").setSource("api").setRevision(3).build()));
        assertEquals(4, policies.put("shop", "import", "{\"retry_cap\":1}", "tighter", 3).revision());
        // Round robin: the put went to node 0, the delete goes to node 1, still at revision 3.
        TypePolicy deleted = policies.delete("shop", "import", "back to the file", 3);
        assertEquals("file", deleted.source());
        assertEquals(List.of("GetTypePolicy", "GetTypePolicy", "ListTypePolicies", "ListTypePolicies", "PutTypePolicy",
                        "DeleteTypePolicy"),
                headers.methods.stream().map(m -> m.substring("taskring.v1.PolicyService/".length())).toList());
        List<Object> sent = new ArrayList<>(nodes.get(0).requests);
        sent.addAll(nodes.get(1).requests);
        Taskring.PutTypePolicyRequest put = sent.stream().filter(r -> r instanceof Taskring.PutTypePolicyRequest)
                .map(r -> (Taskring.PutTypePolicyRequest) r).findFirst().orElseThrow();
        assertTrue(put.hasIfRevision());
        assertEquals(3, put.getIfRevision());
        Taskring.DeleteTypePolicyRequest del = sent.stream().filter(r -> r instanceof Taskring.DeleteTypePolicyRequest)
                .map(r -> (Taskring.DeleteTypePolicyRequest) r).findFirst().orElseThrow();
        assertEquals("back to the file", del.getReason());
        assertEquals(3, del.getIfRevision());
    }

    @Test
    void ifRevisionZeroIsSentAsSet() {
        client.blocking().policies().put("shop", "export", LIMITS, "first", 0);
        Taskring.PutTypePolicyRequest sent = (Taskring.PutTypePolicyRequest) nodes.get(0).requests.get(0);
        assertTrue(sent.hasIfRevision(), "0 means: no API entry yet");
        assertEquals(0, sent.getIfRevision());
    }

    @Test
    void refusalsArriveAsTheTypedExceptions() {
        BlockingPolicies policies = client.blocking().policies();
        InvalidArgumentException bad = assertThrows(InvalidArgumentException.class,
                () -> policies.put("shop", "export", "{\"concurrency\": {\"per_type\": 0}}", "r"));
        assertEquals("policy_json.concurrency.per_type", bad.field());
        InvalidArgumentException noReason = assertThrows(InvalidArgumentException.class,
                () -> policies.put("shop", "export", LIMITS, ""));
        assertEquals("reason", noReason.field());
        policies.put("shop", "export", LIMITS, "r");
        policies.put("shop", "export", LIMITS, "r"); // round robin: now on both nodes
        assertThrows(FailedPreconditionException.class, () -> policies.put("shop", "export", LIMITS, "r", 7));
        assertThrows(FailedPreconditionException.class, () -> policies.delete("shop", "export", "r", 0));
        assertThrows(NotFoundException.class, () -> policies.delete("shop", "no-api-entry", "r"));
        nodes.forEach(n -> n.failWith = Status.PERMISSION_DENIED.withDescription("token may not write policies"));
        CompletionException async = assertThrows(CompletionException.class,
                () -> client.policies().put("shop", "export", LIMITS, "r").join());
        assertInstanceOf(PermissionDeniedException.class, async.getCause());
    }

    @Test
    void onlyReadsAreTriedAgainOnTheNextNode() {
        BlockingPolicies policies = client.blocking().policies();
        nodes.get(0).failWith = Status.UNAVAILABLE.withDescription("draining");
        nodes.get(1).file.put("shop/export", "{}");
        // Call 1 starts on node 0 (round robin), which answers UNAVAILABLE: a get goes on to node 1.
        assertEquals("file", policies.get("shop", "export").source());
        assertEquals(List.of(1, 1), nodes.stream().map(n -> n.calls.get()).toList());
        // Call 2 starts on node 1.
        assertEquals(1, policies.list("shop").size());
        // Call 3 starts on node 0 again: a put is not repeated on node 1 (it may have been written).
        assertThrows(UnavailableException.class, () -> policies.put("shop", "export", LIMITS, "r"));
        assertEquals(List.of(2, 2), nodes.stream().map(n -> n.calls.get()).toList());
        assertTrue(nodes.get(1).api.isEmpty());
    }

    @Test
    void fromWireReadsEmptyTextAsNone() throws Exception {
        TypePolicy p = TypePolicy.fromWire(Taskring.TypePolicy.newBuilder().setNamespace("shop").setTaskType("t")
                .setSource("none").build());
        assertEquals(json("{}"), p.policy(), "an empty policy_json is the empty object");
        assertEquals(0, p.revision());
        assertEquals("", p.updatedBy());
        assertEquals(Optional.empty(), p.updatedAt(), "an empty updated_at is none");
        assertEquals(Optional.empty(), p.filePolicy(), "an empty file_policy_json is none");

        TypePolicy full = TypePolicy.fromWire(Taskring.TypePolicy.newBuilder().setNamespace("shop").setTaskType("t")
                .setPolicyJson("{\"retry_cap\":5}").setSource("api").setRevision(9_000_000_000L).setUpdatedBy("ops")
                .setUpdatedAt("2030-01-02T11:04:05.5+08:00").setFilePolicyJson("{\"retry_cap\":2}").build());
        assertEquals(9_000_000_000L, full.revision(), "int64");
        assertEquals(Optional.of(Instant.parse("2030-01-02T03:04:05.5Z")), full.updatedAt());
        assertEquals(Optional.of(json("{\"retry_cap\":2}")), full.filePolicy());
        full.policy().put("retry_cap", 99);
        assertEquals(5, full.policy().get("retry_cap").asInt(), "each accessor returns a copy");

        assertThrows(ProtocolException.class, () -> TypePolicy.fromWire(Taskring.TypePolicy.newBuilder()
                .setPolicyJson("[1]").build()), "the server's fault, not the caller's");
        assertThrows(ProtocolException.class, () -> TypePolicy.fromWire(Taskring.TypePolicy.newBuilder()
                .setUpdatedAt("yesterday").build()));
    }
}
