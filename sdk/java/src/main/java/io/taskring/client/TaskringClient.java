package io.taskring.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.taskring.TaskState;
import io.taskring.errors.GrpcErrors;
import io.taskring.errors.RpcException;
import io.taskring.errors.UnavailableException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import taskring.v1.GraphServiceGrpc;
import taskring.v1.TaskServiceGrpc;
import taskring.v1.Taskring;

/**
 * Client of the TaskService and the GraphService: submit, cancel and look up tasks and graphs. Thread-safe; share one
 * per process. Every method returns a {@link CompletableFuture} that fails with an
 * {@link RpcException} subclass; {@link #blocking()} gives the same calls, waiting.
 *
 * <p>Calls go round robin over the configured nodes. A call that may be repeated
 * safely (get, cancel, a graph's submit, get and cancel, and a submit that carries its own task id) is tried once more
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
        // Inside a traced request the task goes on with its trace (CurrentTrace).
        Taskring.Task task = Envelope.toWire(spec, CurrentTrace.traceparent());
        Taskring.SubmitRequest req = Taskring.SubmitRequest.newBuilder().setTask(task).build();
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
        String traceparent = CurrentTrace.traceparent(); // "" outside a traced request
        for (TaskSpec s : specs) {
            req.addTasks(Envelope.toWire(s, traceparent));
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

    /**
     * Submit a graph of tasks ({@link Graph}) in one call. The server validates it whole before
     * writing anything: an InvalidArgumentException names the field ({@code tasks[2].depends_on[0]}).
     * A retry with the same graph id and tasks answers the graph as it stands ({@code duplicate}),
     * so it is tried once more on the next node after UNAVAILABLE.
     *
     * @throws io.taskring.errors.InvalidGraphException at once, nothing sent, for a graph without tasks
     */
    public CompletableFuture<SubmittedGraph> submitGraph(Graph graph) {
        Taskring.SubmitGraphRequest req = graph.toWire();
        int n = req.getTasksCount();
        return call(GraphServiceGrpc.getSubmitGraphMethod(), req, true).thenApply(r -> GraphWire.fromWire(r, n));
    }

    /** The graph: each task's state, attempts, edges, and what a waiting one waits for (no results). */
    public CompletableFuture<GraphInfo> getGraph(String namespace, String graphId) {
        return getGraph(namespace, graphId, false);
    }

    /**
     * The graph; with {@code withResults}, each task's kept result too ({@link GraphNode#result()}).
     * NotFoundException for a graph that does not exist.
     */
    public CompletableFuture<GraphInfo> getGraph(String namespace, String graphId, boolean withResults) {
        Taskring.GetGraphRequest req = Taskring.GetGraphRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setGraphId(Objects.requireNonNull(graphId, "graphId")).setWithResults(withResults).build();
        return call(GraphServiceGrpc.getGetGraphMethod(), req, true).thenApply(GraphWire::fromWire);
    }

    /** {@link #cancelGraph(String, String, CancelMode, String)}: graceful, with the server's reason. */
    public CompletableFuture<CancelledGraph> cancelGraph(String namespace, String graphId) {
        return cancelGraph(namespace, graphId, CancelMode.GRACEFUL, "");
    }

    /**
     * Cancel every task of the graph that has not ended. {@link CancelMode#GRACEFUL}: running tasks
     * finish (a failed one is not retried) and nothing new starts; {@link CancelMode#IMMEDIATE}: running
     * tasks of types that heartbeat are told to stop too. {@code reason} ({@code ""}: the server's) is
     * kept in each cancelled task's history. Completes with how many were cancelled and the keys of
     * those left running; NotFoundException for a graph that does not exist. A repeated cancel cancels
     * nothing more, so it is tried once more on the next node after UNAVAILABLE.
     */
    public CompletableFuture<CancelledGraph> cancelGraph(String namespace, String graphId, CancelMode mode,
            String reason) {
        Taskring.CancelGraphRequest req = Taskring.CancelGraphRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setGraphId(Objects.requireNonNull(graphId, "graphId"))
                .setMode(Objects.requireNonNull(mode, "mode").toWire())
                .setReason(Objects.requireNonNull(reason, "reason")).build();
        return call(GraphServiceGrpc.getCancelGraphMethod(), req, true).thenApply(GraphWire::fromWire);
    }

    /** Cron rules (create, update, get, list, pause, resume, delete) over this client's nodes. */
    public CronRules cron() {
        return new CronRules(this);
    }

    /** Task types' policy entries (get, list, put, delete) over this client's nodes. */
    public Policies policies() {
        return new Policies(this);
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

    /** One unary call, round robin; once more on the next node after UNAVAILABLE when {@code idempotent}. */
    <Q, R> CompletableFuture<R> call(MethodDescriptor<Q, R> method, Q request, boolean idempotent) {
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

    /**
     * Configures a client. Give {@link #nodes} (plaintext, or TLS with {@link #tls}) or
     * {@link #channels} (anything else); {@link #token} applies to both.
     */
    public static final class Builder {
        private final List<String> addresses = new ArrayList<>();
        private final List<Channel> channels = new ArrayList<>();
        private Duration rpcTimeout = Duration.ofSeconds(10);
        private int maxMessageBytes = 64 * 1024 * 1024;
        private BearerToken token;
        private Path caFile;
        private Path certFile;
        private Path keyFile;

        private Builder() {}

        /**
         * A token of the node's tokens file (docs/security.md): every call, on {@link #nodes}
         * and {@link #channels} alike, carries {@code authorization: Bearer <secret>}. Works on
         * plaintext too, where the token is readable on the network: use {@link #tls} beyond
         * the machine. The secret is never logged nor put in an exception. Null: no token.
         */
        public Builder token(String secret) {
            this.token = secret == null ? null : new BearerToken(secret);
            return this;
        }

        /** TLS to the {@link #nodes}: verify each against the CA certificate(s) in {@code caFile} (PEM). */
        public Builder tls(Path caFile) {
            return tls(caFile, null, null);
        }

        /**
         * Mutual TLS to the {@link #nodes}: as {@link #tls(Path)}, showing the client
         * certificate {@code certFile} with its key {@code keyFile} (PEM; the key PKCS#8, as
         * deploy/local/certs.sh writes it: grpc-java does not read SEC1 "EC PRIVATE KEY").
         * Both or neither. The files are read by {@link #build}.
         */
        public Builder tls(Path caFile, Path certFile, Path keyFile) {
            if ((certFile == null) != (keyFile == null)) {
                throw new IllegalArgumentException("tls: give both a client certificate and its key, or neither");
            }
            this.caFile = Objects.requireNonNull(caFile, "tls: caFile");
            this.certFile = certFile;
            this.keyFile = keyFile;
            return this;
        }

        /** {@code "host:port,host:port"}: dispatcher nodes, each reached over plaintext gRPC (or {@link #tls}). */
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
            ChannelCredentials credentials = addresses.isEmpty() ? null : credentials();
            for (String a : addresses) {
                ManagedChannel c = Grpc.newChannelBuilder(Objects.requireNonNull(a), credentials)
                        .maxInboundMessageSize(maxMessageBytes)
                        .build();
                names.add(a);
                all.add(withToken(c));
                owned.add(c);
            }
            for (Channel c : channels) {
                names.add(c.authority());
                all.add(withToken(c));
            }
            return new TaskringClient(new NodeList(names, all, owned), rpcTimeout);
        }

        private Channel withToken(Channel c) {
            return token == null ? c : ClientInterceptors.intercept(c, token);
        }

        private ChannelCredentials credentials() {
            if (caFile == null) {
                return InsecureChannelCredentials.create();
            }
            try {
                TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder().trustManager(caFile.toFile());
                if (certFile != null) {
                    tls.keyManager(certFile.toFile(), keyFile.toFile());
                }
                return tls.build();
            } catch (IOException e) {
                throw new UncheckedIOException("tls: cannot use " + caFile
                        + (certFile == null ? "" : " / " + certFile + " / " + keyFile) + ": " + e.getMessage(), e);
            }
        }
    }
}
