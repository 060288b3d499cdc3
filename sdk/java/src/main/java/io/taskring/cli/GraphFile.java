package io.taskring.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.taskring.client.Graph;
import io.taskring.client.Join;
import io.taskring.client.JoinRule;
import io.taskring.client.OnFailure;
import io.taskring.client.TaskSpec;
import io.taskring.errors.InvalidTaskSpecException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The graph file of {@code graph submit}, the same in every SDK's CLI:
 *
 * <pre>
 *   {"namespace": NS, "graph_id": ID, "tasks": [
 *     {"key": K, "task_type": T, "payload": {...},
 *      "after": [{"key": K, "on_failure": "skip"|"ignore"|"continue"}],
 *      "join": {"rule": "all_succeeded"|"all_done"|"none_failed"|"any_succeeded"|"at_least", "at_least": N}}]}
 * </pre>
 *
 * <p>{@code payload}, {@code after}, {@code on_failure} (skip) and {@code join} (all_succeeded)
 * may be left out. A task may come after one later in the file ({@link Graph#anyOrder}): the
 * server, not this reader, refuses a cycle, naming the edge that closes it. A field this reader
 * does not know is refused, named by its path ({@code tasks[1].afterr}), rather than dropped.
 */
final class GraphFile {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> TOP = Set.of("namespace", "graph_id", "tasks");
    private static final Set<String> TASK = Set.of("key", "task_type", "payload", "after", "join");
    private static final Set<String> AFTER = Set.of("key", "on_failure");
    private static final Set<String> JOIN = Set.of("rule", "at_least");

    private GraphFile() {}

    /** A file that does not describe a graph: bad usage, named by its path in the file. */
    static final class BadGraphFile extends RuntimeException {
        BadGraphFile(String message) {
            super(message);
        }
    }

    /** The graph of {@code text}; a {@link BadGraphFile} (or an InvalidTaskSpecException) names what is wrong. */
    static Graph parse(String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new BadGraphFile("not valid JSON: " + e.getOriginalMessage());
        }
        object(root, "the graph file", TOP);
        String namespace = text(root, "namespace", "namespace");
        Graph g = Graph.anyOrder(text(root, "graph_id", "graph_id"));
        JsonNode tasks = root.get("tasks");
        if (tasks == null || !tasks.isArray() || tasks.isEmpty()) {
            throw new BadGraphFile("tasks: must be a non-empty array");
        }
        for (int i = 0; i < tasks.size(); i++) {
            String at = "tasks[" + i + "]";
            JsonNode t = tasks.get(i);
            object(t, at, TASK);
            TaskSpec.Builder spec = TaskSpec.builder(namespace, text(t, "task_type", at + ".task_type"));
            JsonNode payload = t.get("payload");
            if (payload != null && !payload.isNull()) {
                try {
                    spec.payload(payload);
                } catch (InvalidTaskSpecException e) {
                    throw new BadGraphFile(at + "." + e.getMessage());
                }
            }
            g.task(text(t, "key", at + ".key"), spec.build(), after(t.get("after"), at + ".after"),
                    join(t.get("join"), at + ".join"));
        }
        return g;
    }

    private static List<Graph.After> after(JsonNode after, String at) {
        List<Graph.After> parents = new ArrayList<>();
        if (after == null || after.isNull()) {
            return parents;
        }
        if (!after.isArray()) {
            throw new BadGraphFile(at + ": must be an array");
        }
        for (int j = 0; j < after.size(); j++) {
            String here = at + "[" + j + "]";
            JsonNode a = after.get(j);
            object(a, here, AFTER);
            OnFailure policy = OnFailure.SKIP;
            if (a.hasNonNull("on_failure")) {
                try {
                    policy = OnFailure.parse(text(a, "on_failure", here + ".on_failure"));
                } catch (IllegalArgumentException e) {
                    throw new BadGraphFile(here + "." + e.getMessage());
                }
            }
            parents.add(new Graph.After(text(a, "key", here + ".key"), policy));
        }
        return parents;
    }

    private static Join join(JsonNode join, String at) {
        if (join == null || join.isNull()) {
            return Join.allSucceeded();
        }
        object(join, at, JOIN);
        JoinRule rule = JoinRule.ALL_SUCCEEDED;
        try {
            if (join.hasNonNull("rule")) {
                rule = JoinRule.parse(text(join, "rule", at + ".rule"));
            }
            JsonNode k = join.get("at_least");
            if (k != null && !k.isNull() && !k.canConvertToInt()) {
                throw new BadGraphFile(at + ".at_least: must be a whole number, got " + k);
            }
            return new Join(rule, k == null || k.isNull() ? 0 : k.asInt());
        } catch (IllegalArgumentException e) {
            throw new BadGraphFile(at + ": " + e.getMessage());
        }
    }

    /** {@code node} is an object with only {@code known} fields. */
    private static void object(JsonNode node, String at, Set<String> known) {
        if (node == null || !node.isObject()) {
            throw new BadGraphFile(at + ": must be a JSON object");
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!known.contains(name)) {
                throw new BadGraphFile((at.startsWith("the ") ? "" : at + ".") + name + ": unknown field");
            }
        }
    }

    private static String text(JsonNode parent, String name, String at) {
        JsonNode v = parent.get(name);
        if (v == null || !v.isTextual()) {
            throw new BadGraphFile(at + ": must be a string");
        }
        return v.asText();
    }
}
