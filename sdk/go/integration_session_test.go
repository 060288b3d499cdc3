package taskring

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// zkProxy is a TCP proxy in front of ZooKeeper that can cut the executor
// off: long enough, and the server expires its session.
type zkProxy struct {
	lis    net.Listener
	target string
	paused atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newZKProxy(t *testing.T, target string) *zkProxy {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &zkProxy{lis: lis, target: target}
	t.Cleanup(func() { _ = lis.Close(); p.cut() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			if p.paused.Load() {
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

func (p *zkProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func TestIntegrationReRegistersAfterSessionLoss(t *testing.T) {
	servers, conn, chroot := itZK(t)
	if testing.Short() {
		t.Skip("takes about 10 s")
	}
	proxy := newZKProxy(t, servers)
	ex, _ := NewExecutor("shop", WithZooKeeper(proxy.lis.Addr().String()+chroot), WithInstanceID("it-3"),
		WithZKSessionTimeout(4*time.Second), WithLogger(quiet))
	_ = ex.Handle("t", func(context.Context, *Task) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ex.Stop(ctx)
	path := chroot + "/executors/shop/it-3"
	_, before, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	proxy.paused.Store(true)
	proxy.cut()
	// The server expires the session after its timeout, and the ephemeral znode goes with it.
	waitForLong(t, 20*time.Second, func() bool { ok, _, _ := conn.Exists(path); return !ok })
	proxy.paused.Store(false)
	waitForLong(t, 20*time.Second, func() bool {
		_, st, err := conn.Get(path)
		return err == nil && st.EphemeralOwner != before.EphemeralOwner
	})
}

func waitForLong(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached in %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
