package io.taskring.executor;

/**
 * Where a running attempt's heartbeats go: the Work stream its delivery came on. An attempt
 * that came by the unary Execute call has none, and its heartbeats go nowhere.
 */
interface HeartbeatLine {
    /**
     * Queue a heartbeat of {@code a} up the stream, without waiting for its answer; from then
     * until the attempt's outcome, the answers for it are routed to {@link DeliveryRunner#stop}.
     * Sends nothing once the attempt's outcome is decided or the stream is gone.
     */
    void heartbeat(DeliveryRunner.Attempt a, String detailsJson);
}
