package io.taskring.client;

import io.taskring.Instants;
import io.taskring.TaskState;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;
import taskring.v1.Taskring;

/**
 * A cron rule as stored (normalised: the zone and every policy filled in by the server) and
 * its state (Python: {@code taskring.cron.CronRuleInfo}). Every fire's task is an ordinary
 * task: {@code client.get(lastFireTaskId())} shows it.
 *
 * @param nextFireTime the next fire time after now; empty when paused (and in what delete returns)
 * @param lastFireTime the latest fire time, not after now, that has its task
 * @param lastFireTaskId that fire's task, {@code ""} when the rule has not fired
 * @param lastFireState that task's state; empty when the rule has not fired
 */
public record CronRuleInfo(
        CronRuleSpec spec,
        boolean paused,
        Optional<Instant> nextFireTime,
        Optional<Instant> lastFireTime,
        String lastFireTaskId,
        Optional<TaskState> lastFireState,
        Optional<Instant> createdAt,
        Optional<Instant> updatedAt) {

    /**
     * The info of a wire rule. As in Python the last fire's state is read only when there is a
     * last fire: without one the wire's state is its zero value, which names no state.
     */
    public static CronRuleInfo fromWire(Taskring.CronRule r) {
        return new CronRuleInfo(CronRuleSpec.fromWire(r), r.getPaused(), instant(r.getNextFireTime()),
                instant(r.getLastFireTime()), r.getLastFireTaskId(),
                r.getLastFireTaskId().isEmpty() ? Optional.empty()
                        : Optional.of(TaskState.fromWire(r.getLastFireStateValue())),
                instant(r.getCreatedAt()), instant(r.getUpdatedAt()));
    }

    private static Optional<Instant> instant(String text) {
        return Optional.ofNullable(Instants.parseOrNull(text)).map(OffsetDateTime::toInstant);
    }
}
