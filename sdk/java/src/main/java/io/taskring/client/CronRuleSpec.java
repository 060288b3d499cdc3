package io.taskring.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Durations;
import io.taskring.Payloads;
import io.taskring.WireLimits;
import io.taskring.errors.InvalidTaskSpecException;
import java.math.BigInteger;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import taskring.v1.Taskring;

/**
 * What a cron rule is: the argument of {@link CronRules#create} and {@link CronRules#update}
 * (Python: {@code taskring.cron.CronRuleSpec}). Immutable; build it with {@link #builder}.
 *
 * <p>{@code schedule} has 5 fields (minute hour day-of-month month day-of-week) or 6 with
 * seconds first, and may start with {@code CRON_TZ=<zone>} instead of giving {@code timeZone}.
 * Empty policy strings let the server choose (docs/cron.md); reads return them filled in.
 *
 * <p>Like Python, the only local checks are what the wire cannot carry (a payload that is
 * not a JSON object, a negative or over-uint32 timeout or catch-up limit). The schedule, the
 * zone, the names and the policies are the server's call: it refuses them with an
 * {@code InvalidArgumentException} naming the field ({@code rule.time_zone}), so the rules
 * live in one place.
 *
 * @param payloadJson each fire task's payload, as compact JSON text of an object
 * @param catchUpLimit most missed fires {@code catch_up = "all"} creates; 0 is the server's default
 * @param timeout each fire task's per-attempt timeout; empty for the server's default
 * @param maxRetries each fire task's retries; empty for the server's default
 */
public record CronRuleSpec(
        String namespace,
        String name,
        String taskType,
        String schedule,
        String timeZone,
        String payloadJson,
        String onRepeatedHour,
        String onSkippedHour,
        String catchUp,
        long catchUpLimit,
        String overlap,
        String ownerTeam,
        String description,
        Optional<Duration> timeout,
        Optional<Integer> maxRetries) {

    /** Refuses only what cannot go on the wire; compacts the payload so equal rules compare equal. */
    public CronRuleSpec {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(taskType, "taskType");
        Objects.requireNonNull(schedule, "schedule");
        timeZone = orEmpty(timeZone);
        payloadJson = payloadJson == null ? "{}" : Payloads.encodeJsonText(payloadJson);
        onRepeatedHour = orEmpty(onRepeatedHour);
        onSkippedHour = orEmpty(onSkippedHour);
        catchUp = orEmpty(catchUp);
        overlap = orEmpty(overlap);
        ownerTeam = orEmpty(ownerTeam);
        description = orEmpty(description);
        timeout = Objects.requireNonNull(timeout, "timeout (Optional.empty() for the server's default)");
        maxRetries = Objects.requireNonNull(maxRetries, "maxRetries (Optional.empty() for the server's default)");
        if (catchUpLimit < 0 || catchUpLimit > WireLimits.UINT32_MAX) {
            throw new InvalidTaskSpecException("catch_up_limit", "must be a uint32, got " + catchUpLimit);
        }
        timeout.ifPresent(CronRuleSpec::timeoutMillis);
    }

    public static Builder builder(String namespace, String name, String taskType, String schedule) {
        return new Builder(namespace, name, taskType, schedule);
    }

    /** A builder holding this spec: change a field and {@link CronRules#update} with the result. */
    public Builder toBuilder() {
        return new Builder(namespace, name, taskType, schedule).timeZone(timeZone).payloadJson(payloadJson)
                .onRepeatedHour(onRepeatedHour).onSkippedHour(onSkippedHour).catchUp(catchUp)
                .catchUpLimit(catchUpLimit).overlap(overlap).ownerTeam(ownerTeam).description(description)
                .timeout(timeout.orElse(null)).maxRetries(maxRetries.orElse(null));
    }

    /** The payload as a Jackson object (a fresh copy each call: the spec stays immutable). */
    public ObjectNode payload() {
        return Payloads.decode(payloadJson);
    }

    /**
     * The wire CronRule. The optional fields are set only when given, so the server applies
     * its defaults rather than a zero.
     */
    public Taskring.CronRule toWire() {
        Taskring.CronRule.Builder r = Taskring.CronRule.newBuilder()
                .setNamespace(namespace).setName(name).setTaskType(taskType)
                .setPayloadJson(payloadJson).setSchedule(schedule).setTimeZone(timeZone)
                .setOnRepeatedHour(onRepeatedHour).setOnSkippedHour(onSkippedHour)
                .setCatchUp(catchUp).setCatchUpLimit((int) catchUpLimit).setOverlap(overlap)
                .setOwnerTeam(ownerTeam).setDescription(description);
        timeout.ifPresent(t -> r.setTimeoutMs((int) timeoutMillis(t)));
        maxRetries.ifPresent(r::setMaxRetries);
        return r.build();
    }

    /** The spec of a wire rule (what {@link CronRuleInfo#spec()} holds). */
    public static CronRuleSpec fromWire(Taskring.CronRule r) {
        String payload = r.getPayloadJson().isEmpty() ? "{}" : r.getPayloadJson();
        Payloads.decode(payload); // a ProtocolException, not a caller's error, when the server's is not an object
        return new CronRuleSpec(r.getNamespace(), r.getName(), r.getTaskType(), r.getSchedule(), r.getTimeZone(),
                payload,
                r.getOnRepeatedHour(), r.getOnSkippedHour(), r.getCatchUp(),
                Integer.toUnsignedLong(r.getCatchUpLimit()), r.getOverlap(), r.getOwnerTeam(), r.getDescription(),
                r.hasTimeoutMs() ? Optional.of(Duration.ofMillis(Integer.toUnsignedLong(r.getTimeoutMs())))
                        : Optional.empty(),
                r.hasMaxRetries() ? Optional.of(r.getMaxRetries()) : Optional.empty());
    }

    /**
     * Whole milliseconds, rounded up as every duration this SDK sends (Python truncates here;
     * for whole milliseconds, what the CLI and most callers give, both are the same).
     */
    private static long timeoutMillis(Duration t) {
        Durations.requireNonNegative(t, "timeout");
        BigInteger ms = Durations.ceilMillis(t);
        if (ms.compareTo(BigInteger.valueOf(WireLimits.UINT32_MAX)) > 0) {
            throw new InvalidTaskSpecException("timeout", "must be at most " + WireLimits.UINT32_MAX + " ms");
        }
        return ms.longValue();
    }

    private static String orEmpty(String s) {
        return s == null ? "" : s;
    }

    /** Optional fields are the server's default until set; null setters mean the same. */
    public static final class Builder {
        private final String namespace;
        private final String name;
        private final String taskType;
        private String schedule;
        private String timeZone = "";
        private String payloadJson = "{}";
        private String onRepeatedHour = "";
        private String onSkippedHour = "";
        private String catchUp = "";
        private long catchUpLimit;
        private String overlap = "";
        private String ownerTeam = "";
        private String description = "";
        private Duration timeout;
        private Integer maxRetries;

        private Builder(String namespace, String name, String taskType, String schedule) {
            this.namespace = Objects.requireNonNull(namespace, "namespace");
            this.name = Objects.requireNonNull(name, "name");
            this.taskType = Objects.requireNonNull(taskType, "taskType");
            this.schedule = Objects.requireNonNull(schedule, "schedule");
        }

        public Builder schedule(String schedule) {
            this.schedule = Objects.requireNonNull(schedule, "schedule");
            return this;
        }

        /** An IANA zone ({@code "Europe/London"}); required unless the schedule starts with {@code CRON_TZ=}. */
        public Builder timeZone(String zone) {
            this.timeZone = zone;
            return this;
        }

        /** A JSON object: a Map, a Jackson ObjectNode or a bean; null sends {}. */
        public Builder payload(Object payload) {
            this.payloadJson = Payloads.encode(payload);
            return this;
        }

        /** JSON text of an object; compacted before it is sent. */
        public Builder payloadJson(String json) {
            this.payloadJson = Payloads.encodeJsonText(json);
            return this;
        }

        /** {@code "once"} or {@code "twice"}; "" lets the schedule decide. */
        public Builder onRepeatedHour(String policy) {
            this.onRepeatedHour = policy;
            return this;
        }

        /** {@code "at_shift"} or {@code "skip"}; "" lets the schedule decide. */
        public Builder onSkippedHour(String policy) {
            this.onSkippedHour = policy;
            return this;
        }

        /** After an outage: {@code "skip"}, {@code "latest"} (the server's default) or {@code "all"}. */
        public Builder catchUp(String policy) {
            this.catchUp = policy;
            return this;
        }

        /** Most missed fires {@code "all"} creates (0: the server's default, 100). */
        public Builder catchUpLimit(long limit) {
            this.catchUpLimit = limit;
            return this;
        }

        /** While the previous fire is live: {@code "allow"} (default), {@code "skip"} or {@code "queue_one"}. */
        public Builder overlap(String policy) {
            this.overlap = policy;
            return this;
        }

        public Builder ownerTeam(String team) {
            this.ownerTeam = team;
            return this;
        }

        public Builder description(String description) {
            this.description = description;
            return this;
        }

        /** Each fire task's per-attempt timeout; null for the server's default. */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /** Each fire task's retries after the first attempt; null for the server's default. */
        public Builder maxRetries(Integer maxRetries) {
            this.maxRetries = maxRetries;
            return this;
        }

        public CronRuleSpec build() {
            return new CronRuleSpec(namespace, name, taskType, schedule, timeZone, payloadJson, onRepeatedHour,
                    onSkippedHour, catchUp, catchUpLimit, overlap, ownerTeam, description,
                    Optional.ofNullable(timeout), Optional.ofNullable(maxRetries));
        }
    }
}
