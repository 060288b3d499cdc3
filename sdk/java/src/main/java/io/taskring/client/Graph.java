package io.taskring.client;

import io.taskring.errors.InvalidGraphException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import taskring.v1.Taskring;

/**
 * A graph of tasks of one namespace, submitted in one call with {@link TaskringClient#submitGraph}
 * (Python: {@code taskring.graph.Graph}; docs/graphs.md):
 *
 * <pre>{@code
 * Graph g = new Graph("order-1042");                   // the graph id: yours, idempotent
 * Graph.Node charge = g.task("charge", TaskSpec.builder("shop", "charge_card").payload(Map.of("order", 1042)).build());
 * Graph.Node ship = g.task("ship", TaskSpec.builder("shop", "ship_order").build(), charge);
 * Graph.Node email = g.task("email", TaskSpec.builder("shop", "send_email").build(), charge);
 * g.task("close", TaskSpec.builder("shop", "close_order").build(), Join.allSucceeded(),
 *         ship, email.onFailure(OnFailure.IGNORE));
 * }</pre>
 *
 * <p>A task runs when its join rule is met by the ends of the tasks it comes after, and is
 * skipped (with the reason) when the rule can no longer be met. A task can only come after
 * tasks added before it, so a graph built here has no cycle; {@link #task} refuses a repeated
 * key or any other dependency at once with an {@link InvalidGraphException} naming the field as
 * the server does ({@code tasks[1].key}, {@code tasks[2].depends_on[0]}). The server checks
 * everything again, and the rest (names, join rules, the tasks' own fields) only there.
 *
 * <p>{@link #anyOrder} relaxes the order for graphs read from elsewhere (a file, the CLI): a
 * dependency may name a task added later, and the server finds any cycle. Not thread-safe.
 */
public final class Graph {
    private final String graphId;
    private final boolean anyOrder;
    private final List<Entry> tasks = new ArrayList<>();
    private final Map<String, Integer> indexOfKey = new HashMap<>();

    /** A task to come after: a {@link Node} of this graph (failure policy SKIP) or an {@link After}. */
    public sealed interface Parent permits Node, After {
        String key();

        OnFailure failurePolicy();
    }

    /** A task added to a graph: name it among another task's parents. */
    public record Node(String key, Graph graph) implements Parent {
        /** A failure of this task skips what comes after it (by the default join rule). */
        @Override
        public OnFailure failurePolicy() {
            return OnFailure.SKIP;
        }

        /** This dependency with another failure policy: {@code charge.onFailure(OnFailure.IGNORE)}. */
        public After onFailure(OnFailure policy) {
            return new After(key, policy);
        }
    }

    /** One dependency by key, and what the failure of that task means here. */
    public record After(String key, OnFailure failurePolicy) implements Parent {
        public After {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(failurePolicy, "failurePolicy");
        }

        /** The task with {@code key}, its failure skipping (SKIP). */
        public static After of(String key) {
            return new After(key, OnFailure.SKIP);
        }
    }

    private record Entry(String key, TaskSpec spec, List<After> dependsOn, Join join) {}

    /** @param graphId yours: a retried submit with the same id and tasks is a duplicate, nothing written twice */
    public Graph(String graphId) {
        this(graphId, false);
    }

    private Graph(String graphId, boolean anyOrder) {
        if (graphId == null || graphId.isEmpty()) {
            throw new InvalidGraphException("graph_id", "must not be empty");
        }
        this.graphId = graphId;
        this.anyOrder = anyOrder;
    }

    /**
     * A graph whose tasks may come after tasks added later (by {@link After#of}), as read from a
     * file: whether each named key exists, and whether there is a cycle, is the server's call
     * ({@code tasks[0].depends_on[0]: closes the cycle ...}). A repeated key is still refused here.
     */
    public static Graph anyOrder(String graphId) {
        return new Graph(graphId, true);
    }

    public String graphId() {
        return graphId;
    }

    /** The namespace of the graph: its first task's. */
    public String namespace() {
        if (tasks.isEmpty()) {
            throw new InvalidGraphException("tasks", "a graph needs at least one task");
        }
        return tasks.get(0).spec().namespace();
    }

    /** How many tasks have been added. */
    public int size() {
        return tasks.size();
    }

    /** Add a task with no parents: it is due when the graph is submitted. */
    public Node task(String key, TaskSpec spec) {
        return task(key, spec, List.of(), Join.allSucceeded());
    }

    /** Add a task that comes after {@code parents} (all succeeded). */
    public Node task(String key, TaskSpec spec, Parent... parents) {
        return task(key, spec, List.of(parents), Join.allSucceeded());
    }

    /** Add a task that comes after {@code parents} by {@code join}. */
    public Node task(String key, TaskSpec spec, Join join, Parent... parents) {
        return task(key, spec, List.of(parents), join);
    }

    /**
     * Add a task that comes after {@code parents} (tasks added before it) by {@code join}.
     *
     * @throws InvalidGraphException naming {@code tasks[i].key} for a repeated key, or
     *     {@code tasks[i].depends_on[j]} for a parent not added before (of another graph, or
     *     not yet added); nothing is added then
     */
    public Node task(String key, TaskSpec spec, List<? extends Parent> parents, Join join) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(join, "join");
        int i = tasks.size();
        Integer earlier = indexOfKey.get(key);
        if (earlier != null) {
            throw new InvalidGraphException("tasks[" + i + "].key", "repeats tasks[" + earlier + "].key '" + key + "'");
        }
        List<After> dependsOn = new ArrayList<>(parents.size());
        for (int j = 0; j < parents.size(); j++) {
            Parent p = Objects.requireNonNull(parents.get(j), "parent");
            String field = "tasks[" + i + "].depends_on[" + j + "]";
            if (p instanceof Node n && n.graph() != this) {
                throw new InvalidGraphException(field, "'" + n.key() + "' is a task of another graph");
            }
            if (!anyOrder && !indexOfKey.containsKey(p.key())) {
                throw new InvalidGraphException(field, "'" + p.key() + "' must be a task added before this one");
            }
            dependsOn.add(new After(p.key(), p.failurePolicy()));
        }
        indexOfKey.put(key, i);
        tasks.add(new Entry(key, spec, List.copyOf(dependsOn), join));
        return new Node(key, this);
    }

    /**
     * The SubmitGraph request. No trace id is added to the tasks (unlike a single submit): the
     * request's bytes are what makes a retry a duplicate, and a retry may come from another trace.
     */
    Taskring.SubmitGraphRequest toWire() {
        Taskring.SubmitGraphRequest.Builder req = Taskring.SubmitGraphRequest.newBuilder()
                .setNamespace(namespace()).setGraphId(graphId);
        for (Entry e : tasks) {
            Taskring.GraphTask.Builder t = Taskring.GraphTask.newBuilder().setKey(e.key())
                    .setTask(Envelope.toWire(e.spec())).setJoin(e.join().toWire());
            for (After a : e.dependsOn()) {
                t.addDependsOn(Taskring.Dependency.newBuilder().setKey(a.key()).setOnFailure(a.failurePolicy().toWire()));
            }
            req.addTasks(t);
        }
        return req.build();
    }
}
