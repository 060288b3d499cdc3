package taskring

import (
	"fmt"
	"strings"
)

// zkConnect is a ZooKeeper connect string split into its parts. go-zookeeper
// has no chroot support, so the chroot (the "/taskring" of
// "zk1:2181,zk2:2181/taskring", as kazoo and the Java client read it) is
// prefixed to every path by the registration itself.
type zkConnect struct {
	servers []string
	chroot  string // "" or "/a/b", never a trailing slash
}

func parseZKConnect(s string) (zkConnect, error) {
	hosts, chroot, _ := strings.Cut(strings.TrimSpace(s), "/")
	var c zkConnect
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.servers = append(c.servers, h)
		}
	}
	if len(c.servers) == 0 {
		return c, fmt.Errorf("taskring: ZooKeeper connect string %q names no server", s)
	}
	if chroot = strings.Trim(chroot, "/"); chroot != "" {
		for _, seg := range strings.Split(chroot, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return c, fmt.Errorf("taskring: ZooKeeper chroot in %q is not a valid path", s)
			}
		}
		c.chroot = "/" + chroot
	}
	return c, nil
}

// path is p (absolute, in the chroot) as seen from the ZooKeeper root.
func (c zkConnect) path(p string) string { return c.chroot + p }
