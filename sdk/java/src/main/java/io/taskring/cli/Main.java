package io.taskring.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Instants;
import io.taskring.TaskState;
import io.taskring.client.TaskEvent;
import io.taskring.client.TaskInfo;
import io.taskring.client.TaskringClient;
import io.taskring.errors.RpcException;
import io.taskring.errors.TaskringException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * A small command line for cross-language tests:
 *
 * <pre>
 *   get    --nodes host:port[,host:port...] --task-id ID [--timeout-ms N]   one JSON line: state and history
 *   cancel --nodes host:port[,host:port...] --task-id ID [--timeout-ms N]   the resulting state, e.g. cancelled
 * </pre>
 *
 * Exit status: 0 done, 1 the server refused (the error's class and message on stderr), 2 bad usage.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** The whole CLI without System.exit (tests, embedding). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length < 1 || !(args[0].equals("get") || args[0].equals("cancel"))) {
            return usage(err, "give a mode: get or cancel");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                return usage(err, "unexpected argument " + args[i]);
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        String nodes = opts.get("nodes");
        String taskId = opts.get("task-id");
        if (nodes == null || taskId == null) {
            return usage(err, "--nodes and --task-id are required");
        }
        Duration timeout = Duration.ofMillis(Long.parseLong(opts.getOrDefault("timeout-ms", "10000")));
        try (TaskringClient client = TaskringClient.builder().nodes(nodes).rpcTimeout(timeout).build()) {
            if (args[0].equals("get")) {
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

    /** The state and the history, in the Python SDK's names (states lower case, times RFC 3339). */
    static ObjectNode toJson(TaskInfo info) {
        ObjectNode o = new ObjectMapper().createObjectNode();
        o.put("task_id", info.taskId());
        o.put("state", info.state().wireName());
        o.put("attempts", info.attempts());
        o.put("last_error", info.lastError());
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
        return 2;
    }
}
