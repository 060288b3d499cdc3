package io.taskring.executor;

/**
 * A ZooKeeper connect string split into hosts and chroot ({@code "h1:2181,h2:2181/taskring"}).
 * The chroot is applied by prefixing our paths rather than by the ZooKeeper client, so the
 * same session can create the chroot when it is missing (a chrooted client cannot).
 */
record ZkConnect(String hosts, String chroot) {
    static ZkConnect parse(String connect) {
        int slash = connect.indexOf('/');
        if (slash < 0) {
            return new ZkConnect(connect, "");
        }
        String chroot = connect.substring(slash);
        while (chroot.endsWith("/")) {
            chroot = chroot.substring(0, chroot.length() - 1);
        }
        return new ZkConnect(connect.substring(0, slash), chroot);
    }

    String path(String inside) {
        return chroot + inside;
    }
}
