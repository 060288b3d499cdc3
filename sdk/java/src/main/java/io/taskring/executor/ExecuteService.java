package io.taskring.executor;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;

/** ExecutorService.Execute: every delivery of a batch runs concurrently; one answer once all have an outcome. */
final class ExecuteService extends ExecutorServiceGrpc.ExecutorServiceImplBase {
    private static final Logger log = LoggerFactory.getLogger(ExecuteService.class);

    private final DeliveryRunner runner;
    private final Consumer<Taskring.Outcome> observer; // null: none

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

    private void observe(Taskring.Outcome o) {
        try {
            observer.accept(o);
        } catch (RuntimeException e) { // an observer's bug must not cost the batch its answer
            log.warn("outcome observer failed on task {}", o.getTaskId(), e);
        }
    }
}
