package io.taskring.errors;

/**
 * The attempt is stopped: the answer to one of its heartbeats said the task was cancelled
 * ({@link Verdict#CANCEL}) or that this attempt is no longer the task's running one
 * ({@link Verdict#LOST}). {@code TaskContext.heartbeat} throws it from then on. The attempt's
 * outcome is OUTCOME_KIND_STOPPED whatever the handler does next, so let it propagate and stop
 * working on the task: nobody will use what it still does.
 *
 * <p>The message is the outcome's error: {@code "cancelled: <reason>"} or {@code "lost: <reason>"}.
 */
public class TaskStoppedException extends TaskringException {
    /** Why the attempt stopped: the heartbeat verdict that stopped it. */
    public enum Verdict {
        /** The task was cancelled while it ran; its outcome changes nothing. */
        CANCEL,
        /**
         * This attempt is not the task's running attempt any more (its heartbeats stopped
         * reaching the dispatcher in time and it was recovered, or the task finished); its
         * outcome is refused.
         */
        LOST
    }

    private final Verdict verdict;
    private final String reason;

    public TaskStoppedException(Verdict verdict, String reason) {
        super((verdict == Verdict.CANCEL ? "cancelled: " : "lost: ") + reason);
        this.verdict = verdict;
        this.reason = reason;
    }

    public Verdict verdict() {
        return verdict;
    }

    /** The dispatcher's reason, for the handler's log. */
    public String reason() {
        return reason;
    }
}
