package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.taskring.errors.NonRetryableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;
import taskring.v1.Taskring.OutcomeKind;

/** The executor's Execute over real gRPC on loopback, without ZooKeeper. */
class ExecutorTest {
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

    private ExecutorServiceGrpc.ExecutorServiceBlockingStub stub(TaskringExecutor e) {
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
        channels.add(c);
        return ExecutorServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private static Taskring.Delivery delivery(String id, String type, long timeoutMs) {
        return delivery(id, type, timeoutMs, "{\"order\":42}");
    }

    private static Taskring.Delivery delivery(String id, String type, long timeoutMs, String payload) {
        return Taskring.Delivery.newBuilder()
                .setTask(Taskring.Task.newBuilder().setTaskId(id).setNamespace("shop").setTaskType(type).setPayloadJson(payload))
                .setAttempt(2).setEpoch(9).setTimeoutMs((int) timeoutMs).build();
    }

    private static Map<String, Taskring.Outcome> byId(Taskring.ExecuteResponse r) {
        Map<String, Taskring.Outcome> out = new java.util.HashMap<>();
        r.getOutcomesList().forEach(o -> out.put(o.getTaskId(), o));
        return out;
    }

    private static Taskring.ExecuteResponse execute(ExecutorServiceGrpc.ExecutorServiceBlockingStub s, Taskring.Delivery... ds) {
        return s.execute(Taskring.ExecuteRequest.newBuilder().addAllDeliveries(List.of(ds)).setDispatcherNode("test").build());
    }

    @Test
    void outcomesOfABatch() {
        AtomicReference<TaskContext> seen = new AtomicReference<>();
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop")
                .handler("ok", ctx -> seen.set(ctx))
                .handler("boom", ctx -> { throw new IllegalStateException("db down"); })
                .handler("never", ctx -> { throw new NonRetryableException("order 42 does not exist"); })
                .asyncHandler("async_ok", ctx -> CompletableFuture.completedFuture(null))
                .asyncHandler("async_boom", ctx -> CompletableFuture.failedFuture(new NonRetryableException("bad")))
                .handler("other", "ok", ctx -> { }));
        Map<String, Taskring.Outcome> o = byId(execute(stub(e),
                delivery("1", "ok", 5000), delivery("2", "boom", 5000), delivery("3", "never", 5000),
                delivery("4", "missing", 5000), delivery("5", "async_ok", 5000), delivery("6", "async_boom", 5000),
                delivery("7", "ok", 5000, "[1,2]")));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("1").getKind());
        assertEquals(2, o.get("1").getAttempt());
        assertTrue(o.get("1").getStartedAtMs() > 0 && o.get("1").getFinishedAtMs() >= o.get("1").getStartedAtMs());
        assertEquals(OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, o.get("2").getKind());
        assertEquals("IllegalStateException: db down", o.get("2").getError());
        assertTrue(o.get("2").getStackTrace().contains("ExecutorTest"), o.get("2").getStackTrace());
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("3").getKind());
        assertEquals("NonRetryableException: order 42 does not exist", o.get("3").getError());
        assertEquals(OutcomeKind.OUTCOME_KIND_NO_HANDLER, o.get("4").getKind());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("5").getKind());
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("6").getKind());
        assertEquals(OutcomeKind.OUTCOME_KIND_NON_RETRYABLE_FAILURE, o.get("7").getKind());
        assertEquals("payload_json: not a JSON object", o.get("7").getError());

        TaskContext ctx = seen.get();
        assertEquals("1", ctx.taskId());
        assertEquals("shop", ctx.namespace());
        assertEquals(2, ctx.attempt());
        assertEquals(9, ctx.epoch());
        assertEquals(42, ctx.payload().get("order").asInt());
        assertEquals(42, ((Number) ctx.payloadAs(Map.class).get("order")).intValue());
        assertEquals(Map.of("shop", List.of("async_boom", "async_ok", "boom", "never", "ok"), "other", List.of("ok")), e.taskTypes());
    }

    @Test
    void anOverrunningHandlerIsAnsweredTimedOutAtItsDeadlineAndInterrupted() throws Exception {
        CountDownLatch interrupted = new CountDownLatch(1);
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").handler("slow", ctx -> {
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException ie) {
                interrupted.countDown();
                throw ie;
            }
        }));
        long t0 = System.nanoTime();
        Taskring.Outcome o = execute(stub(e), delivery("1", "slow", 300)).getOutcomes(0);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(OutcomeKind.OUTCOME_KIND_TIMED_OUT, o.getKind());
        assertTrue(o.getError().contains("300 ms"), o.getError());
        assertTrue(o.getStackTrace().contains("sleep"), o.getStackTrace());
        assertTrue(ms >= 250 && ms < 3000, "answered after " + ms + " ms");
        assertTrue(interrupted.await(5, TimeUnit.SECONDS));
        waitFor(() -> e.inFlight() == 0);
    }

    @Test
    void aHandlerThatIgnoresTheInterruptKeepsItsSlotButNotTheResponse() throws Exception {
        AtomicBoolean release = new AtomicBoolean();
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").maxInFlight(1).handler("stuck", ctx -> {
            while (!release.get()) { // deaf to interrupts, on purpose
                try {
                    Thread.sleep(5);
                } catch (InterruptedException ignored) {
                    // keep going
                }
            }
        }).handler("quick", ctx -> { }));
        var s = stub(e);
        assertEquals(OutcomeKind.OUTCOME_KIND_TIMED_OUT, execute(s, delivery("1", "stuck", 200)).getOutcomes(0).getKind());
        assertEquals(1, e.inFlight());
        // the only slot is still held: the next delivery waits, then times out waiting
        Taskring.Outcome waited = execute(s, delivery("2", "quick", 200)).getOutcomes(0);
        assertEquals(OutcomeKind.OUTCOME_KIND_TIMED_OUT, waited.getKind());
        assertTrue(waited.getError().contains("waiting for a free slot"), waited.getError());
        release.set(true);
        waitFor(() -> e.inFlight() == 0);
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(s, delivery("3", "quick", 1000)).getOutcomes(0).getKind());
    }

    @Test
    void aDeliveryThatCannotStartWithinStartWithinMsIsNotRun() throws Exception {
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> ran = java.util.Collections.synchronizedList(new ArrayList<>());
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").maxInFlight(1).handler("hold", ctx -> {
            busy.countDown();
            release.await(5, TimeUnit.SECONDS);
        }).handler("ok", ctx -> ran.add(ctx.taskId())));
        var s = stub(e);
        // Given the only slot busy until `release` is counted down
        CompletableFuture<Taskring.ExecuteResponse> holder = CompletableFuture.supplyAsync(
                () -> execute(s, delivery("h", "hold", 10_000)));
        assertTrue(busy.await(5, TimeUnit.SECONDS));
        // When a delivery that must start within 100 ms waits behind it for longer
        Taskring.Delivery late = delivery("late", "ok", 10_000).toBuilder().setStartWithinMs(100).build();
        CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS).execute(release::countDown);
        Taskring.Outcome out = execute(s, late).getOutcomes(0);
        holder.get(10, TimeUnit.SECONDS);
        // Then it was never run, and says so (the dispatcher gives it back unspent)
        assertEquals(OutcomeKind.OUTCOME_KIND_NOT_STARTED, out.getKind(), out.getError());
        assertEquals(0, out.getStartedAtMs());
        assertTrue(out.getError().startsWith("not started within 100 ms of arrival"), out.getError());
        assertEquals(List.of(), ran);
        // While one that starts in time runs as usual
        Taskring.Delivery onTime = delivery("on-time", "ok", 5000).toBuilder().setStartWithinMs(5000).build();
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, execute(s, onTime).getOutcomes(0).getKind());
        assertEquals(List.of("on-time"), ran);
    }

    @Test
    void aDeliveryArrivingAfterItsStartByInstantIsNotRun() {
        List<String> ran = java.util.Collections.synchronizedList(new ArrayList<>());
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").handler("ok", ctx -> ran.add(ctx.taskId())));
        // A batch held up on its way (its dispatcher froze as it sent it): the lease it
        // carries had run out before it arrived, however long start_within_ms says.
        Taskring.Delivery late = delivery("late", "ok", 5000).toBuilder()
                .setStartWithinMs(60_000).setStartByUnixMs(System.currentTimeMillis() - 1).build();
        Taskring.Delivery onTime = delivery("on-time", "ok", 5000).toBuilder()
                .setStartWithinMs(60_000).setStartByUnixMs(System.currentTimeMillis() + 60_000).build();
        Map<String, Taskring.Outcome> o = byId(execute(stub(e), late, onTime));
        assertEquals(OutcomeKind.OUTCOME_KIND_NOT_STARTED, o.get("late").getKind(), o.get("late").getError());
        assertEquals(0, o.get("late").getStartedAtMs());
        assertTrue(o.get("late").getError().contains("not started by"), o.get("late").getError());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.get("on-time").getKind(), o.get("on-time").getError());
        assertEquals(List.of("on-time"), ran);
    }

    @Test
    void anAsyncHandlerPastItsDeadlineIsCancelled() throws Exception {
        AtomicReference<CompletableFuture<Void>> handed = new AtomicReference<>();
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").asyncHandler("hang", ctx -> {
            CompletableFuture<Void> f = new CompletableFuture<>();
            handed.set(f);
            return f;
        }));
        Taskring.Outcome o = execute(stub(e), delivery("1", "hang", 200)).getOutcomes(0);
        assertEquals(OutcomeKind.OUTCOME_KIND_TIMED_OUT, o.getKind());
        // The answer is sent as the TIMED_OUT outcome completes, and the handler's future is
        // cancelled just after, on the timer thread: the caller can see the answer first.
        waitFor(() -> handed.get().isCancelled());
        waitFor(() -> e.inFlight() == 0);
    }

    @Test
    void maxInFlightCapsConcurrentHandlersAndTheRestWait() {
        AtomicInteger running = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").maxInFlight(2).handler("work", ctx -> {
            peak.accumulateAndGet(running.incrementAndGet(), Math::max);
            Thread.sleep(150);
            running.decrementAndGet();
        }));
        Taskring.ExecuteResponse r = execute(stub(e), delivery("1", "work", 5000), delivery("2", "work", 5000),
                delivery("3", "work", 5000), delivery("4", "work", 5000), delivery("5", "work", 5000));
        assertEquals(5, r.getOutcomesCount());
        r.getOutcomesList().forEach(o -> assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, o.getKind(), o.getTaskId()));
        assertEquals(2, peak.get());
    }

    @Test
    void gracefulStopFinishesInFlightWorkThenRefusesNewCalls() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").handler("work", ctx -> {
            started.countDown();
            Thread.sleep(400);
        }));
        var s = stub(e);
        CompletableFuture<Taskring.ExecuteResponse> call = CompletableFuture.supplyAsync(() -> execute(s, delivery("1", "work", 5000)));
        assertTrue(started.await(5, TimeUnit.SECONDS));
        e.stop(Duration.ofSeconds(5));
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, call.get(5, TimeUnit.SECONDS).getOutcomes(0).getKind());
        StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> execute(s, delivery("2", "work", 5000)));
        assertEquals(Status.Code.UNAVAILABLE, refused.getStatus().getCode());
        e.stop(Duration.ZERO); // twice is fine
    }

    @Test
    void pastTheGraceTheRestIsAnsweredRetryable() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop").maxInFlight(1).handler("work", ctx -> {
            started.countDown();
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException ie) {
                interrupted.countDown();
            }
        }));
        var s = stub(e);
        // two deliveries: one runs, one waits for the only slot
        CompletableFuture<Taskring.ExecuteResponse> call = CompletableFuture.supplyAsync(
                () -> execute(s, delivery("1", "work", 20_000), delivery("2", "work", 20_000)));
        assertTrue(started.await(5, TimeUnit.SECONDS));
        waitFor(() -> e.waiting() == 1);
        long t0 = System.nanoTime();
        e.stop(Duration.ofMillis(300));
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 5000);
        Map<String, Taskring.Outcome> o = byId(call.get(5, TimeUnit.SECONDS));
        for (String id : List.of("1", "2")) {
            assertEquals(OutcomeKind.OUTCOME_KIND_RETRYABLE_FAILURE, o.get(id).getKind(), id);
            assertTrue(o.get(id).getError().startsWith("executor stopped before the task finished"), o.get(id).getError());
        }
        assertTrue(interrupted.await(5, TimeUnit.SECONDS));
    }

    @Test
    void stopBeforeStartIsSafeAndAnExecutorStartsOnce() {
        TaskringExecutor e = TaskringExecutor.builder().namespace("shop").handler("x", ctx -> { }).build();
        e.stop(Duration.ZERO);
        assertThrows(IllegalStateException.class, e::start);
        assertThrows(IllegalArgumentException.class, () -> TaskringExecutor.builder().namespace("Bad NS"));
        assertThrows(IllegalStateException.class, () -> TaskringExecutor.builder().namespace("shop").build());
    }

    @Test
    void startFailsWithinItsTimeoutWhenZooKeeperIsUnreachable() {
        TaskringExecutor e = TaskringExecutor.builder().namespace("shop").handler("x", ctx -> { })
                .zookeeper("127.0.0.1:1/taskring").zkConnectTimeout(Duration.ofMillis(500)).build();
        executors.add(e);
        long t0 = System.nanoTime();
        io.taskring.errors.TaskringException err = assertThrows(io.taskring.errors.TaskringException.class, e::start);
        assertTrue(err.getMessage().startsWith("cannot reach ZooKeeper at 127.0.0.1:1"), err.getMessage());
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 5000);
        assertThrows(IllegalStateException.class, e::start); // stopped, not half-started
    }

    /** The client side of a Work stream: what arrived, and how it ended ("completed" or the error). */
    private static final class Received implements StreamObserver<Taskring.ExecuteResponse> {
        final LinkedBlockingQueue<Taskring.Outcome> outcomes = new LinkedBlockingQueue<>();
        final CompletableFuture<String> end = new CompletableFuture<>();

        @Override
        public void onNext(Taskring.ExecuteResponse r) {
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

        Taskring.Outcome next() throws InterruptedException {
            Taskring.Outcome o = outcomes.poll(10, TimeUnit.SECONDS);
            if (o == null) {
                throw new AssertionError("no outcome within 10 s");
            }
            return o;
        }
    }

    private StreamObserver<Taskring.ExecuteRequest> work(TaskringExecutor e, Received received) {
        ManagedChannel c = Grpc.newChannelBuilder(e.address(), InsecureChannelCredentials.create()).build();
        channels.add(c);
        return ExecutorServiceGrpc.newStub(c).work(received);
    }

    @Test
    void aWorkStreamSendsEachOutcomeWhenItsTaskEndsAndEndsAfterWhatRuns() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop")
                .handler("slow", ctx -> release.await())
                .handler("fast", ctx -> { }));
        Received received = new Received();
        StreamObserver<Taskring.ExecuteRequest> stream = work(e, received);
        stream.onNext(Taskring.ExecuteRequest.newBuilder().addDeliveries(delivery("s", "slow", 5000)).build());
        stream.onNext(Taskring.ExecuteRequest.newBuilder().addDeliveries(delivery("f1", "fast", 5000))
                .addDeliveries(delivery("x", "nope", 5000)).build());
        Map<String, Taskring.Outcome> first = new java.util.HashMap<>();
        for (int i = 0; i < 2; i++) {
            Taskring.Outcome o = received.next();
            first.put(o.getTaskId(), o);
        }
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, first.get("f1").getKind());
        assertEquals(OutcomeKind.OUTCOME_KIND_NO_HANDLER, first.get("x").getKind());
        stream.onCompleted(); // the dispatcher closes its side: the stream ends once "s" has answered
        assertTrue(!received.end.isDone() && received.outcomes.isEmpty());
        release.countDown();
        Taskring.Outcome slow = received.next();
        assertEquals("s", slow.getTaskId());
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, slow.getKind());
        assertEquals("completed", received.end.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aStoppingExecutorFinishesWhatItsWorkStreamRunsAndEndsIt() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        TaskringExecutor e = start(TaskringExecutor.builder().namespace("shop")
                .handler("slow", ctx -> { started.countDown(); release.await(); }));
        Received received = new Received();
        StreamObserver<Taskring.ExecuteRequest> stream = work(e, received);
        stream.onNext(Taskring.ExecuteRequest.newBuilder().addDeliveries(delivery("s", "slow", 5000)).build());
        assertTrue(started.await(10, TimeUnit.SECONDS));
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> e.stop(Duration.ofSeconds(10)));
        release.countDown();
        assertEquals(OutcomeKind.OUTCOME_KIND_SUCCEEDED, received.next().getKind());
        assertEquals("completed", received.end.get(10, TimeUnit.SECONDS));
        stopped.get(15, TimeUnit.SECONDS);
    }

    static void waitFor(java.util.function.BooleanSupplier condition) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("condition not met within 5 s");
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
