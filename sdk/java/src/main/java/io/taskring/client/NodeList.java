package io.taskring.client;

import io.grpc.Channel;
import io.grpc.ManagedChannel;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The dispatcher nodes a client talks to, taken in turn: any node accepts any task, so
 * spreading calls over them is enough balancing and needs no gRPC load-balancer config.
 * Owns (and closes) the channels it was built with, unless they were handed in.
 */
final class NodeList implements AutoCloseable {
    private final List<String> names;
    private final List<Channel> channels;
    private final List<ManagedChannel> owned;
    private final AtomicLong turn = new AtomicLong();

    NodeList(List<String> names, List<? extends Channel> channels, List<ManagedChannel> owned) {
        if (channels.isEmpty()) {
            throw new IllegalArgumentException("nodes: give at least one dispatcher address");
        }
        this.names = List.copyOf(names);
        this.channels = List.copyOf(channels);
        this.owned = List.copyOf(owned);
    }

    int size() {
        return channels.size();
    }

    /** The index of the node for the next call (round robin). */
    int next() {
        return (int) Math.floorMod(turn.getAndIncrement(), (long) channels.size());
    }

    /** The node after {@code index}, for the one retry of an idempotent call. */
    int after(int index) {
        return (index + 1) % channels.size();
    }

    Channel channel(int index) {
        return channels.get(index);
    }

    String name(int index) {
        return names.get(index);
    }

    @Override
    public void close() {
        for (ManagedChannel c : owned) {
            c.shutdown();
        }
        for (ManagedChannel c : owned) {
            try {
                if (!c.awaitTermination(5, TimeUnit.SECONDS)) {
                    c.shutdownNow();
                }
            } catch (InterruptedException e) {
                c.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }
}
