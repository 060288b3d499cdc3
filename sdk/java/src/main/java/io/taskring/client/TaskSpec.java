package io.taskring.client;

import io.taskring.Durations;
import io.taskring.Instants;
import io.taskring.Payloads;
import io.taskring.Priority;
import io.taskring.RetryPolicy;
import io.taskring.WireLimits;
import io.taskring.errors.InvalidTaskSpecException;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZonedDateTime;
import java.time.format.DateTimeParseException;
import java.util.Objects;

/**
 * One task to submit (Python: {@code TaskSpec}). Built with {@link #builder}; {@code build()}
 * checks only what the wire cannot carry (both a delay and a schedule time, negative or
 * out-of-range durations, a payload that is not a JSON object). Name syntax, payload size
 * and retry ranges are the server's call, answered with an {@code InvalidArgumentException}
 * naming the field, so the rules live in one place.
 */
public final class TaskSpec {
    private final String namespace;
    private final String taskType;
    private final String payloadJson;
    private final String taskId;
    private final Duration delay;
    private final OffsetDateTime scheduleTime;
    private final Duration timeout;
    private final Integer maxRetries;
    private final RetryPolicy retryPolicy;
    private final Priority priority;
    private final String uniqueKey;
    private final String traceId;
    private final long payloadVersion;

    private TaskSpec(Builder b) {
        this.namespace = b.namespace;
        this.taskType = b.taskType;
        this.payloadJson = b.payloadJson;
        this.taskId = b.taskId;
        this.delay = b.delay;
        this.scheduleTime = b.scheduleTime;
        this.timeout = b.timeout;
        this.maxRetries = b.maxRetries;
        this.retryPolicy = b.retryPolicy;
        this.priority = b.priority;
        this.uniqueKey = b.uniqueKey;
        this.traceId = b.traceId;
        this.payloadVersion = b.payloadVersion;
    }

    public static Builder builder(String namespace, String taskType) {
        return new Builder(namespace, taskType);
    }

    public String namespace() { return namespace; }
    public String taskType() { return taskType; }
    /** The payload as the compact JSON text that goes on the wire. */
    public String payloadJson() { return payloadJson; }
    /** Null when the server assigns the id. */
    public String taskId() { return taskId; }
    public Duration delay() { return delay; }
    public OffsetDateTime scheduleTime() { return scheduleTime; }
    public Duration timeout() { return timeout; }
    public Integer maxRetries() { return maxRetries; }
    public RetryPolicy retryPolicy() { return retryPolicy; }
    public Priority priority() { return priority; }
    public String uniqueKey() { return uniqueKey; }
    public String traceId() { return traceId; }
    public long payloadVersion() { return payloadVersion; }

    /** A submit of this spec may be retried: the server recognises a known task id as a duplicate. */
    public boolean isIdempotent() {
        return taskId != null && !taskId.isEmpty();
    }

    public static final class Builder {
        private final String namespace;
        private final String taskType;
        private String payloadJson = "{}";
        private String taskId;
        private Duration delay;
        private OffsetDateTime scheduleTime;
        private Duration timeout;
        private Integer maxRetries;
        private RetryPolicy retryPolicy;
        private Priority priority = Priority.NORMAL;
        private String uniqueKey;
        private String traceId;
        private long payloadVersion;

        private Builder(String namespace, String taskType) {
            this.namespace = Objects.requireNonNull(namespace, "namespace");
            this.taskType = Objects.requireNonNull(taskType, "taskType");
        }

        /** A JSON object: a Map, a Jackson ObjectNode or a bean; sent as compact JSON. Null sends {}. */
        public Builder payload(Object payload) {
            this.payloadJson = Payloads.encode(payload);
            return this;
        }

        /** JSON text of an object; compacted before it is sent. */
        public Builder payloadJson(String json) {
            this.payloadJson = Payloads.encodeJsonText(json);
            return this;
        }

        /** Your own id: makes a resubmission idempotent (the server assigns a UUIDv7 when unset). */
        public Builder taskId(String taskId) {
            this.taskId = taskId;
            return this;
        }

        /** Run this long after acceptance; exclusive with a schedule time. */
        public Builder delay(Duration delay) {
            this.delay = delay;
            return this;
        }

        /** Run at this instant, in the caller's own offset. Exclusive with a delay. */
        public Builder scheduleTime(OffsetDateTime at) {
            this.scheduleTime = at;
            return this;
        }

        public Builder scheduleTime(ZonedDateTime at) {
            this.scheduleTime = at == null ? null : at.toOffsetDateTime();
            return this;
        }

        /** Sent in UTC. */
        public Builder scheduleTime(Instant at) {
            this.scheduleTime = at == null ? null : at.atOffset(java.time.ZoneOffset.UTC);
            return this;
        }

        /** RFC 3339 text; it must carry an offset (a local time is ambiguous, as Python's naive datetime). */
        public Builder scheduleTime(String rfc3339) {
            if (rfc3339 == null) {
                this.scheduleTime = null;
                return this;
            }
            try {
                this.scheduleTime = Instants.parse(rfc3339);
            } catch (DateTimeParseException e) {
                throw new InvalidTaskSpecException("schedule_time",
                        "must be RFC 3339 with an offset (a time without one is ambiguous), got '" + rfc3339 + "'");
            }
            return this;
        }

        /** Per-attempt deadline of the handler; the server's default when unset. */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /** Retries after the first attempt; the server's default when unset. */
        public Builder maxRetries(Integer maxRetries) {
            this.maxRetries = maxRetries;
            return this;
        }

        public Builder retryPolicy(RetryPolicy policy) {
            this.retryPolicy = policy;
            return this;
        }

        public Builder priority(Priority priority) {
            this.priority = Objects.requireNonNull(priority, "priority");
            return this;
        }

        public Builder priority(String priority) {
            this.priority = Priority.parse(priority);
            return this;
        }

        /** At most one live task per key (enforced by the server). */
        public Builder uniqueKey(String uniqueKey) {
            this.uniqueKey = uniqueKey;
            return this;
        }

        /** Carried to the handler, for joining logs across services. */
        public Builder traceId(String traceId) {
            this.traceId = traceId;
            return this;
        }

        /** Schema version of the payload (a uint32). */
        public Builder payloadVersion(long version) {
            this.payloadVersion = version;
            return this;
        }

        public TaskSpec build() {
            // Same checks, order and wording as Python's TaskSpec.__post_init__.
            if (delay != null && scheduleTime != null) {
                throw new InvalidTaskSpecException("delay", "give either delay or schedule_time, not both");
            }
            if (delay != null) {
                Durations.requireNonNegative(delay, "delay");
                WireLimits.uint64Millis(delay, "delay");
            }
            if (timeout != null) {
                Durations.requireNonNegative(timeout, "timeout");
                BigInteger ms = Durations.ceilMillis(timeout);
                if (ms.signum() <= 0 || ms.compareTo(BigInteger.valueOf(WireLimits.UINT32_MAX)) > 0) {
                    throw new InvalidTaskSpecException("timeout", "must be between 1 ms and " + WireLimits.UINT32_MAX + " ms");
                }
            }
            if (payloadVersion < 0 || payloadVersion > WireLimits.UINT32_MAX) {
                throw new InvalidTaskSpecException("payload_version", "must be a uint32");
            }
            return new TaskSpec(this);
        }
    }
}
