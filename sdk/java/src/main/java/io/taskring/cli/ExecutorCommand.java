package io.taskring.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.errors.NonRetryableException;
import io.taskring.errors.RetryableException;
import io.taskring.errors.TaskStoppedException;
import io.taskring.errors.TaskringException;
import io.taskring.executor.ParentResult;
import io.taskring.executor.TaskContext;
import io.taskring.executor.TaskHandler;
import io.taskring.executor.TaskringExecutor;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import taskring.v1.Taskring;

/**
 * {@code Main executor ...}: an executor from the shell, as {@code taskring-go executor}
 * (sdk/go/cmd/taskring-go/executor.go) and the Node CLI's, for the cross-language tests:
 *
 * <pre>
 *   executor --zk HOST:PORT[,HOST:PORT...][/chroot] --namespace NS --types a,b
 *            [--behavior ok|panic-once|fail-once|heartbeat|graph-results] [--listen 127.0.0.1:0] [--instance-id ID]
 *            [--max-in-flight 64] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
 * </pre>
 *
 * <p>It registers in ZooKeeper, serves until SIGTERM or SIGINT, then stops gracefully (the
 * znode goes first, in-flight work gets 10 s to finish) and exits 0. Stdout carries only
 * one line per outcome, {@code "<task_id> <attempt> <kind>"} with the kind as the Go CLI
 * prints it ({@code succeeded}, {@code retryable_failure}, ...), and the heartbeat behaviour's
 * "stopped" line (below); the rest goes to stderr.
 * panic-once throws a RuntimeException on attempt 1 and succeeds from attempt 2; fail-once
 * throws a RetryableException likewise (they key on the attempt, so they hold across executors).
 * heartbeat works for {@code payload.ms}, heartbeating {@code {"done_ms": N}} every
 * {@code payload.every_ms} (default 100) from the previous attempt's {@code done_ms}, then
 * succeeds; stopped (its thread interrupted by a CANCEL or LOST answer, or at the deadline) it
 * prints {@code "stopped <task_id> <why>"}, why being {@code cancelled: <reason>},
 * {@code lost: <reason>} or {@code interrupted}, and ends.
 * graph-results (for tasks of graphs) prints {@code {"graph_run": <task type>, "task_id": ...,
 * "parents": {key: {"outcome", "result"}}}} from its parents' results, then fails non-retryably
 * when the payload says {@code {"fail": true}}, else keeps {@code {"type": <task type>, "saw":
 * <the same parents>}} as its result.
 * The TLS flags default to TASKRING_EXECUTOR_TLS_CERT_FILE, _KEY_FILE and _CLIENT_CA_FILE.
 */
final class ExecutorCommand {
    private static final Set<String> FLAGS = Set.of("zk", "namespace", "types", "behavior", "listen", "instance-id",
            "max-in-flight", "tls-cert", "tls-key", "tls-client-ca");
    private static final Duration GRACE = Duration.ofSeconds(10);
    private static final ObjectMapper JSON = new ObjectMapper();

    private ExecutorCommand() {}

    /** The parsed command line. {@code instanceId} null: the SDK's default; TLS paths null: none. */
    record Args(String zk, String namespace, List<String> types, String behavior, String host, int port,
                String instanceId, int maxInFlight, Path tlsCert, Path tlsKey, Path tlsClientCa) {}

    /** Bad usage: exit 2 with the message. */
    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }

    /** {@code args} without the leading "executor"; the TLS flags default to {@code env}'s variables. */
    static Args parse(String[] args, Map<String, String> env) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new UsageException("unexpected argument " + a + " for executor");
            }
            String key = a.substring(2);
            String value;
            int eq = key.indexOf('=');
            if (eq >= 0) {
                value = key.substring(eq + 1);
                key = key.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new UsageException("flag needs a value: " + a);
            }
            if (!FLAGS.contains(key)) {
                throw new UsageException("unknown flag --" + key + " for executor");
            }
            opts.put(key, value);
        }
        if (blank(opts.get("zk")) || blank(opts.get("namespace")) || blank(opts.get("types"))) {
            throw new UsageException("executor needs --zk, --namespace and --types");
        }
        String behavior = opts.getOrDefault("behavior", "ok");
        behavior(behavior, line -> { }); // checks the name
        String listen = opts.getOrDefault("listen", "127.0.0.1:0");
        int colon = listen.lastIndexOf(':');
        if (colon < 0) {
            throw new UsageException("--listen must be HOST:PORT, got '" + listen + "'");
        }
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = number("listen", listen.substring(colon + 1));
        if (port < 0 || port > 65535) {
            throw new UsageException("--listen: port must be in 0..65535, got " + port);
        }
        int maxInFlight = number("max-in-flight", opts.getOrDefault("max-in-flight", "64"));
        Path cert = path(opts, "tls-cert", env, TaskringExecutor.ENV_TLS_CERT_FILE);
        Path key = path(opts, "tls-key", env, TaskringExecutor.ENV_TLS_KEY_FILE);
        Path ca = path(opts, "tls-client-ca", env, TaskringExecutor.ENV_TLS_CLIENT_CA_FILE);
        if (cert != null && key == null) {
            throw new UsageException("--tls-key (or " + TaskringExecutor.ENV_TLS_KEY_FILE + "): required with --tls-cert");
        }
        if (key != null && cert == null) {
            throw new UsageException("--tls-cert (or " + TaskringExecutor.ENV_TLS_CERT_FILE + "): required with --tls-key");
        }
        if (ca != null && cert == null) {
            throw new UsageException("--tls-client-ca (or " + TaskringExecutor.ENV_TLS_CLIENT_CA_FILE
                    + "): mutual TLS needs --tls-cert and --tls-key too");
        }
        String instanceId = opts.get("instance-id");
        return new Args(opts.get("zk"), opts.get("namespace"), Arrays.asList(opts.get("types").split(",", -1)), behavior,
                host, port, blank(instanceId) ? null : instanceId, maxInFlight, cert, key, ca);
    }

    /**
     * The handler of --behavior; {@code print} takes its stdout lines (the heartbeat behaviour's
     * "stopped" line). The "once" behaviours key on the attempt number, not on memory.
     */
    static TaskHandler behavior(String name, Consumer<String> print) {
        return switch (name) {
            case "ok" -> ctx -> { };
            case "panic-once" -> ctx -> {
                if (ctx.attempt() <= 1) {
                    throw new RuntimeException("panic-once: attempt " + ctx.attempt() + " of " + ctx.taskId());
                }
            };
            case "fail-once" -> ctx -> {
                if (ctx.attempt() <= 1) {
                    throw new RetryableException("fail-once: attempt " + ctx.attempt() + " of " + ctx.taskId());
                }
            };
            case "heartbeat" -> ctx -> heartbeating(ctx, print);
            case "graph-results" -> ctx -> graphResults(ctx, print);
            default -> throw new UsageException("--behavior must be ok, panic-once, fail-once, heartbeat or graph-results, got \""
                    + name + "\"");
        };
    }

    /**
     * The heartbeat behaviour: "work" until {@code payload.ms} has passed, counted from the
     * {@code done_ms} of the previous attempt's last heartbeat, heartbeating {@code {"done_ms": N}}
     * every {@code payload.every_ms} (default 100); stopped, print the "stopped" line and end.
     */
    static void heartbeating(TaskContext ctx, Consumer<String> print) throws Exception {
        JsonNode payload = ctx.payload();
        long ms = payloadMs(payload, "ms", 0);
        long every = payloadMs(payload, "every_ms", 100);
        if (every == 0) {
            every = 100;
        }
        JsonNode last = ctx.previousDetails();
        long from = last != null && last.path("done_ms").canConvertToLong() ? last.path("done_ms").asLong() : 0;
        long start = System.nanoTime();
        try {
            for (long done = from; done < ms; ) {
                Thread.sleep(every);
                done = Math.min(ms, from + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                ctx.heartbeat(Map.of("done_ms", done));
            }
        } catch (TaskStoppedException e) {
            print.accept("stopped " + ctx.taskId() + " " + e.getMessage());
            throw e;
        } catch (InterruptedException e) {
            // The interrupt of a heartbeat's answer, the deadline or the executor's stop: only the
            // first comes with a reason, which a heartbeat now would throw.
            String why = "interrupted";
            if (ctx.isStopped()) {
                try {
                    ctx.heartbeat();
                } catch (TaskStoppedException stopped) {
                    why = stopped.getMessage();
                }
            }
            print.accept("stopped " + ctx.taskId() + " " + why);
            throw e;
        }
    }

    /**
     * The graph-results behaviour: what it saw of its parents, printed as one line (before a
     * failure too, so every run shows), then kept as its result {@code {"type", "saw"}}; fails
     * non-retryably when the payload says {@code {"fail": true}}.
     */
    static void graphResults(TaskContext ctx, Consumer<String> print) throws Exception {
        ObjectNode saw = JSON.createObjectNode();
        for (ParentResult p : ctx.parentResults().values()) {
            ObjectNode one = saw.putObject(p.key());
            one.put("outcome", p.outcome());
            // One left out of a delivery over 1 MiB shows as null: this behaviour keeps tiny results.
            JsonNode result = p.truncated() ? null : p.result();
            one.set("result", result == null ? JSON.nullNode() : result);
        }
        ObjectNode line = JSON.createObjectNode();
        line.put("graph_run", ctx.taskType());
        line.put("task_id", ctx.taskId());
        line.set("parents", saw);
        print.accept(JSON.writeValueAsString(line));
        if (ctx.payload().path("fail").asBoolean(false)) {
            throw new NonRetryableException("graph-results: the payload says fail");
        }
        ObjectNode result = JSON.createObjectNode();
        result.put("type", ctx.taskType());
        result.set("saw", saw);
        ctx.setResult(result);
    }

    /** A non-negative whole number of the payload, or {@code fallback} when absent. */
    private static long payloadMs(JsonNode payload, String field, long fallback) {
        JsonNode v = payload.get(field);
        if (v == null) {
            return fallback;
        }
        if (!v.canConvertToLong() || v.asLong() < 0) {
            throw new NonRetryableException("heartbeat: payload." + field + " must be a non-negative number, got " + v);
        }
        return v.asLong();
    }

    /** The builder of {@code a}; an IllegalArgumentException names what is wrong (a bad namespace, type, file). */
    static TaskringExecutor.Builder builder(Args a, Consumer<Taskring.Outcome> observer) {
        return builder(a, observer, line -> { });
    }

    /** {@link #builder(Args, Consumer)} whose behaviour prints its own lines (the "stopped" one) to {@code print}. */
    static TaskringExecutor.Builder builder(Args a, Consumer<Taskring.Outcome> observer, Consumer<String> print) {
        TaskringExecutor.Builder b = TaskringExecutor.builder().namespace(a.namespace()).zookeeper(a.zk())
                .listen(a.host(), a.port()).maxInFlight(a.maxInFlight()).outcomeObserver(observer);
        if (a.instanceId() != null) {
            b.instanceId(a.instanceId());
        }
        if (a.tlsCert() != null) {
            b.tls(a.tlsCert(), a.tlsKey(), a.tlsClientCa());
        }
        TaskHandler h = behavior(a.behavior(), print);
        for (String t : a.types()) {
            b.handler(t.strip(), h);
        }
        return b;
    }

    /** {@code "<task_id> <attempt> <kind>"}, as taskring-go prints it: the kind {@code succeeded}, {@code retryable_failure}, ... */
    static String line(Taskring.Outcome o) {
        return o.getTaskId() + " " + Integer.toUnsignedString(o.getAttempt()) + " " + kind(o.getKind());
    }

    /** The Go SDK's OutcomeKind: the proto name without OUTCOME_KIND_, lower case. */
    static String kind(Taskring.OutcomeKind k) {
        return k.name().replaceFirst("^OUTCOME_KIND_", "").toLowerCase(java.util.Locale.ROOT);
    }

    /** From {@link Main}: serves until SIGTERM or SIGINT. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        CompletableFuture<String> stop = new CompletableFuture<>();
        // Our handlers replace the JVM's, which would exit 143 without a graceful stop. Installed
        // only once the configuration is good: a usage error leaves the process's signals alone.
        Runnable onSignals = () -> {
            for (String signal : List.of("TERM", "INT")) {
                try {
                    sun.misc.Signal.handle(new sun.misc.Signal(signal), s -> stop.complete("SIG" + signal));
                } catch (IllegalArgumentException unsupported) { // e.g. SIGINT ignored by the launcher
                    err.println("taskring: cannot handle SIG" + signal + ": " + unsupported.getMessage());
                }
            }
        };
        return run(args, env, out, err, stop, onSignals, e -> { });
    }

    /**
     * The whole mode: serve until {@code stop} completes (its value says why, for stderr),
     * then stop gracefully. {@code configured} runs once the configuration is good, before
     * start; {@code started} sees the running executor (tests).
     * Exit status as {@link Main}: 0 stopped, 1 could not start, 2 bad usage or configuration.
     */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err,
                   CompletableFuture<String> stop, Runnable configured, Consumer<TaskringExecutor> started) {
        TaskringExecutor executor;
        try {
            Args a = parse(args, env);
            Consumer<String> print = text -> {
                synchronized (out) {
                    out.println(text);
                    out.flush();
                }
            };
            executor = builder(a, o -> print.accept(line(o)), print).build();
        } catch (UsageException e) {
            return usage(err, e.getMessage());
        } catch (IllegalArgumentException | IllegalStateException e) {
            return usage(err, flagNames(e.getMessage()));
        }
        configured.run();
        try {
            executor.start();
        } catch (TaskringException | IllegalStateException e) {
            err.println("taskring: executor did not start: " + e.getMessage());
            return 1;
        }
        err.println("taskring: executor " + executor.instanceId() + " serving " + executor.taskTypes() + " at "
                + executor.address() + ", znodes " + executor.registrationPaths());
        started.accept(executor);
        try {
            String why = stop.get();
            err.println("taskring: " + why + ": stopping (grace " + GRACE.toSeconds() + " s)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            err.println("taskring: stopping: " + e.getCause());
        }
        executor.stop(GRACE);
        err.println("taskring: executor " + executor.instanceId() + " stopped");
        return 0;
    }

    /** The builder names the TLS files by its fields; here they came from flags. */
    private static String flagNames(String message) {
        return message == null ? "" : message.replace("tls_client_ca_file", "--tls-client-ca")
                .replace("tls_cert_file", "--tls-cert").replace("tls_key_file", "--tls-key");
    }

    private static Path path(Map<String, String> opts, String flag, Map<String, String> env, String var) {
        String v = opts.containsKey(flag) ? opts.get(flag) : env.get(var);
        return blank(v) ? null : Path.of(v);
    }

    private static int number(String flag, String value) {
        try {
            return Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            throw new UsageException("--" + flag + ": not a number: '" + value + "'");
        }
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }

    private static int usage(PrintStream err, String problem) {
        err.println("taskring: " + problem);
        err.println("usage: executor --zk HOST:PORT[/chroot] --namespace NS --types a,b "
                + "[--behavior ok|panic-once|fail-once|heartbeat|graph-results]");
        err.println("                [--listen 127.0.0.1:0] [--instance-id ID] [--max-in-flight 64]");
        err.println("                [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]");
        return 2;
    }
}
