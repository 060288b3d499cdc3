package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.taskring.errors.TaskStoppedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.HeartbeatVerdict;
import taskring.v1.Taskring.OutcomeKind;

/**
 * Heartbeats, against a fake dispatcher that opens the Work stream to the real executor over
 * loopback: what goes up the stream, and what the answers coming down do to the handler.
 */
class HeartbeatTest {
    private static final long WAIT_S = 10;

    private final List<TaskringExecutor> executors = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        channels.forEach(ManagedChannel::shutdownNow);
        executors.forEach(e -> e.stop(Duration.ZERO));
    }

    private TaskringExecutor start(TaskringExecutor.Builder b) {
        TaskringExecutor e = b.build();
        executors.add(e);
        e.start();
        return e;
    }

    /** The dispatcher's end of one Work stream: what came up it, and a way to send down it. */
    private final class Dispatcher implements StreamObserver<Taskring.ExecuteResponse> {
        final LinkedBlockingQueue<Taskring.Outcome> outcomes = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<Taskring.Heartbeat> heartbeats = new LinkedBlockingQueue<>();
        final CompletableFuture<String> end = new CompletableFuture<>();
        final StreamObserver<Taskring.ExecuteRequest> down;

        Dispatcher(TaskringExecutor e) {
            ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
            channels.add(c);
            down = ExecutorServiceGrpc.newStub(c).work(this);
        }

        @Override
        public void onNext(Taskring.ExecuteResponse r) {
            heartbeats.addAll(r.getHeartbeatsList());
            outcomes.addAll(r.getOutcomesList());
        }

        @Override
        public void onError(Throwable t) {
            end.complete(t.toString());
        }

        @Override
        public void onCompleted() {
            end.complete("completed");
        }

        void deliver(Taskring.Delivery... ds) {
            down.onNext(Taskring.ExecuteRequest.newBuilder().addAllDeliveries(List.of(ds)).setDispatcherNode("fake").build());
        }

        /** The answer to {@code hb}, as the dispatcher sends it: a message without deliveries. */
        void answer(Taskring.Heartbeat hb, HeartbeatVerdict verdict, String reason) {
            answer(hb.getTaskId(), hb.getAttempt(), hb.getSequence(), verdict, reason);
        }

        void answer(String taskId, int attempt, long sequence, HeartbeatVerdict verdict, String reason) {
            down.onNext(Taskring.ExecuteRequest.newBuilder().addHeartbeatAnswers(Taskring.HeartbeatAnswer.newBuilder()
                    .setTaskId(taskId).setAttempt(attempt).setSequence(sequence).setVerdict(verdict).setReason(reason))
                    .build());
        }

        Taskring.Heartbeat nextHeartbeat() throws InterruptedException {
            Taskring.Heartbeat hb = heartbeats.poll(WAIT_S, TimeUnit.SECONDS);
            if (hb == null) {
                throw new AssertionError("no heartbeat within " + WAIT_S + " s");
            }
            return hb;
        }

        Taskring.Outcome nextOutcome() throws InterruptedException {
            Taskring.Outcome o = outcomes.poll(WAIT_S, TimeUnit.SECONDS);
            if (o == null) {
                throw new AssertionError("no outcome within " + WAIT_S + " s");
            }
            return o;
        }

        /**
         * Runs a quick task and waits for its outcome. The stream keeps order, so whatever the
         * executor wrote before that outcome has arrived by then: a fence to assert "nothing more".
         */
        void fence(String id) throws InterruptedException {
            deliver(delivery(id, "quick", 0));
            Taskring.Outcome o = nextOutcome();
            assertEquals(id, o.getTaskId(), "an outcome arrived before the fence's: " + o);
        }
    }

    private static Taskring.Delivery delivery(String id, String type, int heartbeatTimeoutMs) {
        return Taskring.Delivery.newBuilder()
                .setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop").setTaskType(type).setPayloadJson("{}"))
                .setAttempt(3).setEpoch(9).setTimeoutMs(20_000).setHeartbeatTimeoutMs(heartbeatTimeoutMs).build();
    }

    private static TaskringExecutor.Builder executor() {
        return TaskringExecutor.builder().namespace("shop").handler("quick", ctx -> { });
    }

    @Test
    void theExecutorSendsTheFirstHeartbeatAsTheHandlerStarts() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        TaskringExecutor e = start(executor().handler("wait", ctx -> {
            seen.set(ctx);
            release.await(WAIT_S, TimeUnit.SECONDS);
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "wait", 5000));
        // Sent while the handler has not called anything: the lease counts from the start.
        Taskring.Heartbeat hb = d.nextHeartbeat();
        assertEquals("t1", hb.getTaskId());
        assertEquals(3, hb.getAttempt());
        assertEquals("", hb.getDetailsJson());
        assertTrue(hb.getSequence() != 0);
        d.answer(hb, HeartbeatVerdict.HEARTBEAT_VERDICT_CONTINUE, "");
        release.countDown();
        Taskring.Outcome o = d.nextOutcome();
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.getKind(), o.getError());
        assertEquals(5000, seen.get().heartbeatTimeoutMs());
        assertFalse(seen.get().isStopped());
    }

    @Test
    void heartbeatDetailsGoUpTheStreamAsJson() throws Exception {
        TaskringExecutor e = start(executor().handler("steps", ctx -> {
            ctx.heartbeat(Map.of("page", 7));
            ctx.heartbeatJson("[1, 2]");
            ctx.heartbeat("a string");
            ctx.heartbeat(); // no details: the dispatcher keeps the last ones
            ctx.heartbeat(null);
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "steps", 5000));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        List<String> details = new ArrayList<>();
        Set<Long> sequences = new HashSet<>();
        for (Taskring.Heartbeat hb : d.heartbeats) {
            assertEquals("t1", hb.getTaskId());
            assertEquals(3, hb.getAttempt());
            details.add(hb.getDetailsJson());
            sequences.add(hb.getSequence());
        }
        // The executor's own first, then the handler's, in order; each sequence unique on the stream.
        assertEquals(List.of("", "{\"page\":7}", "[1, 2]", "\"a string\"", "", ""), details);
        assertEquals(6, sequences.size());
    }

    @Test
    void aHandlerWithoutAHeartbeatTimeoutMayStillHeartbeat() throws Exception {
        TaskringExecutor e = start(executor().handler("beat", ctx -> {
            assertEquals(0, ctx.heartbeatTimeoutMs());
            ctx.heartbeat(Map.of("done", 1));
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "beat", 0));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        // Only the handler's: no timeout, no heartbeat of the executor's own.
        assertEquals(List.of("{\"done\":1}"), d.heartbeats.stream().map(Taskring.Heartbeat::getDetailsJson).toList());
    }

    @Test
    void detailsThatAreNotJsonOrTooLargeAreRefusedAndNothingIsSent() throws Exception {
        CompletableFuture<List<String>> refusals = new CompletableFuture<>();
        TaskringExecutor e = start(executor().handler("bad", ctx -> {
            List<String> out = new ArrayList<>();
            String big = "x".repeat(HeartbeatDetails.MAX_BYTES); // as JSON it gains two quotes
            for (Runnable call : List.<Runnable>of(
                    () -> ctx.heartbeat(big),
                    () -> ctx.heartbeatJson("\"" + "é".repeat(HeartbeatDetails.MAX_BYTES / 2) + "\""), // 2 bytes a char
                    () -> ctx.heartbeatJson("{not json"),
                    () -> ctx.heartbeatJson("{} {}"),
                    () -> ctx.heartbeat(Double.NaN),
                    () -> ctx.heartbeat(new Object()))) {
                try {
                    call.run();
                    out.add("sent");
                } catch (IllegalArgumentException refused) {
                    out.add(refused.getMessage());
                }
            }
            ctx.heartbeatJson("\"" + "x".repeat(HeartbeatDetails.MAX_BYTES - 2) + "\""); // just fits
            refusals.complete(out);
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "bad", 5000));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        List<String> out = refusals.get(WAIT_S, TimeUnit.SECONDS);
        assertEquals(6, out.size());
        out.forEach(m -> assertTrue(m.startsWith("details: "), m));
        assertTrue(out.get(0).contains("too large: 65538 bytes"), out.get(0));
        assertTrue(out.get(1).contains("too large: 65538 bytes"), out.get(1));
        assertTrue(out.get(2).contains("not valid JSON"), out.get(2));
        assertTrue(out.get(4).contains("not encodable as JSON"), out.get(4));
        // The executor's own heartbeat and the one that fits: none of the refused ones.
        List<Integer> sizes = d.heartbeats.stream().map(hb -> hb.getDetailsJson().length()).toList();
        assertEquals(List.of(0, HeartbeatDetails.MAX_BYTES), sizes);
    }

    @Test
    void cancelInterruptsTheHandlerAndItsOutcomeIsStoppedWhateverItReturns() throws Exception {
        CompletableFuture<String> handlerSaw = new CompletableFuture<>();
        CountDownLatch began = new CountDownLatch(1);
        TaskringExecutor e = start(executor().handler("long", ctx -> {
            began.countDown();
            try {
                new CountDownLatch(1).await(WAIT_S * 3, TimeUnit.SECONDS);
                handlerSaw.complete("never interrupted");
            } catch (InterruptedException interrupted) {
                boolean stopped = ctx.isStopped();
                try {
                    ctx.heartbeat(Map.of("after", "stop"));
                    handlerSaw.complete("heartbeat after the stop was accepted");
                } catch (TaskStoppedException refused) {
                    handlerSaw.complete("stopped=" + stopped + " " + refused.verdict() + " " + refused.getMessage());
                }
            }
            // and returns normally: the attempt's outcome stays STOPPED
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "long", 5000));
        var first = d.nextHeartbeat();
        assertTrue(began.await(WAIT_S, TimeUnit.SECONDS)); // a cancel before the handler began would skip it
        d.answer(first, HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL, "cancelled by alice");
        Taskring.Outcome o = d.nextOutcome();
        assertEquals("t1", o.getTaskId());
        assertEquals(3, o.getAttempt());
        assertEquals(OutcomeKind.OUTCOME_KIND_STOPPED, o.getKind());
        assertEquals("cancelled: cancelled by alice", o.getError());
        assertTrue(o.getStartedAtMs() > 0 && o.getFinishedAtMs() >= o.getStartedAtMs());
        assertEquals("stopped=true CANCEL cancelled: cancelled by alice", handlerSaw.get(WAIT_S, TimeUnit.SECONDS));
        ExecutorTest.waitFor(() -> e.inFlight() == 0); // the handler has returned, its slot is free
        d.fence("f1"); // no second outcome for t1, and the refused heartbeat never went up
        assertEquals(List.of(), List.copyOf(d.heartbeats));
    }

    @Test
    void lostStopsTheAttemptAndLaterHeartbeatsFail() throws Exception {
        CountDownLatch interrupted = new CountDownLatch(1);
        CompletableFuture<TaskStoppedException> refused = new CompletableFuture<>();
        CountDownLatch tryAgain = new CountDownLatch(1);
        TaskringExecutor e = start(executor().handler("long", ctx -> {
            try {
                new CountDownLatch(1).await(WAIT_S * 3, TimeUnit.SECONDS);
            } catch (InterruptedException ie) {
                interrupted.countDown();
            }
            // A handler that swallowed the interrupt and carries on: its next heartbeat tells it.
            tryAgain.await(WAIT_S, TimeUnit.SECONDS);
            try {
                ctx.heartbeatJson("{\"page\":8}");
            } catch (TaskStoppedException stopped) {
                refused.complete(stopped);
                throw stopped; // thrown, or returned: the outcome is STOPPED either way
            }
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "long", 5000));
        d.answer(d.nextHeartbeat(), HeartbeatVerdict.HEARTBEAT_VERDICT_LOST, "its lease ran out; attempt 4 runs");
        Taskring.Outcome o = d.nextOutcome();
        assertEquals(OutcomeKind.OUTCOME_KIND_STOPPED, o.getKind());
        assertEquals("lost: its lease ran out; attempt 4 runs", o.getError());
        assertTrue(interrupted.await(WAIT_S, TimeUnit.SECONDS));
        tryAgain.countDown();
        TaskStoppedException s = refused.get(WAIT_S, TimeUnit.SECONDS);
        assertEquals(TaskStoppedException.Verdict.LOST, s.verdict());
        assertEquals("its lease ran out; attempt 4 runs", s.reason());
        assertEquals("lost: its lease ran out; attempt 4 runs", s.getMessage());
        ExecutorTest.waitFor(() -> e.inFlight() == 0);
        d.fence("f1");
        assertEquals(List.of(), List.copyOf(d.heartbeats));
    }

    @Test
    void cancelCancelsAnAsyncHandlersFuture() throws Exception {
        AtomicReference<CompletableFuture<Void>> handed = new AtomicReference<>();
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        TaskringExecutor e = start(executor().asyncHandler("async", ctx -> {
            seen.set(ctx);
            CompletableFuture<Void> f = new CompletableFuture<>();
            handed.set(f);
            return f;
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "async", 5000));
        var first = d.nextHeartbeat();
        // The SDK sends the first heartbeat before the handler runs: a cancel answered before the
        // pool thread reached the handler would (rightly) skip it, and there would be no future.
        ExecutorTest.waitFor(() -> handed.get() != null);
        d.answer(first, HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL, "by bob");
        Taskring.Outcome o = d.nextOutcome();
        assertEquals(OutcomeKind.OUTCOME_KIND_STOPPED, o.getKind());
        assertEquals("cancelled: by bob", o.getError());
        ExecutorTest.waitFor(() -> handed.get().isCancelled());
        assertTrue(seen.get().isStopped());
        assertThrows(TaskStoppedException.class, () -> seen.get().heartbeat());
        ExecutorTest.waitFor(() -> e.inFlight() == 0);
    }

    @Test
    void invalidIsLoggedAndTheAttemptGoesOn() throws Exception {
        CountDownLatch answered = new CountDownLatch(1);
        CompletableFuture<Boolean> stoppedAfterInvalid = new CompletableFuture<>();
        TaskringExecutor e = start(executor().handler("long", ctx -> {
            assertTrue(answered.await(WAIT_S, TimeUnit.SECONDS));
            stoppedAfterInvalid.complete(ctx.isStopped());
            ctx.heartbeat(Map.of("still", "going")); // does not throw
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "long", 5000));
        d.answer(d.nextHeartbeat(), HeartbeatVerdict.HEARTBEAT_VERDICT_INVALID, "details_json: too large");
        // Answers and deliveries share the stream, in order: the fence's outcome means the answer was read.
        d.fence("f1");
        answered.countDown();
        Taskring.Outcome o = d.nextOutcome();
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.getKind(), o.getError());
        assertFalse(stoppedAfterInvalid.get(WAIT_S, TimeUnit.SECONDS));
        assertEquals("{\"still\":\"going\"}", d.nextHeartbeat().getDetailsJson());
    }

    @Test
    void answersMatchTheRunningAttemptOnly() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        TaskringExecutor e = start(executor().handler("wait", ctx -> {
            seen.set(ctx);
            release.await(WAIT_S, TimeUnit.SECONDS);
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "wait", 5000));
        Taskring.Heartbeat hb = d.nextHeartbeat();
        // Another attempt of the same task, another task, and an attempt that has finished: ignored.
        d.answer("t1", 2, hb.getSequence(), HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL, "old attempt");
        d.answer("t0", 3, hb.getSequence(), HeartbeatVerdict.HEARTBEAT_VERDICT_LOST, "other task");
        d.fence("f1");
        d.answer("f1", 3, 1, HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL, "finished already");
        d.fence("f2");
        assertFalse(seen.get().isStopped());
        release.countDown();
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        // And an answer once t1 has finished changes nothing either.
        d.answer(hb, HeartbeatVerdict.HEARTBEAT_VERDICT_CANCEL, "too late");
        d.fence("f3");
        assertFalse(seen.get().isStopped());
    }

    @Test
    void theContextCarriesThePreviousAttemptsDetails() throws Exception {
        Map<String, Object> seen = new java.util.concurrent.ConcurrentHashMap<>();
        TaskringExecutor e = start(executor().handler("resume", ctx -> {
            JsonNode previous = ctx.previousDetails();
            seen.put(ctx.taskId(), previous == null ? "none" : previous);
            if (previous != null) {
                seen.put(ctx.taskId() + ".map", ctx.previousDetailsAs(Map.class));
                seen.put(ctx.taskId() + ".json", ctx.previousDetailsJson());
            } else {
                assertNull(ctx.previousDetailsAs(Map.class));
                assertEquals("", ctx.previousDetailsJson());
            }
        }));
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "resume", 5000).toBuilder().setHeartbeatDetailsJson("{\"page\":7,\"cursor\":\"abc\"}").build(),
                delivery("t2", "resume", 5000));
        for (int i = 0; i < 2; i++) {
            assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        }
        assertEquals(7, ((JsonNode) seen.get("t1")).get("page").asInt());
        assertEquals(Map.of("page", 7, "cursor", "abc"), seen.get("t1.map"));
        assertEquals("{\"page\":7,\"cursor\":\"abc\"}", seen.get("t1.json"));
        assertEquals("none", seen.get("t2"));
    }

    @Test
    void aDeliveryWithoutAHeartbeatTimeoutSendsNoHeartbeat() throws Exception {
        TaskringExecutor e = start(executor());
        Dispatcher d = new Dispatcher(e);
        d.deliver(delivery("t1", "quick", 0), delivery("t2", "quick", 0));
        for (int i = 0; i < 2; i++) {
            assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, d.nextOutcome().getKind());
        }
        d.fence("f1");
        assertEquals(List.of(), List.copyOf(d.heartbeats));
    }

    @Test
    void onTheUnaryExecuteCallHeartbeatSendsNothingAndReturns() {
        CompletableFuture<String> result = new CompletableFuture<>();
        TaskringExecutor e = start(executor().handler("beat", ctx -> {
            ctx.heartbeat(Map.of("page", 1));
            assertThrows(IllegalArgumentException.class, () -> ctx.heartbeatJson("nope")); // still checked
            result.complete("returned, timeout " + ctx.heartbeatTimeoutMs());
        }));
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
        channels.add(c);
        Taskring.ExecuteResponse r = ExecutorServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS)
                .execute(Taskring.ExecuteRequest.newBuilder().addDeliveries(delivery("t1", "beat", 5000)).build());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, r.getOutcomes(0).getKind(), r.getOutcomes(0).getError());
        assertEquals(0, r.getHeartbeatsCount());
        assertEquals("returned, timeout 5000", result.getNow("not run"));
    }
}
