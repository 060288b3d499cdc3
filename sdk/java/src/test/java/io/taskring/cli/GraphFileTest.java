package io.taskring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.taskring.client.Graph;
import org.junit.jupiter.api.Test;

/** The graph file of {@code graph submit}: what it accepts, and each mistake named by its path. */
class GraphFileTest {
    private static String graph(String tasks) {
        return "{\"namespace\": \"shop\", \"graph_id\": \"g\", \"tasks\": [" + tasks + "]}";
    }

    private static String refused(String json) {
        return assertThrows(RuntimeException.class, () -> GraphFile.parse(json)).getMessage();
    }

    @Test
    void aTaskMayComeAfterOneLaterInTheFile() {
        Graph g = GraphFile.parse(graph("{\"key\": \"a\", \"task_type\": \"t\", \"after\": [{\"key\": \"b\"}]},"
                + "{\"key\": \"b\", \"task_type\": \"t\", \"join\": {\"rule\": \"all_done\"}}"));
        assertEquals(2, g.size());
        assertEquals("shop", g.namespace());
        assertEquals("g", g.graphId());
    }

    @Test
    void everyFailurePolicyIsAccepted() {
        Graph g = GraphFile.parse(graph("{\"key\": \"a\", \"task_type\": \"t\"},"
                + "{\"key\": \"b\", \"task_type\": \"t\", \"after\": [{\"key\": \"a\", \"on_failure\": \"skip\"}]},"
                + "{\"key\": \"c\", \"task_type\": \"t\", \"after\": [{\"key\": \"a\", \"on_failure\": \"ignore\"}]},"
                + "{\"key\": \"d\", \"task_type\": \"t\", \"after\": [{\"key\": \"a\", \"on_failure\": \"continue\"}]}"));
        assertEquals(4, g.size());
    }

    @Test
    void mistakesAreNamedByTheirPath() {
        assertEquals("tasks: must be a non-empty array", refused(graph("")));
        assertEquals("graph_id: must be a string", refused("{\"namespace\": \"shop\", \"tasks\": []}"));
        assertEquals("tasks[0].task_type: must be a string", refused(graph("{\"key\": \"a\"}")));
        assertEquals("tasks[0].payload: must be a JSON object, got array",
                refused(graph("{\"key\": \"a\", \"task_type\": \"t\", \"payload\": [1]}")));
        assertEquals("tasks[0].after[0].on_failure must be skip, ignore or continue, got 'retry'",
                refused(graph("{\"key\": \"a\", \"task_type\": \"t\", \"after\": [{\"key\": \"b\", \"on_failure\": \"retry\"}]}")));
        assertEquals("tasks[0].after[0].when: unknown field",
                refused(graph("{\"key\": \"a\", \"task_type\": \"t\", \"after\": [{\"key\": \"b\", \"when\": 1}]}")));
        assertEquals("tasks[0].join: at_least: must be a whole number >= 1, got 0",
                refused(graph("{\"key\": \"a\", \"task_type\": \"t\", \"join\": {\"rule\": \"at_least\"}}")));
        assertEquals("schedule: unknown field", refused("{\"namespace\": \"shop\", \"graph_id\": \"g\", \"tasks\": [],"
                + " \"schedule\": 1}"));
    }
}
