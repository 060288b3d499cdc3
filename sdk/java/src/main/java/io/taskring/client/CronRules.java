package io.taskring.client;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import taskring.v1.CronServiceGrpc;
import taskring.v1.Taskring;

/**
 * The CronService over a client's nodes, token, TLS and error mapping: {@link TaskringClient#cron()}
 * (Python: {@code Client.cron}). Like the client, every call returns a future failing with an
 * {@code RpcException} subclass; {@link BlockingClient#cron()} waits instead.
 *
 * <p>Only the reads ({@link #get}, {@link #list}) are tried again on the next node after
 * UNAVAILABLE. The writes are not: a create that did commit would come back ALREADY_EXISTS,
 * a delete NOT_FOUND, and an update or resume re-plans the rule's fires from the new "now".
 */
public final class CronRules {
    private final TaskringClient client;

    CronRules(TaskringClient client) {
        this.client = client;
    }

    /**
     * A new rule. Fails with AlreadyExistsException if the name is taken in the namespace,
     * InvalidArgumentException naming the field ({@code "rule.time_zone"}) for a bad rule;
     * then nothing was written.
     */
    public CompletableFuture<CronRuleInfo> create(CronRuleSpec spec) {
        return client.call(CronServiceGrpc.getCreateCronRuleMethod(), put(spec), false)
                .thenApply(r -> CronRuleInfo.fromWire(r.getRule()));
    }

    /**
     * Replace the whole rule (unset fields go back to the server's defaults); its fires not yet
     * started are cancelled and it is planned again from now. The task type cannot change.
     * NotFoundException when there is no such rule.
     */
    public CompletableFuture<CronRuleInfo> update(CronRuleSpec spec) {
        return client.call(CronServiceGrpc.getUpdateCronRuleMethod(), put(spec), false)
                .thenApply(r -> CronRuleInfo.fromWire(r.getRule()));
    }

    public CompletableFuture<CronRuleInfo> get(String namespace, String name) {
        return client.call(CronServiceGrpc.getGetCronRuleMethod(), ref(namespace, name), true)
                .thenApply(CronRuleInfo::fromWire);
    }

    /** Every rule of {@code namespace} ({@code ""}: every namespace), by namespace and name. */
    public CompletableFuture<List<CronRuleInfo>> list(String namespace) {
        Taskring.ListCronRulesRequest req = Taskring.ListCronRulesRequest.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace (\"\" for every namespace)")).build();
        return client.call(CronServiceGrpc.getListCronRulesMethod(), req, true)
                .thenApply(r -> r.getRulesList().stream().map(CronRuleInfo::fromWire).toList());
    }

    /** Stop firing; fires not yet started are cancelled. */
    public CompletableFuture<CronRuleInfo> pause(String namespace, String name) {
        return client.call(CronServiceGrpc.getPauseCronRuleMethod(), ref(namespace, name), false)
                .thenApply(CronRuleInfo::fromWire);
    }

    /** Fire again from now on (what fell due while paused is not caught up). */
    public CompletableFuture<CronRuleInfo> resume(String namespace, String name) {
        return client.call(CronServiceGrpc.getResumeCronRuleMethod(), ref(namespace, name), false)
                .thenApply(CronRuleInfo::fromWire);
    }

    /** Remove the rule; fires not yet started are cancelled. Completes with the rule as it was. */
    public CompletableFuture<CronRuleInfo> delete(String namespace, String name) {
        return client.call(CronServiceGrpc.getDeleteCronRuleMethod(), ref(namespace, name), false)
                .thenApply(CronRuleInfo::fromWire);
    }

    private static Taskring.PutCronRuleRequest put(CronRuleSpec spec) {
        return Taskring.PutCronRuleRequest.newBuilder().setRule(spec.toWire()).build();
    }

    private static Taskring.CronRuleRef ref(String namespace, String name) {
        return Taskring.CronRuleRef.newBuilder()
                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                .setName(Objects.requireNonNull(name, "name")).build();
    }
}
