package io.taskring.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Instants;
import io.taskring.TaskState;
import io.taskring.client.TaskEvent;
import io.taskring.client.SubmitResult;
import io.taskring.client.TaskInfo;
import io.taskring.client.TaskSpec;
import io.taskring.client.TaskringClient;
import io.taskring.errors.RpcException;
import io.taskring.errors.TaskringException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * A small command line for cross-language tests:
 *
 * <pre>
 *   get    --nodes host:port[,host:port...] --task-id ID [--timeout-ms N]   one JSON line: state and history
 *   cancel --nodes host:port[,host:port...] --task-id ID [--timeout-ms N]   the resulting state, e.g. cancelled
 *   submit --nodes host:port[,host:port...] --namespace NS --type T [--payload JSON] [--task-id ID]
 *          [--delay-ms N] [--timeout-ms N]                                   the task_id
 *   cron   create|update|get|list|pause|resume|delete ...                    one JSON line per rule ({@link CronCommand})
 *   policies put|get|delete|list ...                                         one JSON line per task type's policy
 *                                                                            ({@link PoliciesCommand})
 *   graph  submit|get|cancel ...                                             one JSON line: the graph's receipt,
 *                                                                            state or what was cancelled
 *                                                                            ({@link GraphCommand})
 *   executor --zk HOST:PORT[/chroot] --namespace NS --types a,b ...          serves until SIGTERM; one line per outcome
 *                                                                            ({@link ExecutorCommand})
 * </pre>
 *
 * <p>Like the Python commands, it reads the token and TLS files from the environment only
 * (arguments show in {@code ps}): {@code TASKRING_TOKEN}, sent as {@code authorization: Bearer
 * ...}; {@code TASKRING_CA_FILE} for TLS, plus {@code TASKRING_CLIENT_CERT_FILE} and
 * {@code TASKRING_CLIENT_KEY_FILE} (PKCS#8) for mutual TLS.
 *
 * Exit status: 0 done, 1 the server refused (the error's class and message on stderr), 2 bad usage.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** The whole CLI without System.exit (tests, embedding), with the process's environment. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, System.getenv(), out, err);
    }

    /** The whole CLI, reading TASKRING_TOKEN and the TLS files from {@code env}. */
    public static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.length >= 1 && args[0].equals("cron")) {
            return CronCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), env, out, err);
        }
        if (args.length >= 1 && args[0].equals("policies")) {
            return PoliciesCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), env, out, err);
        }
        if (args.length >= 1 && args[0].equals("graph")) {
            return GraphCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), env, out, err);
        }
        if (args.length >= 1 && args[0].equals("executor")) {
            return ExecutorCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), env, out, err);
        }
        if (args.length < 1 || !(args[0].equals("get") || args[0].equals("cancel") || args[0].equals("submit"))) {
            return usage(err, "give a mode: get, cancel, submit, cron, policies, graph or executor");
        }
        boolean submit = args[0].equals("submit");
        // A flag this mode does not know is refused, not ignored: a --max-retries that did nothing
        // would submit a task other than the one asked for.
        java.util.Set<String> known = submit
                ? java.util.Set.of("nodes", "namespace", "type", "payload", "task-id", "delay-ms", "timeout-ms")
                : java.util.Set.of("nodes", "task-id", "timeout-ms");
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                return usage(err, "unexpected argument " + args[i]);
            }
            String name = args[i].substring(2);
            if (!known.contains(name)) {
                return usage(err, "--" + name + ": not a flag of " + args[0] + " (its flags: --"
                        + String.join(", --", new java.util.TreeSet<>(known)) + ")");
            }
            opts.put(name, args[++i]);
        }
        String nodes = opts.get("nodes");
        String taskId = opts.get("task-id");
        if (submit ? nodes == null || opts.get("namespace") == null || opts.get("type") == null
                : nodes == null || taskId == null) {
            return usage(err, submit ? "--nodes, --namespace and --type are required" : "--nodes and --task-id are required");
        }
        Duration timeout = Duration.ofMillis(Long.parseLong(opts.getOrDefault("timeout-ms", "10000")));
        try (TaskringClient client = security(TaskringClient.builder(), env).nodes(nodes).rpcTimeout(timeout).build()) {
            if (submit) {
                TaskSpec.Builder spec = TaskSpec.builder(opts.get("namespace"), opts.get("type"))
                        .payloadJson(opts.getOrDefault("payload", "{}"));
                if (taskId != null) {
                    spec.taskId(taskId);
                }
                if (opts.containsKey("delay-ms")) {
                    spec.delay(Duration.ofMillis(Long.parseLong(opts.get("delay-ms"))));
                }
                SubmitResult r = client.blocking().submit(spec.build());
                out.println(r.taskId());
            } else if (args[0].equals("get")) {
                out.println(new ObjectMapper().writeValueAsString(toJson(client.blocking().get(taskId))));
            } else {
                TaskState state = client.blocking().cancel(taskId);
                out.println(state.wireName());
            }
            return 0;
        } catch (RpcException e) {
            err.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (TaskringException e) {
            err.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println(e);
            return 1;
        }
    }

    /** TASKRING_TOKEN and TASKRING_CA_FILE / _CLIENT_CERT_FILE / _CLIENT_KEY_FILE, when set. */
    static TaskringClient.Builder security(TaskringClient.Builder b, Map<String, String> env) {
        String token = env.get("TASKRING_TOKEN");
        if (token != null && !token.isEmpty()) {
            b.token(token);
        }
        String ca = env.get("TASKRING_CA_FILE");
        if (ca != null && !ca.isEmpty()) {
            String cert = env.get("TASKRING_CLIENT_CERT_FILE");
            String key = env.get("TASKRING_CLIENT_KEY_FILE");
            b.tls(Path.of(ca), cert == null || cert.isEmpty() ? null : Path.of(cert),
                    key == null || key.isEmpty() ? null : Path.of(key));
        }
        return b;
    }

    /** The state and the history, in the Python SDK's names (states lower case, times RFC 3339). */
    static ObjectNode toJson(TaskInfo info) {
        ObjectNode o = new ObjectMapper().createObjectNode();
        o.put("task_id", info.taskId());
        o.put("state", info.state().wireName());
        o.put("attempts", info.attempts());
        o.put("last_error", info.lastError());
        o.put("waiting", info.waiting());   // why it has not started: "" unless held at a limit
        ArrayNode history = o.putArray("history");
        for (TaskEvent ev : info.history()) {
            ObjectNode e = history.addObject();
            e.put("state", ev.state().wireName());
            e.put("at", Instants.format(ev.at()));
            e.put("at_epoch_ms", ev.at().toInstant().toEpochMilli());
            e.put("node", ev.node());
            e.put("attempt", ev.attempt());
            e.put("detail", ev.detail());
        }
        return o;
    }

    private static int usage(PrintStream err, String problem) {
        err.println("taskring: " + problem);
        err.println("usage: get|cancel --nodes host:port[,host:port...] --task-id ID [--timeout-ms N]");
        err.println("       submit --nodes host:port[,host:port...] --namespace NS --type T [--payload JSON] [--task-id ID] [--delay-ms N]");
        err.println("       cron create|update|get|list|pause|resume|delete ... (see: cron)");
        err.println("       policies put|get|delete|list ... (see: policies)");
        err.println("       graph submit|get|cancel ... (see: graph)");
        err.println("       executor --zk HOST:PORT[/chroot] --namespace NS --types a,b ... (see: executor)");
        return 2;
    }
}
