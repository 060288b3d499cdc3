package io.taskring.client;

import io.taskring.Payloads;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import taskring.v1.PolicyServiceGrpc;
import taskring.v1.Taskring;

/**
 * The PolicyService over a client's nodes, token, TLS and error mapping: {@link TaskringClient#policies()}
 * (Python: {@code taskring.policies}). Each task type's policy entry (retry policy, unique key,
 * concurrency limits, retry cap, rate limits, fair shares, heartbeat timeout) is read, set and
 * deleted through the API over the policies file. Like the client, every call returns a future
 * failing with an {@code RpcException} subclass; {@link BlockingClient#policies()} waits instead.
 *
 * <p>The policy is given as a JSON object: JSON text (a {@code String}), a {@code Map}, a Jackson
 * {@code JsonNode} or a bean. Anything that is not a JSON object is refused here, before any call,
 * with an {@link io.taskring.errors.InvalidTaskSpecException} naming {@code policy_json}; everything
 * else (the fields, their values, an empty reason) is the server's call: it validates the policy
 * whole and refuses with an {@code InvalidArgumentException} naming the field
 * ({@code policy_json.concurrency.per_type}, {@code reason}), and nothing is written.
 *
 * <p>{@code ifRevision} makes a write conditional: the server refuses it with a
 * {@code FailedPreconditionException} unless the type's API entry is at that revision (0: there is
 * none yet). Only the reads ({@link #get}, {@link #list}) are tried again on the next node after
 * UNAVAILABLE; a put or delete that did commit would be applied, and audited, twice.
 *
 * <p>Get and list need the token's {@code read} call, put and delete its {@code policy_write} call
 * (per namespace); a refusal is a {@code PermissionDeniedException}.
 */
public final class Policies {
    private final TaskringClient client;

    Policies(TaskringClient client) {
        this.client = client;
    }

    /**
     * The type's entry in effect and where it comes from. Never NotFound for a valid type: a type
     * with no entry answers source {@code "none"} and the policy {@code {}}.
     */
    public CompletableFuture<TypePolicy> get(String namespace, String taskType) {
        Taskring.TypePolicyRef req = Taskring.TypePolicyRef.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setTaskType(Objects.requireNonNull(taskType, "taskType")).build();
        return client.call(PolicyServiceGrpc.getGetTypePolicyMethod(), req, true).thenApply(TypePolicy::fromWire);
    }

    /** Every type with an entry (file or API) of {@code namespace} ({@code ""}: every namespace), by namespace then type. */
    public CompletableFuture<List<TypePolicy>> list(String namespace) {
        Taskring.ListTypePoliciesRequest req = Taskring.ListTypePoliciesRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace (\"\" for every namespace)")).build();
        return client.call(PolicyServiceGrpc.getListTypePoliciesMethod(), req, true)
                .thenApply(r -> r.getPoliciesList().stream().map(TypePolicy::fromWire).toList());
    }

    /** Every type with an entry, in every namespace. */
    public CompletableFuture<List<TypePolicy>> list() {
        return list("");
    }

    /**
     * Set the type's API entry (it replaces the file's entry whole); completes with the entry as
     * now in effect, its revision one up. {@code reason} goes in the audit trail (required).
     *
     * @param policy a JSON object: JSON text, a Map, a JsonNode or a bean
     * @throws io.taskring.errors.InvalidTaskSpecException at once, nothing sent, when
     *         {@code policy} is not a JSON object (naming {@code policy_json})
     */
    public CompletableFuture<TypePolicy> put(String namespace, String taskType, Object policy, String reason) {
        return put(putRequest(namespace, taskType, policy, reason));
    }

    /** {@link #put(String, String, Object, String)} only if the API entry is at {@code ifRevision} (0: none yet). */
    public CompletableFuture<TypePolicy> put(String namespace, String taskType, Object policy, String reason,
            long ifRevision) {
        return put(putRequest(namespace, taskType, policy, reason).setIfRevision(ifRevision));
    }

    /**
     * Remove the type's API entry, giving the type back to the file; completes with the
     * TypePolicy the server answers. NotFoundException when the type has no API entry.
     */
    public CompletableFuture<TypePolicy> delete(String namespace, String taskType, String reason) {
        return delete(deleteRequest(namespace, taskType, reason));
    }

    /** {@link #delete(String, String, String)} only if the API entry is at {@code ifRevision}. */
    public CompletableFuture<TypePolicy> delete(String namespace, String taskType, String reason, long ifRevision) {
        return delete(deleteRequest(namespace, taskType, reason).setIfRevision(ifRevision));
    }

    private CompletableFuture<TypePolicy> put(Taskring.PutTypePolicyRequest.Builder req) {
        return client.call(PolicyServiceGrpc.getPutTypePolicyMethod(), req.build(), false).thenApply(TypePolicy::fromWire);
    }

    private CompletableFuture<TypePolicy> delete(Taskring.DeleteTypePolicyRequest.Builder req) {
        return client.call(PolicyServiceGrpc.getDeleteTypePolicyMethod(), req.build(), false)
                .thenApply(TypePolicy::fromWire);
    }

    /** The policy as compact JSON text of an object: a String is JSON text, anything else goes through Jackson. */
    static String policyJson(Object policy) {
        return policy instanceof String json ? Payloads.encodeJsonText(json, "policy_json")
                : Payloads.encode(policy, "policy_json");
    }

    private static Taskring.PutTypePolicyRequest.Builder putRequest(String namespace, String taskType, Object policy,
            String reason) {
        return Taskring.PutTypePolicyRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setTaskType(Objects.requireNonNull(taskType, "taskType"))
                .setPolicyJson(policyJson(policy))
                .setReason(Objects.requireNonNull(reason, "reason"));
    }

    private static Taskring.DeleteTypePolicyRequest.Builder deleteRequest(String namespace, String taskType, String reason) {
        return Taskring.DeleteTypePolicyRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setTaskType(Objects.requireNonNull(taskType, "taskType"))
                .setReason(Objects.requireNonNull(reason, "reason"));
    }
}
