package io.taskring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.taskring.executor.TaskringExecutor;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/** {@code executor --behavior graph-results}, without ZooKeeper: its line per run, its result, its failure. */
class GraphResultsBehaviorTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private TaskringExecutor executor;
    private ManagedChannel channel;

    @AfterEach
    void cleanUp() {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (executor != null) {
            executor.stop(Duration.ZERO);
        }
    }

    private static Taskring.Delivery delivery(String id, String type, String payload, boolean keep,
            Taskring.ParentResult... parents) {
        return Taskring.Delivery.newBuilder().setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop")
                .setTaskType(type).setPayloadJson(payload)).setAttempt(1).setTimeoutMs(10_000).setKeepResult(keep)
                .addAllParentResults(List.of(parents)).build();
    }

    private static Taskring.ParentResult parent(String key, String outcome, String resultJson) {
        return Taskring.ParentResult.newBuilder().setKey(key).setTaskId("id-" + key).setOutcome(outcome)
                .setResultJson(resultJson).build();
    }

    @Test
    void itPrintsWhatItSawKeepsItAndFailsWhenThePayloadSaysSo() throws Exception {
        List<String> printed = new CopyOnWriteArrayList<>();
        ExecutorCommand.Args a = ExecutorCommand.parse(new String[] {"--zk", "unused:1", "--namespace", "shop",
                "--types", "ship,email,close", "--behavior", "graph-results"}, Map.of());
        executor = ExecutorCommand.builder(a, o -> { }, printed::add).zookeeper(null).build();
        executor.start();
        channel = Grpc.newChannelBuilder(executor.address(), InsecureChannelCredentials.create()).build();
        String charge = "{\"type\":\"charge\",\"saw\":{}}";
        Taskring.ExecuteResponse r = ExecutorServiceGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS)
                .execute(Taskring.ExecuteRequest.newBuilder().setDispatcherNode("test")
                        .addDeliveries(delivery("t-ship", "ship", "{}", true, parent("charge", "succeeded", charge)))
                        .addDeliveries(delivery("t-email", "email", "{\"fail\":true}", true,
                                parent("charge", "succeeded", charge)))
                        .addDeliveries(delivery("t-close", "close", "{}", false,
                                parent("ship", "succeeded", "{\"type\":\"ship\"}"), parent("email", "ignored", "")))
                        .build());
        Map<String, Taskring.Outcome> o = new HashMap<>();
        r.getOutcomesList().forEach(x -> o.put(x.getTaskId(), x));

        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("t-ship").getKind(), o.get("t-ship").getError());
        assertEquals(JSON.readTree("{\"type\":\"ship\",\"saw\":{\"charge\":{\"outcome\":\"succeeded\",\"result\":" + charge
                + "}}}"), JSON.readTree(o.get("t-ship").getResultJson()));
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("t-email").getKind());
        assertEquals("", o.get("t-close").getResultJson(), "not kept: nothing sent");

        Map<String, String> lines = new HashMap<>();
        for (String line : printed) {
            lines.put(JSON.readTree(line).get("graph_run").asText(), line);
        }
        assertEquals(3, lines.size(), "one line per run, the failing one too: " + printed);
        assertEquals("{\"graph_run\":\"close\",\"task_id\":\"t-close\",\"parents\":{"
                + "\"ship\":{\"outcome\":\"succeeded\",\"result\":{\"type\":\"ship\"}},"
                + "\"email\":{\"outcome\":\"ignored\",\"result\":null}}}", lines.get("close"));
    }
}
