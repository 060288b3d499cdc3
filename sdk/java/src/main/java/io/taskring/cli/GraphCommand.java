package io.taskring.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.client.BlockingClient;
import io.taskring.client.CancelMode;
import io.taskring.client.CancelledGraph;
import io.taskring.client.Graph;
import io.taskring.client.GraphEdge;
import io.taskring.client.GraphInfo;
import io.taskring.client.GraphNode;
import io.taskring.client.GraphTaskRef;
import io.taskring.client.SubmittedGraph;
import io.taskring.client.TaskringClient;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.TaskringException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code Main graph ...}: graphs from the shell, the same command in every SDK's CLI (Go, Java, Node):
 *
 * <pre>
 *   graph submit --nodes HOST:PORT --file GRAPH.json
 *   graph get    --nodes HOST:PORT --namespace NS --graph-id ID [--with-results]
 *   graph cancel --nodes HOST:PORT --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]
 * </pre>
 *
 * <p>{@code submit} reads the graph file ({@link GraphFile}) and prints one JSON line
 * {@code {"graph_id", "duplicate", "tasks": {key: {"task_id", "state", "slot"}}}}; {@code get}
 * prints {@code {"graph_id", "namespace", "state", "counts", "nodes": {key: {"task_id", "state",
 * "attempts", "reason", "waiting", "result", "depends_on": [{"parent_key", "on_failure",
 * "outcome"}]}}}}, {@code result} being the kept result (null without {@code --with-results} or
 * when none); {@code cancel} (graceful unless {@code --mode immediate}) prints {@code {"cancelled",
 * "running": [key, ...]}}: how many tasks it cancelled and the running ones left to finish. A file that
 * is no graph, or a {@code --mode} other than graceful or immediate, is bad usage (exit 2, naming the
 * field), nothing sent; the
 * server's refusals exit 1 with the status and its message, which names the field
 * ({@code tasks[0].depends_on[0]: closes the cycle ...}), as in {@link PoliciesCommand}.
 */
final class GraphCommand {
    private static final Set<String> SUBMIT = Set.of("nodes", "file");
    private static final Set<String> GET = Set.of("nodes", "namespace", "graph-id", "with-results");
    private static final Set<String> CANCEL = Set.of("nodes", "namespace", "graph-id", "mode", "reason");
    /** Flags that take no value. */
    private static final Set<String> SWITCHES = Set.of("with-results");
    private static final ObjectMapper JSON = new ObjectMapper();

    private GraphCommand() {}

    /** {@code args} without the leading "graph". Exit status as {@link Main}: 0, 1 refused, 2 usage. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.length < 1) {
            return usage(err, "give an action: submit, get or cancel");
        }
        String action = args[0];
        Set<String> allowed = switch (action) {
            case "submit" -> SUBMIT;
            case "get" -> GET;
            case "cancel" -> CANCEL;
            default -> null;
        };
        if (allowed == null) {
            return usage(err, "unknown action " + action + ": submit, get or cancel");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String key = args[i].startsWith("--") ? args[i].substring(2) : null;
            if (key == null || !allowed.contains(key) || (!SWITCHES.contains(key) && i + 1 >= args.length)) {
                return usage(err, "unexpected argument " + args[i] + " for graph " + action);
            }
            opts.put(key, SWITCHES.contains(key) ? "true" : args[++i]);
        }
        List<String> required = action.equals("submit") ? List.of("nodes", "file")
                : List.of("nodes", "namespace", "graph-id");
        for (String r : required) {
            if (!opts.containsKey(r)) {
                return usage(err, "graph " + action + " needs --" + String.join(", --", required));
            }
        }
        CancelMode mode = CancelMode.GRACEFUL;
        if (opts.containsKey("mode")) {
            try {
                mode = CancelMode.parse(opts.get("mode"));
            } catch (IllegalArgumentException e) {
                return usage(err, "--" + e.getMessage());
            }
        }
        Graph graph = null;
        if (action.equals("submit")) {
            try {
                graph = GraphFile.parse(Files.readString(Path.of(opts.get("file"))));
            } catch (IOException e) {
                return usage(err, "--file: cannot read " + opts.get("file") + ": " + e.getMessage());
            } catch (GraphFile.BadGraphFile | InvalidTaskSpecException e) { // InvalidGraphException too
                return usage(err, opts.get("file") + ": " + e.getMessage());
            }
        }
        try (TaskringClient client = Main.security(TaskringClient.builder(), env).nodes(opts.get("nodes")).build()) {
            BlockingClient blocking = client.blocking();
            ObjectNode line = switch (action) {
                case "submit" -> toJson(blocking.submitGraph(graph));
                case "cancel" -> toJson(blocking.cancelGraph(opts.get("namespace"), opts.get("graph-id"), mode,
                        opts.getOrDefault("reason", "")));
                default -> toJson(blocking.getGraph(opts.get("namespace"), opts.get("graph-id"),
                        opts.containsKey("with-results")));
            };
            out.println(JSON.writeValueAsString(line));
            return 0;
        } catch (TaskringException e) {
            // RpcException's message starts with the status code: "InvalidArgumentException: INVALID_ARGUMENT: ..."
            err.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println(e);
            return 1;
        }
    }

    /** The receipt as every SDK's CLI prints it. */
    static ObjectNode toJson(SubmittedGraph g) {
        ObjectNode o = JSON.createObjectNode();
        o.put("graph_id", g.graphId());
        o.put("duplicate", g.duplicate());
        ObjectNode tasks = o.putObject("tasks");
        for (GraphTaskRef t : g.tasks().values()) {
            ObjectNode one = tasks.putObject(t.key());
            one.put("task_id", t.taskId());
            one.put("state", t.state().wireName());
            one.put("slot", t.slot());
        }
        return o;
    }

    /** What a cancel did, as every SDK's CLI prints it. */
    static ObjectNode toJson(CancelledGraph c) {
        ObjectNode o = JSON.createObjectNode();
        o.put("cancelled", c.cancelled());
        ArrayNode running = o.putArray("running");
        c.running().forEach(running::add);
        return o;
    }

    /** The graph as every SDK's CLI prints it. */
    static ObjectNode toJson(GraphInfo g) {
        ObjectNode o = JSON.createObjectNode();
        o.put("graph_id", g.graphId());
        o.put("namespace", g.namespace());
        o.put("state", g.state());
        ObjectNode counts = o.putObject("counts");
        g.counts().forEach(counts::put);
        ObjectNode nodes = o.putObject("nodes");
        for (GraphNode n : g.nodes().values()) {
            ObjectNode one = nodes.putObject(n.key());
            one.put("task_id", n.taskId());
            one.put("state", n.state().wireName());
            one.put("attempts", n.attempts());
            one.put("reason", n.reason());
            one.put("waiting", n.waiting());
            one.set("result", n.result() == null ? JSON.nullNode() : n.result());
            ArrayNode edges = one.putArray("depends_on");
            for (GraphEdge e : n.dependsOn()) {
                ObjectNode edge = edges.addObject();
                edge.put("parent_key", e.parentKey());
                edge.put("on_failure", e.onFailure().wireName());
                edge.put("outcome", e.outcome());
            }
        }
        return o;
    }

    private static int usage(PrintStream err, String problem) {
        err.println("taskring: " + problem);
        err.println("usage: graph submit --nodes HOST:PORT --file GRAPH.json");
        err.println("       graph get --nodes HOST:PORT --namespace NS --graph-id ID [--with-results]");
        err.println("       graph cancel --nodes HOST:PORT --namespace NS --graph-id ID [--mode graceful|immediate] [--reason TEXT]");
        return 2;
    }
}
