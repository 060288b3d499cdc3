package io.taskring.client;

import io.taskring.TaskState;
import io.taskring.errors.TaskringException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The client's calls, waiting for the answer. Throws the typed exceptions themselves,
 * not wrapped in a CompletionException. A view: closing the client closes this too.
 */
public final class BlockingClient {
    private final TaskringClient client;

    BlockingClient(TaskringClient client) {
        this.client = client;
    }

    public SubmitResult submit(TaskSpec spec) {
        return join(client.submit(spec));
    }

    public SubmitResult submit(String namespace, String taskType, Object payload) {
        return join(client.submit(namespace, taskType, payload));
    }

    public List<SubmitResult> submitBatch(List<TaskSpec> specs) {
        return join(client.submitBatch(specs));
    }

    public TaskState cancel(String taskId) {
        return join(client.cancel(taskId));
    }

    public TaskInfo get(String taskId) {
        return join(client.get(taskId));
    }

    /** {@link TaskringClient#submitGraph}, waiting. */
    public SubmittedGraph submitGraph(Graph graph) {
        return join(client.submitGraph(graph));
    }

    public GraphInfo getGraph(String namespace, String graphId) {
        return join(client.getGraph(namespace, graphId));
    }

    public GraphInfo getGraph(String namespace, String graphId, boolean withResults) {
        return join(client.getGraph(namespace, graphId, withResults));
    }

    /** {@link TaskringClient#cancelGraph(String, String)}, waiting. */
    public CancelledGraph cancelGraph(String namespace, String graphId) {
        return join(client.cancelGraph(namespace, graphId));
    }

    /** {@link TaskringClient#cancelGraph(String, String, CancelMode, String)}, waiting. */
    public CancelledGraph cancelGraph(String namespace, String graphId, CancelMode mode, String reason) {
        return join(client.cancelGraph(namespace, graphId, mode, reason));
    }

    /** {@link TaskringClient#cron()}, waiting. */
    public BlockingCronRules cron() {
        return new BlockingCronRules(client.cron());
    }

    /** {@link TaskringClient#policies()}, waiting. */
    public BlockingPolicies policies() {
        return new BlockingPolicies(client.policies());
    }

    static <T> T join(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (CompletionException e) {
            Throwable cause = TaskringClient.unwrap(e);
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new TaskringException(cause.toString(), cause);
        }
    }
}
