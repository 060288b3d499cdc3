package io.taskring.client;

import io.taskring.TaskState;
import io.taskring.errors.ProtocolException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import taskring.v1.Taskring;

/** The graph answers of the wire as the SDK's types (Python: {@code submitted_from_pb}, {@code graph_from_pb}, {@code CancelledGraph}). */
final class GraphWire {
    private GraphWire() {}

    static SubmittedGraph fromWire(Taskring.SubmitGraphResponse r, int expected) {
        if (r.getTasksCount() != expected) {
            throw new ProtocolException("SubmitGraph returned " + r.getTasksCount() + " tasks for " + expected);
        }
        Map<String, GraphTaskRef> tasks = new LinkedHashMap<>();
        for (Taskring.GraphTaskRef t : r.getTasksList()) {
            tasks.put(t.getKey(), new GraphTaskRef(t.getKey(), t.getTaskId(), TaskState.fromWire(t.getStateValue()),
                    t.getSlot()));
        }
        return new SubmittedGraph(r.getGraphId(), r.getDuplicate(), Collections.unmodifiableMap(tasks));
    }

    static CancelledGraph fromWire(Taskring.CancelGraphResponse r) {
        return new CancelledGraph(Integer.toUnsignedLong(r.getCancelled()), List.copyOf(r.getRunningList()));
    }

    static GraphInfo fromWire(Taskring.GetGraphResponse r) {
        Map<String, Long> counts = new TreeMap<>(); // a proto map has no order: by name, so output is stable
        r.getCountsMap().forEach((state, n) -> counts.put(state, Integer.toUnsignedLong(n)));
        Map<String, GraphNode> nodes = new LinkedHashMap<>();
        for (Taskring.GraphNode n : r.getNodesList()) {
            List<GraphEdge> edges = new ArrayList<>(n.getDependsOnCount());
            for (Taskring.GraphEdge e : n.getDependsOnList()) {
                edges.add(new GraphEdge(e.getParentKey(), OnFailure.fromWire(e.getOnFailure()), e.getOutcome()));
            }
            nodes.put(n.getKey(), new GraphNode(n.getKey(), n.getTaskId(), TaskState.fromWire(n.getStateValue()),
                    Integer.toUnsignedLong(n.getAttempts()), Join.fromWire(n.getJoin()), List.copyOf(edges),
                    n.getReason(), n.getWaiting(), n.getResultJson()));
        }
        return new GraphInfo(r.getGraphId(), r.getNamespace(), r.getState(), Collections.unmodifiableMap(counts),
                Collections.unmodifiableMap(nodes));
    }
}
