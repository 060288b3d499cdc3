package io.taskring.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.taskring.TaskState;
import io.taskring.errors.GrpcErrors;
import io.taskring.errors.RpcException;
import io.taskring.errors.UnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import taskring.v1.TaskServiceGrpc;
import taskring.v1.Taskring;

/**
 * Client of the TaskService: submit, cancel and look up tasks. Thread-safe; share one
 * per process. Every method returns a {@link CompletableFuture} that fails with an
 * {@link RpcException} subclass; {@link #blocking()} gives the same calls, waiting.
 *
 * <p>Calls go round robin over the configured nodes. A call that may be repeated
 * safely (get, cancel, and a submit that carries its own task id) is tried once more
 * on the next node when the first answers UNAVAILABLE. A submit without a task id is
 * never retried: the server assigns ids, so a retry could create a second task.
 * Future callbacks run on gRPC's threads: keep them short or hop to your own executor.
 */
public final class TaskringClient implements AutoCloseable {
    private final NodeList nodes;
    private final Duration rpcTimeout;

    private TaskringClient(NodeList nodes, Duration rpcTimeout) {
        this.nodes = nodes;
        this.rpcTimeout = rpcTimeout;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Submit one task. */
    public CompletableFuture<SubmitResult> submit(TaskSpec spec) {
        Taskring.SubmitRequest req = Taskring.SubmitRequest.newBuilder().setTask(Envelope.toWire(spec)).build();
        return call(TaskServiceGrpc.getSubmitMethod(), req, spec.isIdempotent()).thenApply(Envelope::fromWire);
    }

    /** Submit a task to run now, with the server's defaults. */
    public CompletableFuture<SubmitResult> submit(String namespace, String taskType, Object payload) {
        return submit(TaskSpec.builder(namespace, taskType).payload(payload).build());
    }

    /**
     * Submit many tasks in one RPC; results come in the order of {@code specs}. The server
     * validates the whole batch before writing any of it, so an InvalidArgumentException
     * (field {@code "tasks[i]...."}) means nothing was written. Retried on UNAVAILABLE
     * only when every task carries its own id.
     */
    public CompletableFuture<List<SubmitResult>> submitBatch(List<TaskSpec> specs) {
        if (specs.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        Taskring.SubmitBatchRequest.Builder req = Taskring.SubmitBatchRequest.newBuilder();
        boolean idempotent = true;
        for (TaskSpec s : specs) {
            req.addTasks(Envelope.toWire(s));
            idempotent &= s.isIdempotent();
        }
        int n = specs.size();
        return call(TaskServiceGrpc.getSubmitBatchMethod(), req.build(), idempotent)
                .thenApply(r -> Envelope.fromWire(r, n));
    }

    /**
     * Cancel a task that has not finished; completes with its state (CANCELLED). Fails with
     * NotFoundException for an unknown id, FailedPreconditionException when too late.
     */
    public CompletableFuture<TaskState> cancel(String taskId) {
        Taskring.CancelRequest req = Taskring.CancelRequest.newBuilder().setTaskId(taskId).build();
        return call(TaskServiceGrpc.getCancelMethod(), req, true).thenApply(r -> TaskState.fromWire(r.getStateValue()));
    }

    /** The task as stored: state, attempts, last error and its history. */
    public CompletableFuture<TaskInfo> get(String taskId) {
        Taskring.GetTaskRequest req = Taskring.GetTaskRequest.newBuilder().setTaskId(taskId).build();
        return call(TaskServiceGrpc.getGetTaskMethod(), req, true).thenApply(Envelope::fromWire);
    }

    /** The same calls, blocking; they throw the typed exceptions directly. */
    public BlockingClient blocking() {
        return new BlockingClient(this);
    }

    /** Close the channels this client opened. Safe to call twice. */
    @Override
    public void close() {
        nodes.close();
    }

    private <Q, R> CompletableFuture<R> call(MethodDescriptor<Q, R> method, Q request, boolean idempotent) {
        int first = nodes.next();
        CompletableFuture<R> attempt = once(method, request, first);
        if (!idempotent || nodes.size() < 2) {
            return attempt;
        }
        return attempt.handle((value, error) -> {
            if (error == null) {
                return CompletableFuture.completedFuture(value);
            }
            if (unwrap(error) instanceof UnavailableException) {
                return once(method, request, nodes.after(first));
            }
            return CompletableFuture.<R>failedFuture(unwrap(error));
        }).thenCompose(f -> f);
    }

    private <Q, R> CompletableFuture<R> once(MethodDescriptor<Q, R> method, Q request, int node) {
        CallOptions options = CallOptions.DEFAULT;
        if (rpcTimeout != null) {
            options = options.withDeadlineAfter(rpcTimeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        CompletableFuture<R> result = new CompletableFuture<>();
        ClientCalls.asyncUnaryCall(nodes.channel(node).newCall(method, options), request, new StreamObserver<R>() {
            @Override
            public void onNext(R value) {
                result.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                result.completeExceptionally(GrpcErrors.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                // onNext already completed the future; a unary call without a value is an error upstream.
            }
        });
        return result;
    }

    static Throwable unwrap(Throwable t) {
        Throwable e = t;
        while (e instanceof CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** Configures a client. Give {@link #nodes} (plaintext) or {@link #channels} (anything else). */
    public static final class Builder {
        private final List<String> addresses = new ArrayList<>();
        private final List<Channel> channels = new ArrayList<>();
        private Duration rpcTimeout = Duration.ofSeconds(10);
        private int maxMessageBytes = 64 * 1024 * 1024;

        private Builder() {}

        /** {@code "host:port,host:port"}: dispatcher nodes, each reached over plaintext gRPC. */
        public Builder nodes(String commaSeparated) {
            Arrays.stream(commaSeparated.split(",")).map(String::trim).filter(s -> !s.isEmpty()).forEach(addresses::add);
            return this;
        }

        public Builder nodes(List<String> hostPorts) {
            addresses.addAll(hostPorts);
            return this;
        }

        /** Channels you built yourself (TLS, in-process, interceptors); the client does not close them. */
        public Builder channels(List<? extends Channel> given) {
            channels.addAll(given);
            return this;
        }

        /** Bound of every call (default 10 s); null for none. */
        public Builder rpcTimeout(Duration timeout) {
            this.rpcTimeout = timeout;
            return this;
        }

        /** Largest message either way (default 64 MiB: big batches exceed gRPC's 4 MiB default). */
        public Builder maxMessageBytes(int bytes) {
            this.maxMessageBytes = bytes;
            return this;
        }

        public TaskringClient build() {
            List<String> names = new ArrayList<>();
            List<Channel> all = new ArrayList<>();
            List<ManagedChannel> owned = new ArrayList<>();
            for (String a : addresses) {
                ManagedChannel c = Grpc.newChannelBuilder(Objects.requireNonNull(a), InsecureChannelCredentials.create())
                        .maxInboundMessageSize(maxMessageBytes)
                        .build();
                names.add(a);
                all.add(c);
                owned.add(c);
            }
            for (Channel c : channels) {
                names.add(c.authority());
                all.add(c);
            }
            return new TaskringClient(new NodeList(names, all, owned), rpcTimeout);
        }
    }
}
