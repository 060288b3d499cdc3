package io.taskring.client;

import java.util.List;

/**
 * {@link Policies}, waiting for the answer: {@link BlockingClient#policies()}. Throws the typed
 * exceptions themselves, as {@link BlockingClient} does.
 */
public final class BlockingPolicies {
    private final Policies policies;

    BlockingPolicies(Policies policies) {
        this.policies = policies;
    }

    /** The type's entry in effect; source {@code "none"} and policy {@code {}} when it has none. */
    public TypePolicy get(String namespace, String taskType) {
        return BlockingClient.join(policies.get(namespace, taskType));
    }

    /** Every type with an entry of {@code namespace} ({@code ""}: every namespace), by namespace then type. */
    public List<TypePolicy> list(String namespace) {
        return BlockingClient.join(policies.list(namespace));
    }

    public List<TypePolicy> list() {
        return BlockingClient.join(policies.list());
    }

    /** @param policy a JSON object: JSON text, a Map, a JsonNode or a bean */
    public TypePolicy put(String namespace, String taskType, Object policy, String reason) {
        return BlockingClient.join(policies.put(namespace, taskType, policy, reason));
    }

    public TypePolicy put(String namespace, String taskType, Object policy, String reason, long ifRevision) {
        return BlockingClient.join(policies.put(namespace, taskType, policy, reason, ifRevision));
    }

    public TypePolicy delete(String namespace, String taskType, String reason) {
        return BlockingClient.join(policies.delete(namespace, taskType, reason));
    }

    public TypePolicy delete(String namespace, String taskType, String reason, long ifRevision) {
        return BlockingClient.join(policies.delete(namespace, taskType, reason, ifRevision));
    }
}
