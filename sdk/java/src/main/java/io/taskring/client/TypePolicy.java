package io.taskring.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Instants;
import io.taskring.Payloads;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Objects;
import java.util.Optional;
import taskring.v1.Taskring;

/**
 * One task type's entry of the policies file as a node has it (Python:
 * {@code taskring.policies.TypePolicy}): its retry policy, unique key, concurrency limits, retry
 * cap, rate limits, fair shares and heartbeat timeout, in the shape of a key of the file
 * (TASKRING_RETRY_POLICIES). An entry set through the API replaces the file's entry whole;
 * deleting it gives the type back to the file.
 *
 * <p>The JSON objects are Jackson nodes; each accessor returns a fresh copy, so the record stays
 * immutable.
 *
 * @param policy the entry in effect ({@code {}} when nothing is declared)
 * @param source {@code "api"}, {@code "file"} or {@code "none"}
 * @param revision the API entry's revision, 0 when there is none (what {@code ifRevision} compares)
 * @param updatedBy who set the API entry (its token's name), {@code ""} when none
 * @param updatedAt when the API entry was set; empty when there is none (the wire's {@code ""})
 * @param filePolicy the file's entry for the type; empty when the file has none (the wire's {@code ""})
 */
public record TypePolicy(
        String namespace,
        String taskType,
        ObjectNode policy,
        String source,
        long revision,
        String updatedBy,
        Optional<Instant> updatedAt,
        Optional<ObjectNode> filePolicy) {

    public TypePolicy {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(taskType, "taskType");
        policy = Objects.requireNonNull(policy, "policy").deepCopy();
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(updatedBy, "updatedBy");
        Objects.requireNonNull(updatedAt, "updatedAt (Optional.empty() for none)");
        filePolicy = Objects.requireNonNull(filePolicy, "filePolicy (Optional.empty() for none)").map(ObjectNode::deepCopy);
    }

    /** The entry in effect (a fresh copy each call). */
    @Override
    public ObjectNode policy() {
        return policy.deepCopy();
    }

    /** The file's entry (a fresh copy each call); empty when the file has none. */
    @Override
    public Optional<ObjectNode> filePolicy() {
        return filePolicy.map(ObjectNode::deepCopy);
    }

    /**
     * The policy of a wire TypePolicy. An empty {@code policy_json} is the empty object; an empty
     * {@code updated_at} or {@code file_policy_json} is none. JSON that is not an object is a
     * ProtocolException (the server's fault, not the caller's).
     */
    public static TypePolicy fromWire(Taskring.TypePolicy p) {
        return new TypePolicy(p.getNamespace(), p.getTaskType(), Payloads.decodeObject(p.getPolicyJson(), "policy_json"),
                p.getSource(), p.getRevision(), p.getUpdatedBy(),
                Optional.ofNullable(Instants.parseOrNull(p.getUpdatedAt())).map(OffsetDateTime::toInstant),
                p.getFilePolicyJson().isEmpty() ? Optional.empty()
                        : Optional.of(Payloads.decodeObject(p.getFilePolicyJson(), "file_policy_json")));
    }
}
