package io.taskring.executor;

import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.taskring.errors.TaskringException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import taskring.v1.Taskring;

/**
 * The executor: a small gRPC server inside a business service that runs its tasks.
 *
 * <p>{@link #start()} starts the server, then (with a ZooKeeper connect string) registers
 * one ephemeral znode per namespace it serves, only once the server can answer.
 * {@link #stop(Duration)} undoes this in reverse: deregister first so dispatchers stop
 * sending, stop taking new calls, let in-flight work finish for the grace period, then
 * answer what is still running as retryable (so the dispatcher re-queues it at once
 * instead of waiting for its RPC deadline) and interrupt those handlers. Start once.
 */
public final class TaskringExecutor implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TaskringExecutor.class);

    // The server's rules (dispatcher/validation.py); a task type may contain ':'.
    static final Pattern NAMESPACE = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
    static final Pattern TASK_TYPE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,127}");
    static final Pattern INSTANCE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,127}");

    /** The executor's certificate chain (PEM), read by {@link Builder#tlsFromEnv()} and the CLI. */
    public static final String ENV_TLS_CERT_FILE = "TASKRING_EXECUTOR_TLS_CERT_FILE";
    /** Its private key (PEM, PKCS#8). */
    public static final String ENV_TLS_KEY_FILE = "TASKRING_EXECUTOR_TLS_KEY_FILE";
    /** The CA of the dispatchers' client certificates (PEM): mutual TLS. */
    public static final String ENV_TLS_CLIENT_CA_FILE = "TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE";

    private static final int MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

    private enum State { NEW, RUNNING, STOPPED }

    private final Map<String, Handler> handlers;
    private final Map<String, TreeSet<String>> typesByNamespace;
    private final String zookeeper;
    private final String host;
    private final int port;
    private final String advertiseHost;
    private final int maxInFlight;
    private final String instanceId;
    private final Duration zkSessionTimeout;
    private final Duration zkConnectTimeout;
    private final ServerCredentials credentials;
    private final String security; // for the log: plaintext, tls or mtls
    private final Consumer<Taskring.Outcome> outcomeObserver;

    private final Object stateLock = new Object();
    private State state = State.NEW;
    private Server server;
    private DeliveryRunner runner;
    private ExecuteService service;
    private ExecutorService pool;
    private ScheduledThreadPoolExecutor timer;
    private Registration registration;

    private TaskringExecutor(Builder b) {
        this.handlers = Map.copyOf(b.handlers);
        this.typesByNamespace = new TreeMap<>(); // a copy: the builder may be reused
        b.typesByNamespace.forEach((ns, types) -> this.typesByNamespace.put(ns, new TreeSet<>(types)));
        this.zookeeper = b.zookeeper;
        this.host = b.host;
        this.port = b.port;
        this.advertiseHost = b.advertiseHost != null ? b.advertiseHost : defaultAdvertiseHost(b.host);
        this.maxInFlight = b.maxInFlight;
        this.instanceId = b.instanceId != null ? b.instanceId : defaultInstanceId();
        this.zkSessionTimeout = b.zkSessionTimeout;
        this.zkConnectTimeout = b.zkConnectTimeout;
        this.credentials = b.tls == null ? InsecureServerCredentials.create() : b.tls.credentials();
        this.outcomeObserver = b.outcomeObserver;
        this.security = b.tls == null ? "plaintext" : b.tls.mutual() ? "mutual TLS" : "TLS";
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Start serving, then register. Returns once both are done. */
    public void start() {
        synchronized (stateLock) {
            if (state != State.NEW) {
                throw new IllegalStateException("an executor starts once; this one is " + state);
            }
            state = State.RUNNING;
        }
        try {
            pool = Executors.newCachedThreadPool(daemon("taskring-handler"));
            timer = new ScheduledThreadPoolExecutor(1, daemon("taskring-timer"));
            timer.setRemoveOnCancelPolicy(true);
            runner = new DeliveryRunner(handlers, maxInFlight, pool, timer);
            server = NettyServerBuilder.forAddress(new InetSocketAddress(host, port), credentials)
                    .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                    .addService(service = new ExecuteService(runner, outcomeObserver))
                    .build()
                    .start();
            if (zookeeper != null) {
                registration = new Registration(zookeeper, znodes(), zkSessionTimeout, zkConnectTimeout);
                registration.start();
            }
        } catch (IOException e) {
            stop(Duration.ZERO);
            throw new TaskringException("executor cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            stop(Duration.ZERO);
            throw e;
        }
        log.info("executor {} serving {} at {} ({})", instanceId, typesByNamespace, address(), security);
    }

    /**
     * Deregister, stop taking deliveries, let in-flight work finish for up to {@code grace},
     * then answer the rest RETRYABLE and interrupt their handlers. Safe before start and twice.
     */
    public void stop(Duration grace) {
        synchronized (stateLock) {
            State previous = state;
            state = State.STOPPED;
            if (previous != State.RUNNING) {
                return;
            }
        }
        if (registration != null) {
            registration.stop(); // first: dispatchers stop sending while the rest drains
        }
        if (runner != null) {
            runner.refuseNew();
        }
        try {
            if (server != null) {
                server.shutdown(); // new calls get UNAVAILABLE, which a dispatcher retries elsewhere
                service.closeStreams(); // Work streams end once what they run has answered
                if (!server.awaitTermination(Math.max(0, grace.toNanos()), TimeUnit.NANOSECONDS)) {
                    int n = runner.abandonAll("executor stopped before the task finished (grace of "
                            + grace.toMillis() + " ms passed)");
                    if (n > 0) {
                        log.warn("executor {} stopped with {} tasks unfinished; answered them as retryable", instanceId, n);
                    }
                    if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                        server.shutdownNow();
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
        } finally {
            if (pool != null) {
                pool.shutdownNow();
            }
            if (timer != null) {
                timer.shutdownNow();
            }
        }
    }

    /** {@code stop(10 s)}. */
    @Override
    public void close() {
        stop(Duration.ofSeconds(10));
    }

    /** {@code host:port} the dispatchers call, once started. */
    public String address() {
        if (server == null) {
            throw new IllegalStateException("the executor has no address until start()");
        }
        int bound = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
        return advertiseHost.contains(":") ? "[" + advertiseHost + "]:" + bound : advertiseHost + ":" + bound;
    }

    public String instanceId() {
        return instanceId;
    }

    public int maxInFlight() {
        return maxInFlight;
    }

    /** Namespace -> its task types, sorted. */
    public Map<String, List<String>> taskTypes() {
        Map<String, List<String>> out = new TreeMap<>();
        typesByNamespace.forEach((ns, types) -> out.put(ns, List.copyOf(types)));
        return out;
    }

    /** The znodes this executor holds (inside the chroot), one per namespace. */
    public List<String> registrationPaths() {
        return typesByNamespace.keySet().stream().map(ns -> RegistrationData.path(ns, instanceId)).toList();
    }

    /** Handlers running now, including timed-out ones whose thread has not returned. */
    public int inFlight() {
        return runner == null ? 0 : runner.inFlight();
    }

    /** Deliveries received and waiting for a free slot. */
    public int waiting() {
        return runner == null ? 0 : runner.waiting();
    }

    /** For tests: the live registration, to expire its session. */
    Registration registration() {
        return registration;
    }

    private Map<String, byte[]> znodes() {
        Map<String, byte[]> out = new LinkedHashMap<>();
        long pid = ProcessHandle.current().pid();
        typesByNamespace.forEach((ns, types) ->
                out.put(RegistrationData.path(ns, instanceId), RegistrationData.json(address(), ns, types, maxInFlight, pid)));
        return out;
    }

    private static ThreadFactory daemon(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.getAndIncrement());
            t.setDaemon(true); // a hung handler must not keep the service from exiting
            return t;
        };
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "localhost";
        }
    }

    private static String defaultAdvertiseHost(String host) {
        return List.of("0.0.0.0", "::", "[::]", "").contains(host) ? hostname() : host;
    }

    private static String defaultInstanceId() {
        String h = hostname().replaceAll("[^A-Za-z0-9._-]", "-");
        if (h.isEmpty() || !Character.isLetterOrDigit(h.charAt(0))) {
            h = "host" + h;
        }
        byte[] random = new byte[3];
        new SecureRandom().nextBytes(random);
        return h + "-" + ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(random);
    }

    /** Configures an executor; nothing runs until {@link #start()}. */
    public static final class Builder {
        private final Map<String, Handler> handlers = new LinkedHashMap<>();
        private final Map<String, TreeSet<String>> typesByNamespace = new TreeMap<>();
        private String namespace;
        private String zookeeper;
        private String host = "127.0.0.1";
        private int port;
        private String advertiseHost;
        private int maxInFlight = 64;
        private String instanceId;
        private Duration zkSessionTimeout = Duration.ofSeconds(10);
        private Duration zkConnectTimeout = Duration.ofSeconds(10);
        private ExecutorTls tls;
        private Consumer<Taskring.Outcome> outcomeObserver;

        private Builder() {}

        /** The namespace of the handlers registered without one. */
        public Builder namespace(String namespace) {
            this.namespace = checkNamespace(namespace);
            return this;
        }

        /**
         * ZooKeeper connect string, optionally with a chroot ({@code "127.0.0.1:22181/taskring"},
         * created when missing). Without one the executor does not register (tests, fixed addresses).
         */
        public Builder zookeeper(String connectString) {
            this.zookeeper = connectString;
            return this;
        }

        /** Where the server listens (port 0: any free port). Default 127.0.0.1:0. */
        public Builder listen(String host, int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port: must be in 0..65535, got " + port);
            }
            this.host = Objects.requireNonNull(host);
            this.port = port;
            return this;
        }

        /** The host written into ZooKeeper when it differs from the listen host. */
        public Builder advertiseHost(String host) {
            this.advertiseHost = host;
            return this;
        }

        /** Cap on handlers running at once across all batches (default 64); more deliveries wait. */
        public Builder maxInFlight(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("max_in_flight: must be at least 1, got " + n);
            }
            this.maxInFlight = n;
            return this;
        }

        /** Names the znode (default hostname-pid-random). */
        public Builder instanceId(String id) {
            if (!INSTANCE_ID.matcher(id).matches()) {
                throw new IllegalArgumentException("instance_id: must match " + INSTANCE_ID.pattern() + ", got '" + id + "'");
            }
            this.instanceId = id;
            return this;
        }

        public Builder zkSessionTimeout(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("zk_session_timeout: must be positive");
            }
            this.zkSessionTimeout = d;
            return this;
        }

        /** How long start() waits for ZooKeeper (default 10 s). */
        public Builder zkConnectTimeout(Duration d) {
            this.zkConnectTimeout = d;
            return this;
        }

        /**
         * Serve TLS: the executor's certificate chain {@code certChain} and its key {@code key}
         * (PEM; the key PKCS#8, as deploy/local/certs.sh writes it: grpc-java does not read
         * SEC1 "EC PRIVATE KEY"). Dispatchers then need {@code TASKRING_EXECUTOR_CA_FILE}, a CA
         * that signed this certificate. The files are read and checked by {@link #build}.
         */
        public Builder tls(Path certChain, Path key) {
            return tls(certChain, key, null);
        }

        /**
         * Serve TLS as {@link #tls(Path, Path)}; with {@code clientCa} (PEM, may be null) mutual
         * TLS: a dialer must show a client certificate that CA signed, or its handshake fails.
         * Both {@code certChain} and {@code key} are required; an {@link IllegalArgumentException}
         * names the one missing (tls_cert_file, tls_key_file). TLS 1.2 at least.
         */
        public Builder tls(Path certChain, Path key, Path clientCa) {
            if (certChain == null && key == null && clientCa == null) {
                throw new IllegalArgumentException("tls_cert_file: required (with tls_key_file)");
            }
            this.tls = ExecutorTls.of(certChain, key, clientCa, ExecutorTls.Names.BUILDER);
            return this;
        }

        /**
         * {@link #tls} from the process environment: {@value TaskringExecutor#ENV_TLS_CERT_FILE} and
         * {@value TaskringExecutor#ENV_TLS_KEY_FILE} (both or neither), plus {@value TaskringExecutor#ENV_TLS_CLIENT_CA_FILE}
         * for mutual TLS. Nothing set: plaintext, as before (a no-op). Only some set: an
         * {@link IllegalArgumentException} naming the variable. The builder never reads the
         * environment on its own.
         */
        public Builder tlsFromEnv() {
            return tlsFromEnv(System.getenv());
        }

        /** {@link #tlsFromEnv()} with the variables from {@code env} (tests, embedding). */
        public Builder tlsFromEnv(Map<String, String> env) {
            ExecutorTls fromEnv = ExecutorTls.fromEnv(env);
            if (fromEnv != null) {
                this.tls = fromEnv;
            }
            return this;
        }

        /**
         * Called with every outcome as it is decided, before the batch's answer is sent (logs,
         * metrics, the CLI). It runs on the thread that decided it: keep it quick. Null: none.
         */
        public Builder outcomeObserver(Consumer<Taskring.Outcome> observer) {
            this.outcomeObserver = observer;
            return this;
        }

        /** Run {@code handler} on a handler thread for tasks of {@code taskType} in the default namespace. */
        public Builder handler(String taskType, TaskHandler handler) {
            return handler(requireNamespace(), taskType, handler);
        }

        public Builder handler(String namespace, String taskType, TaskHandler handler) {
            return add(namespace, taskType, Handler.of(Objects.requireNonNull(handler, "handler")));
        }

        /** An async handler: it returns a future and must not block its caller. */
        public Builder asyncHandler(String taskType, AsyncTaskHandler handler) {
            return asyncHandler(requireNamespace(), taskType, handler);
        }

        public Builder asyncHandler(String namespace, String taskType, AsyncTaskHandler handler) {
            return add(namespace, taskType, Handler.of(Objects.requireNonNull(handler, "handler")));
        }

        /**
         * Checks the configuration, reading the TLS files (an {@link IllegalArgumentException}
         * names the option and the path of one that cannot be read or parsed). Listens on nothing yet.
         */
        public TaskringExecutor build() {
            if (handlers.isEmpty()) {
                throw new IllegalStateException("no handlers registered");
            }
            return new TaskringExecutor(this);
        }

        private Builder add(String namespace, String taskType, Handler h) {
            checkNamespace(namespace);
            if (!TASK_TYPE.matcher(taskType).matches()) {
                throw new IllegalArgumentException("task_type: must match " + TASK_TYPE.pattern() + ", got '" + taskType + "'");
            }
            String key = Handler.key(namespace, taskType);
            if (handlers.containsKey(key)) {
                throw new IllegalArgumentException("task_type: '" + taskType + "' already has a handler in " + namespace);
            }
            handlers.put(key, h);
            typesByNamespace.computeIfAbsent(namespace, ns -> new TreeSet<>()).add(taskType);
            return this;
        }

        private String requireNamespace() {
            if (namespace == null) {
                throw new IllegalStateException("set namespace(...) first, or pass the namespace to handler(...)");
            }
            return namespace;
        }

        private static String checkNamespace(String ns) {
            if (ns == null || !NAMESPACE.matcher(ns).matches()) {
                throw new IllegalArgumentException("namespace: must match " + NAMESPACE.pattern() + ", got '" + ns + "'");
            }
            return ns;
        }
    }
}
