package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Registration on a real ZooKeeper, in a private chroot that does not exist yet.
 * Runs only with TASKRING_IT_ZK set (e.g. 127.0.0.1:22181, the local stack).
 * Named *IT but run by Surefire (see the pom's includes) so the one `mvn test` covers it.
 */
@EnabledIfEnvironmentVariable(named = "TASKRING_IT_ZK", matches = ".+")
class RegistrationIT {
    private final String hosts = System.getenv("TASKRING_IT_ZK");
    private final String chroot = "/taskring-java-it-" + UUID.randomUUID();
    private CuratorFramework zk;

    @BeforeEach
    void connect() throws Exception {
        zk = CuratorFrameworkFactory.newClient(hosts, 10_000, 5_000, new RetryOneTime(100));
        zk.start();
        zk.blockUntilConnected(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void cleanUp() throws Exception {
        if (zk.checkExists().forPath(chroot) != null) {
            zk.delete().deletingChildrenIfNeeded().forPath(chroot);
        }
        zk.close();
    }

    @Test
    void registersThePythonJsonSurvivesSessionLossAndDeregistersOnStop() throws Exception {
        TaskringExecutor executor = TaskringExecutor.builder()
                .namespace("shop")
                .zookeeper(hosts + chroot)
                .instanceId("java-it-1")
                .maxInFlight(7)
                .zkSessionTimeout(Duration.ofSeconds(4))
                .handler("send_email", ctx -> { })
                .handler("charge", ctx -> { })
                .build();
        String path = chroot + "/executors/shop/java-it-1";
        try {
            executor.start();
            Stat stat = new Stat();
            String json = new String(zk.getData().storingStatIn(stat).forPath(path), StandardCharsets.UTF_8);
            assertEquals("{\"address\":\"" + executor.address() + "\",\"namespace\":\"shop\",\"task_types\":[\"charge\",\"send_email\"],"
                    + "\"max_in_flight\":7,\"pid\":" + ProcessHandle.current().pid() + "}", json);
            long firstOwner = stat.getEphemeralOwner();
            assertNotEquals(0, firstOwner, "ephemeral");
            assertEquals(0, zk.checkExists().forPath(chroot).getEphemeralOwner(), "the chroot is persistent");

            expire(executor.registration());
            ExecutorTest.waitFor(() -> {
                try {
                    Stat s = zk.checkExists().forPath(path);
                    return s != null && s.getEphemeralOwner() != firstOwner;
                } catch (Exception e) {
                    return false;
                }
            });
            assertNotNull(zk.checkExists().forPath(path));
        } finally {
            executor.stop(Duration.ofSeconds(2));
        }
        assertNull(zk.checkExists().forPath(path), "gone after stop");
    }

    /** Ends the executor's session from outside: a second client with its id and password, closed. */
    private void expire(Registration registration) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper twin = new ZooKeeper(hosts, 4_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, registration.sessionId(), registration.sessionPassword());
        connected.await(10, TimeUnit.SECONDS);
        twin.close();
    }
}
