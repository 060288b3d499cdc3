package io.taskring.executor;

import io.taskring.errors.TaskringException;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ephemeral znodes ({@code /executors/<ns>/<id>}, one per namespace served) kept alive across
 * ZooKeeper session losses (Python: {@code _registration.py}, same rules):
 *
 * <ul>
 *   <li>On (re)connect, make sure each znode exists, is ours and holds our data. After a
 *       suspension with the same session that is a cheap no-op; after a lost session
 *       Curator has a new one and the znodes are created again.
 *   <li>That work runs on a private thread, never in the state listener, which runs on
 *       Curator's event thread and must not block.
 *   <li>A znode held by another session (a stale instance with our id) is replaced.
 *   <li>{@link #stop} clears {@code active} first (ending a re-register in progress), then
 *       deletes our znodes before the gRPC server stops, so dispatchers stop sending while
 *       in-flight work drains. One lock serialises create and delete, so a late re-create
 *       cannot bring a znode back.
 * </ul>
 */
final class Registration {
    private static final Logger log = LoggerFactory.getLogger(Registration.class);

    private final ZkConnect connect;
    private final Map<String, byte[]> nodes; // full paths (chroot included) -> data
    private final Duration sessionTimeout;
    private final Duration connectTimeout;
    private final Object lock = new Object();
    private final ConnectionStateListener listener = this::onState;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "taskring-zk-register");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean active;
    private CuratorFramework client;

    Registration(String connectString, Map<String, byte[]> nodesInsideChroot, Duration sessionTimeout, Duration connectTimeout) {
        this.connect = ZkConnect.parse(connectString);
        Map<String, byte[]> full = new LinkedHashMap<>();
        nodesInsideChroot.forEach((p, d) -> full.put(connect.path(p), d.clone()));
        this.nodes = full;
        this.sessionTimeout = sessionTimeout;
        this.connectTimeout = connectTimeout;
    }

    /** Connect and create the znodes; returns once they exist. */
    void start() {
        client = CuratorFrameworkFactory.builder()
                .connectString(connect.hosts())
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs((int) Math.min(connectTimeout.toMillis(), sessionTimeout.toMillis()))
                // Few retries per operation: start() and re-register loop themselves, and
                // stop() must not hang on a ZooKeeper outage (the session ends anyway).
                .retryPolicy(new BoundedExponentialBackoffRetry(100, 1000, 3))
                .build();
        client.start();
        try {
            if (!client.blockUntilConnected((int) connectTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new TaskringException("cannot reach ZooKeeper at " + connect.hosts() + " within "
                        + connectTimeout.toSeconds() + " s");
            }
            // Listen before creating, so a session lost in between is noticed too.
            client.getConnectionStateListenable().addListener(listener);
            active = true;
            synchronized (lock) {
                ensureAllWithin(connectTimeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop();
            throw new TaskringException("interrupted while registering in ZooKeeper", e);
        } catch (RuntimeException e) {
            stop();
            throw e;
        }
        nodes.keySet().forEach(p -> log.info("registered executor at {}", p));
    }

    /** Delete our znodes and close the session. Safe before start and twice. */
    void stop() {
        boolean wasActive = active;
        active = false; // first: ends a re-register in progress
        CuratorFramework c = client;
        if (c == null) {
            return;
        }
        client = null;
        c.getConnectionStateListenable().removeListener(listener);
        if (wasActive && c.getZookeeperClient().isConnected()) {
            synchronized (lock) {
                for (String path : nodes.keySet()) {
                    try {
                        deleteIfOurs(c, path);
                    } catch (Exception e) { // the session ends below anyway, which removes the ephemeral node
                        log.warn("could not delete {}; it goes with the session", path, e);
                    }
                }
            }
        }
        worker.shutdownNow();
        c.close();
        nodes.keySet().forEach(p -> log.info("deregistered executor at {}", p));
    }

    /** The session id, for tests that expire it. */
    long sessionId() throws Exception {
        return client.getZookeeperClient().getZooKeeper().getSessionId();
    }

    byte[] sessionPassword() throws Exception {
        return client.getZookeeperClient().getZooKeeper().getSessionPasswd();
    }

    private void onState(CuratorFramework c, ConnectionState state) {
        // On Curator's event thread: hand the work off, never block here.
        switch (state) {
            case CONNECTED, RECONNECTED -> worker.execute(this::reregister);
            case LOST -> log.warn("ZooKeeper session lost; {} will be re-created on reconnect", nodes.keySet());
            case SUSPENDED -> log.warn("ZooKeeper connection suspended; dispatchers may stop seeing {}", nodes.keySet());
            default -> { }
        }
    }

    /** After (re)connecting: retry until done, or until stop(). */
    private void reregister() {
        synchronized (lock) {
            long backoffMs = 100;
            while (active) {
                try {
                    ensureAll();
                    return;
                } catch (InterruptedException e) {
                    return; // stop() shut the worker down
                } catch (Exception e) {
                    log.warn("could not re-create {}; retrying", nodes.keySet(), e);
                }
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException e) {
                    return;
                }
                backoffMs = Math.min(backoffMs * 2, 2000);
            }
        }
    }

    private void ensureAllWithin(Duration budget) {
        long end = System.nanoTime() + budget.toNanos();
        long backoffMs = 100;
        while (true) {
            try {
                ensureAll();
                return;
            } catch (Exception e) {
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoffMs) > end) {
                    throw new TaskringException("could not register in ZooKeeper at " + connect.hosts() + ": " + e, e);
                }
            }
            try {
                Thread.sleep(backoffMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TaskringException("interrupted while registering in ZooKeeper", e);
            }
            backoffMs = Math.min(backoffMs * 2, 2000);
        }
    }

    private void ensureAll() throws Exception {
        CuratorFramework c = client;
        if (c == null) {
            return;
        }
        for (Map.Entry<String, byte[]> e : nodes.entrySet()) {
            ensureOurs(c, e.getKey(), e.getValue());
        }
    }

    /** Idempotent: afterwards the znode exists, is ours and holds our data. Parents (and the chroot) are persistent. */
    private void ensureOurs(CuratorFramework c, String path, byte[] data) throws Exception {
        try {
            c.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(path, data);
            return;
        } catch (KeeperException.NodeExistsException exists) {
            // fall through: whose is it?
        }
        Stat stat = new Stat();
        byte[] current;
        try {
            current = c.getData().storingStatIn(stat).forPath(path);
        } catch (KeeperException.NoNodeException gone) {
            c.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(path, data);
            return;
        }
        if (stat.getEphemeralOwner() == c.getZookeeperClient().getZooKeeper().getSessionId()) {
            if (!Arrays.equals(current, data)) {
                c.setData().withVersion(stat.getVersion()).forPath(path, data);
            }
            return;
        }
        log.warn("replacing {}, held by another session", path);
        try {
            c.delete().withVersion(stat.getVersion()).forPath(path);
        } catch (KeeperException.NoNodeException gone) {
            // someone else removed it: fine
        }
        c.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(path, data);
    }

    private static void deleteIfOurs(CuratorFramework c, String path) throws Exception {
        Stat stat = c.checkExists().forPath(path);
        if (stat == null || stat.getEphemeralOwner() != c.getZookeeperClient().getZooKeeper().getSessionId()) {
            return;
        }
        try {
            c.delete().withVersion(stat.getVersion()).forPath(path);
        } catch (KeeperException.NoNodeException gone) {
            // already gone
        }
    }
}
