package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.taskring.errors.InvalidGraphException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** The graph builder: its local checks, named as the server names them, and the request it builds. */
class GraphTest {
    private static TaskSpec spec(String type) {
        return TaskSpec.builder("shop", type).build();
    }

    private static Graph order() {
        Graph g = new Graph("order-7");
        Graph.Node charge = g.task("charge", TaskSpec.builder("shop", "charge_card").payload(Map.of("order", 7)).build());
        Graph.Node ship = g.task("ship", spec("ship_order"), charge);
        Graph.Node email = g.task("email", spec("send_email"), charge);
        g.task("close", spec("close_order"), Join.atLeast(1), ship, email.onFailure(OnFailure.IGNORE));
        return g;
    }

    @Test
    void theRequestCarriesTheTasksInOrderWithTheirEdgesAndJoins() {
        Taskring.SubmitGraphRequest req = order().toWire();
        assertEquals("shop", req.getNamespace());
        assertEquals("order-7", req.getGraphId());
        assertEquals(List.of("charge", "ship", "email", "close"), req.getTasksList().stream().map(Taskring.GraphTask::getKey).toList());
        assertEquals("charge_card", req.getTasks(0).getTask().getTaskType());
        assertEquals("{\"order\":7}", req.getTasks(0).getTask().getPayloadJson());
        assertEquals(0, req.getTasks(0).getDependsOnCount());
        assertEquals(Taskring.JoinRule.JOIN_RULE_ALL_SUCCEEDED, req.getTasks(1).getJoin().getRule());
        assertEquals(Taskring.Dependency.newBuilder().setKey("charge").setOnFailure(Taskring.OnFailure.ON_FAILURE_SKIP).build(),
                req.getTasks(1).getDependsOn(0));
        Taskring.GraphTask close = req.getTasks(3);
        assertEquals(List.of("ship", "email"), close.getDependsOnList().stream().map(Taskring.Dependency::getKey).toList());
        assertEquals(Taskring.OnFailure.ON_FAILURE_SKIP, close.getDependsOn(0).getOnFailure());
        assertEquals(Taskring.OnFailure.ON_FAILURE_IGNORE, close.getDependsOn(1).getOnFailure());
        assertEquals(Taskring.Join.newBuilder().setRule(Taskring.JoinRule.JOIN_RULE_AT_LEAST).setAtLeast(1).build(), close.getJoin());
        // Owned by the graph: no task id; no trace id either, so a retry from another trace is still a duplicate.
        for (Taskring.GraphTask t : req.getTasksList()) {
            assertEquals("", t.getTask().getTaskId());
            assertEquals("", t.getTask().getTraceId());
        }
        assertEquals(req, order().toWire(), "the same graph, the same bytes: what makes a retry a duplicate");
    }

    @Test
    void everyFailurePolicyIsSentAndReadBackAsItself() {
        Graph g = new Graph("receipt-7");
        Graph.Node charge = g.task("charge", spec("charge_card"));
        g.task("receipt", spec("send_receipt"), charge.onFailure(OnFailure.CONTINUE));
        assertEquals(Taskring.Dependency.newBuilder().setKey("charge").setOnFailure(Taskring.OnFailure.ON_FAILURE_CONTINUE).build(),
                g.toWire().getTasks(1).getDependsOn(0));
        for (OnFailure p : OnFailure.values()) {
            assertEquals(p, OnFailure.fromWire(p.toWire()));
            assertEquals(p, OnFailure.parse(p.wireName()));
        }
        assertEquals("continue", OnFailure.CONTINUE.wireName());
        // A policy newer than this SDK reads as the default, as UNSPECIFIED does.
        assertEquals(OnFailure.SKIP, OnFailure.fromWire(Taskring.OnFailure.UNRECOGNIZED));
    }

    @Test
    void aRepeatedKeyIsRefusedNamingTheField() {
        Graph g = new Graph("g");
        g.task("a", spec("t"));
        InvalidGraphException e = assertThrows(InvalidGraphException.class, () -> g.task("a", spec("t")));
        assertEquals("tasks[1].key", e.field());
        assertEquals("tasks[1].key: repeats tasks[0].key 'a'", e.getMessage());
        assertEquals(1, g.size(), "nothing added");
    }

    @Test
    void aDependencyOnATaskNotAddedBeforeIsRefusedNamingTheEdge() {
        Graph g = new Graph("g");
        Graph.Node a = g.task("a", spec("t"));
        g.task("b", spec("t"), a);
        InvalidGraphException e = assertThrows(InvalidGraphException.class,
                () -> g.task("c", spec("t"), a, Graph.After.of("later")));
        assertEquals("tasks[2].depends_on[1]", e.field());
        assertEquals("tasks[2].depends_on[1]: 'later' must be a task added before this one", e.getMessage());
        e = assertThrows(InvalidGraphException.class, () -> g.task("self", spec("t"), Graph.After.of("self")));
        assertEquals("tasks[2].depends_on[0]", e.field(), "a task cannot come after itself either");
        Graph other = new Graph("other");
        Graph.Node foreign = other.task("a", spec("t"));
        e = assertThrows(InvalidGraphException.class, () -> g.task("c", spec("t"), foreign));
        assertEquals("tasks[2].depends_on[0]: 'a' is a task of another graph", e.getMessage());
        assertEquals(2, g.size(), "nothing added");
        g.task("c", spec("t"), Graph.After.of("a"), Graph.After.of("b"));
        assertEquals(3, g.size());
    }

    @Test
    void anyOrderLeavesTheOrderAndCyclesToTheServerButNotARepeatedKey() {
        Graph g = Graph.anyOrder("g");
        g.task("a", spec("t"), Graph.After.of("b"));
        g.task("b", spec("t"), Graph.After.of("a"));
        assertEquals("a", g.toWire().getTasks(1).getDependsOn(0).getKey());
        assertThrows(InvalidGraphException.class, () -> g.task("a", spec("t")));
    }

    @Test
    void aGraphNeedsAnIdAndATask() {
        assertEquals("graph_id: must not be empty", assertThrows(InvalidGraphException.class, () -> new Graph("")).getMessage());
        assertEquals("tasks: a graph needs at least one task",
                assertThrows(InvalidGraphException.class, () -> new Graph("g").toWire()).getMessage());
    }

    @Test
    void joinsAreCheckedAndNamedAsEverySdkNamesThem() {
        assertEquals(new Join(JoinRule.ALL_SUCCEEDED, 0), Join.allSucceeded());
        assertEquals(3, Join.atLeast(3).atLeast());
        assertThrows(IllegalArgumentException.class, () -> Join.atLeast(0));
        assertThrows(IllegalArgumentException.class, () -> new Join(JoinRule.ALL_DONE, 2));
        assertEquals("none_failed", Join.noneFailed().rule().wireName());
        assertEquals(JoinRule.ANY_SUCCEEDED, JoinRule.parse("any_succeeded"));
        assertThrows(IllegalArgumentException.class, () -> JoinRule.parse("ALL_DONE"));
        assertEquals(OnFailure.IGNORE, OnFailure.parse("ignore"));
        assertEquals(OnFailure.CONTINUE, OnFailure.parse("continue"));
        assertEquals("on_failure must be skip, ignore or continue, got 'retry'",
                assertThrows(IllegalArgumentException.class, () -> OnFailure.parse("retry")).getMessage());
        // Read back as the server applies them: UNSPECIFIED is the default.
        assertEquals(Join.allSucceeded(), Join.fromWire(Taskring.Join.getDefaultInstance()));
        assertEquals(OnFailure.SKIP, OnFailure.fromWire(Taskring.OnFailure.ON_FAILURE_UNSPECIFIED));
        assertFalse(Join.atLeast(2).equals(Join.atLeast(1)));
    }
}
