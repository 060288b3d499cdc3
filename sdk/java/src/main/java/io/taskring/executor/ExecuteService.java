package io.taskring.executor;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taskring.errors.TaskStoppedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;

/**
 * ExecutorService.Execute: every delivery of a batch runs concurrently; one answer once all have
 * an outcome. And Work, the same on one stream per dispatcher, each outcome sent once it is known,
 * and the heartbeats of running attempts up it with their answers down it.
 */
final class ExecuteService extends ExecutorServiceGrpc.ExecutorServiceImplBase {
    private static final Logger log = LoggerFactory.getLogger(ExecuteService.class);

    private final DeliveryRunner runner;
    private final Consumer<Taskring.Outcome> observer; // null: none
    private final Set<WorkStream> streams = ConcurrentHashMap.newKeySet();

    ExecuteService(DeliveryRunner runner) {
        this(runner, null);
    }

    ExecuteService(DeliveryRunner runner, Consumer<Taskring.Outcome> observer) {
        this.runner = runner;
        this.observer = observer;
    }

    @Override
    public void execute(Taskring.ExecuteRequest request, StreamObserver<Taskring.ExecuteResponse> responses) {
        long received = System.nanoTime();
        if (responses instanceof ServerCallStreamObserver<Taskring.ExecuteResponse> server) {
            // The dispatcher gave up on the call; the attempts still finish (and free their slots).
            server.setOnCancelHandler(() -> log.debug("Execute cancelled by {}", request.getDispatcherNode()));
        }
        List<CompletableFuture<Taskring.Outcome>> outcomes = new ArrayList<>(request.getDeliveriesCount());
        for (Taskring.Delivery d : request.getDeliveriesList()) {
            CompletableFuture<Taskring.Outcome> o = runner.run(d, received);
            if (observer != null) {
                o.thenAccept(this::observe);
            }
            outcomes.add(o);
        }
        CompletableFuture.allOf(outcomes.toArray(new CompletableFuture<?>[0])).whenComplete((v, e) -> {
            Taskring.ExecuteResponse.Builder reply = Taskring.ExecuteResponse.newBuilder();
            for (CompletableFuture<Taskring.Outcome> o : outcomes) {
                reply.addOutcomes(o.join()); // run() never fails its future
            }
            try {
                responses.onNext(reply.build());
                responses.onCompleted();
            } catch (RuntimeException sendFailed) { // cancelled meanwhile: nobody to answer
                log.debug("could not answer Execute: {}", sendFailed.toString());
            }
        });
    }

    @Override
    public StreamObserver<Taskring.ExecuteRequest> work(StreamObserver<Taskring.ExecuteResponse> responses) {
        WorkStream stream = new WorkStream(responses);
        streams.add(stream);
        return stream;
    }

    /** The executor stops: every open stream ends once what it runs has answered. */
    void closeStreams() {
        for (WorkStream s : streams) {
            s.close();
        }
    }

    /**
     * One dispatcher's Work stream: the deliveries of each message start at once, and the outcomes
     * are written as they finish (all those waiting at a write in one message), so a task is never
     * held back by a slow one sent beside it. It ends once the dispatcher has closed its side, or
     * the executor stops, and what it took has answered. gRPC's observer is not thread-safe: every
     * write is under the lock.
     *
     * <p>Heartbeats go up as the handlers send them, each in its own message (they are rare next
     * to outcomes). An attempt that heartbeats is tracked by (task_id, attempt) from its first
     * heartbeat until its outcome is decided, so that an answer can stop it; answers for anything
     * else are ignored.
     */
    private final class WorkStream implements StreamObserver<Taskring.ExecuteRequest>, HeartbeatLine {
        private final StreamObserver<Taskring.ExecuteResponse> out;
        private final Object lock = new Object();
        private final List<Taskring.Outcome> pending = new ArrayList<>();
        private final Map<AttemptKey, DeliveryRunner.Attempt> beating = new ConcurrentHashMap<>();
        private long sequence; // of the last heartbeat sent, under the lock: unique on the stream
        private int running;
        private boolean closing;
        private boolean gone;

        WorkStream(StreamObserver<Taskring.ExecuteResponse> out) {
            this.out = out;
        }

        @Override
        public void onNext(Taskring.ExecuteRequest request) {
            long received = System.nanoTime();
            if (request.getHeartbeatAnswersCount() > 0) {
                request.getHeartbeatAnswersList().forEach(this::answered);
            }
            for (Taskring.Delivery d : request.getDeliveriesList()) {
                synchronized (lock) {
                    running++;
                }
                // Once the executor stops, run() answers at once (retryable), as Execute's do.
                runner.run(d, received, this).whenComplete((o, e) -> finished(o));
            }
        }

        @Override
        public void heartbeat(DeliveryRunner.Attempt a, String detailsJson) {
            AttemptKey key = new AttemptKey(a.delivery.getTask().getTaskId(), a.delivery.getAttempt());
            if (beating.putIfAbsent(key, a) == null) {
                // Runs at once when the outcome is already decided: nothing is left tracked.
                a.outcome.whenComplete((o, e) -> beating.remove(key, a));
            }
            synchronized (lock) {
                if (gone || a.outcome.isDone()) {
                    return; // nobody reads it, or the attempt is over: nothing to keep alive
                }
                write(Taskring.ExecuteResponse.newBuilder().addHeartbeats(Taskring.Heartbeat.newBuilder()
                        .setTaskId(key.taskId()).setAttempt(key.attempt())
                        .setDetailsJson(detailsJson).setSequence(++sequence)).build());
            }
        }

        private void answered(Taskring.HeartbeatAnswer answer) {
            DeliveryRunner.Attempt a = beating.get(new AttemptKey(answer.getTaskId(), answer.getAttempt()));
            // Not running any more: its outcome is decided. (Its entry leaves `beating` in a callback
            // of the outcome that may run after the outcome was sent, so the outcome is asked too.)
            if (a == null || a.outcome.isDone()) {
                return;
            }
            switch (answer.getVerdict()) {
                case HEARTBEAT_VERDICT_CANCEL -> runner.stop(a, TaskStoppedException.Verdict.CANCEL, answer.getReason());
                case HEARTBEAT_VERDICT_LOST -> runner.stop(a, TaskStoppedException.Verdict.LOST, answer.getReason());
                // The attempt goes on, but this heartbeat did not extend its lease: the handler's bug to see.
                case HEARTBEAT_VERDICT_INVALID -> log.warn("task {} attempt {}: heartbeat {} refused by the dispatcher: {}",
                        answer.getTaskId(), Integer.toUnsignedLong(answer.getAttempt()),
                        Long.toUnsignedString(answer.getSequence()), answer.getReason());
                default -> { } // CONTINUE, or a verdict newer than this SDK: the attempt goes on
            }
        }

        private void finished(Taskring.Outcome o) {
            if (observer != null && o != null) {
                observe(o);
            }
            synchronized (lock) {
                running--;
                if (o != null) {
                    pending.add(o);
                }
                flush();
                endIfDone();
            }
        }

        private void flush() { // under the lock
            if (gone || pending.isEmpty()) {
                return;
            }
            write(Taskring.ExecuteResponse.newBuilder().addAllOutcomes(pending).build());
            pending.clear();
        }

        private void write(Taskring.ExecuteResponse r) { // under the lock, not gone
            try {
                out.onNext(r);
            } catch (RuntimeException sendFailed) { // cancelled meanwhile: nobody to answer
                log.debug("could not write to a Work stream: {}", sendFailed.toString());
                gone = true;
                streams.remove(this);
            }
        }

        private void endIfDone() { // under the lock
            if (!closing || running > 0 || gone) {
                return;
            }
            gone = true;
            streams.remove(this);
            try {
                out.onCompleted();
            } catch (RuntimeException e) {
                log.debug("could not end a Work stream: {}", e.toString());
            }
        }

        void close() {
            synchronized (lock) {
                closing = true;
                endIfDone();
            }
        }

        @Override
        public void onCompleted() { // the dispatcher closed its side
            close();
        }

        @Override
        public void onError(Throwable t) { // the dispatcher is gone: nobody can read an outcome
            synchronized (lock) {
                gone = true;
                streams.remove(this);
            }
        }
    }

    /** An attempt on a stream: what a heartbeat answer names. */
    private record AttemptKey(String taskId, int attempt) {}

    private void observe(Taskring.Outcome o) {
        try {
            observer.accept(o);
        } catch (RuntimeException e) { // an observer's bug must not cost the batch its answer
            log.warn("outcome observer failed on task {}", o.getTaskId(), e);
        }
    }
}
