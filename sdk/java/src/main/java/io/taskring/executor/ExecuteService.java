package io.taskring.executor;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import taskring.v1.ExecutorServiceGrpc;
import taskring.v1.Taskring;

/** ExecutorService.Execute: every delivery of a batch runs concurrently; one answer once all have an outcome. */
final class ExecuteService extends ExecutorServiceGrpc.ExecutorServiceImplBase {
    private static final Logger log = LoggerFactory.getLogger(ExecuteService.class);

    private final DeliveryRunner runner;

    ExecuteService(DeliveryRunner runner) {
        this.runner = runner;
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
            outcomes.add(runner.run(d, received));
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
}
