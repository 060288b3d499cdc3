package io.taskring.client;

import java.util.List;

/**
 * {@link CronRules}, waiting for the answer: {@link BlockingClient#cron()}. Throws the typed
 * exceptions themselves, as {@link BlockingClient} does.
 */
public final class BlockingCronRules {
    private final CronRules rules;

    BlockingCronRules(CronRules rules) {
        this.rules = rules;
    }

    public CronRuleInfo create(CronRuleSpec spec) {
        return BlockingClient.join(rules.create(spec));
    }

    public CronRuleInfo update(CronRuleSpec spec) {
        return BlockingClient.join(rules.update(spec));
    }

    public CronRuleInfo get(String namespace, String name) {
        return BlockingClient.join(rules.get(namespace, name));
    }

    /** Every rule of {@code namespace} ({@code ""}: every namespace), by namespace and name. */
    public List<CronRuleInfo> list(String namespace) {
        return BlockingClient.join(rules.list(namespace));
    }

    public CronRuleInfo pause(String namespace, String name) {
        return BlockingClient.join(rules.pause(namespace, name));
    }

    public CronRuleInfo resume(String namespace, String name) {
        return BlockingClient.join(rules.resume(namespace, name));
    }

    public CronRuleInfo delete(String namespace, String name) {
        return BlockingClient.join(rules.delete(namespace, name));
    }
}
