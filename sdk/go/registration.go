package taskring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// How an executor announces itself to the dispatchers, as
// sdk/python/taskring/_registration.py: one ephemeral znode,
// /executors/<namespace>/<instance_id>, holding JSON the dispatchers read
// (membership/executors.py parse_executor).
//
//   - Every time the client (re)gains a session, the znode is made to exist
//     and be ours. After a short disconnect with the same session that is a
//     cheap no-op; after a session loss go-zookeeper reconnects with a new
//     session, the old ephemeral znode is gone, and it is created again.
//   - The re-create runs on its own goroutine, never in go-zookeeper's event
//     callback, which runs on the connection's loop and must not block.
//   - A znode held by another session (a stale instance with the same id) is
//     replaced. Retries are bounded in Start and Stop and cut short by Stop
//     when re-registering, so a ZooKeeper outage cannot hang either.
//   - Stop clears `active` (interrupting a re-register), then deletes the
//     znode under the lock that serialises create and delete, so a late
//     re-create cannot bring it back.

const executorsRoot = "/executors"

// registrationData is the znode's JSON. The field order and the compact
// encoding are those of Python's znode_data (json.dumps with (",", ":")).
type registrationData struct {
	Address     string   `json:"address"`
	Namespace   string   `json:"namespace"`
	TaskTypes   []string `json:"task_types"` // sorted
	MaxInFlight int      `json:"max_in_flight"`
	PID         int      `json:"pid"`
}

func znodeData(d registrationData) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // Python does not escape <, >, &
	_ = enc.Encode(d)        // cannot fail: strings, ints and a slice of strings
	return bytes.TrimRight(buf.Bytes(), "\n")
}

type registration struct {
	connect        zkConnect
	path           string // from the ZooKeeper root, chroot included
	data           []byte
	sessionTimeout time.Duration
	log            *slog.Logger

	conn    *zk.Conn
	mu      sync.Mutex  // serialises create and delete of the znode
	active  atomic.Bool // between a successful start and stop; read without mu to cut retries short
	kick    chan struct{}
	stopped chan struct{}
	loopWG  sync.WaitGroup
	session chan struct{} // closed at the first session
	once    sync.Once
}

func newRegistration(connect, namespace, instanceID string, data []byte, sessionTimeout time.Duration, log *slog.Logger) (*registration, error) {
	c, err := parseZKConnect(connect)
	if err != nil {
		return nil, err
	}
	return &registration{
		connect: c, path: c.path(executorsRoot + "/" + namespace + "/" + instanceID), data: data,
		sessionTimeout: sessionTimeout, log: log,
		kick: make(chan struct{}, 1), stopped: make(chan struct{}), session: make(chan struct{}),
	}, nil
}

// zkLog sends go-zookeeper's chatter to slog at debug level.
type zkLog struct{ l *slog.Logger }

func (z zkLog) Printf(format string, args ...any) {
	z.l.Debug("zookeeper: " + fmt.Sprintf(format, args...))
}

// start connects (bounded by ctx), creates the chroot if missing, and creates the znode.
func (r *registration) start(ctx context.Context) error {
	conn, _, err := zk.Connect(r.connect.servers, r.sessionTimeout, zk.WithLogger(zkLog{r.log}), zk.WithEventCallback(r.onEvent))
	if err != nil {
		return fmt.Errorf("taskring: ZooKeeper %v: %w", r.connect.servers, err)
	}
	r.conn = conn
	select {
	case <-r.session:
	case <-ctx.Done():
		conn.Close()
		r.conn = nil
		return fmt.Errorf("taskring: cannot reach ZooKeeper at %s: %w", strings.Join(r.connect.servers, ","), ctx.Err())
	}
	r.active.Store(true)
	r.loopWG.Add(1)
	go r.reregisterLoop()
	r.mu.Lock()
	err = r.retry(ctx, true, func() error {
		if r.connect.chroot != "" {
			if err := r.ensurePath(r.connect.chroot); err != nil {
				return err
			}
		}
		return r.ensureOurs()
	})
	r.mu.Unlock()
	if err != nil {
		r.stop(context.Background())
		return fmt.Errorf("taskring: cannot register %s in ZooKeeper: %w", r.path, err)
	}
	r.log.Info("taskring: registered executor", "znode", r.path)
	return nil
}

// stop deletes the znode (bounded by ctx and the session timeout) and closes the session. Safe twice.
func (r *registration) stop(ctx context.Context) {
	wasActive := r.active.Swap(false) // first: interrupts a re-register in progress
	if r.conn == nil {
		return
	}
	select {
	case <-r.stopped:
		return
	default:
		close(r.stopped)
	}
	r.loopWG.Wait()
	if wasActive {
		ctx, cancel := context.WithTimeout(ctx, r.sessionTimeout)
		r.mu.Lock()
		err := r.retry(ctx, false, r.deleteOurs)
		r.mu.Unlock()
		cancel()
		if err != nil { // the session ends just below anyway, which removes the ephemeral znode
			r.log.Warn("taskring: could not delete the znode; it goes with the session", "znode", r.path, "err", err)
		}
	}
	r.conn.Close()
	r.log.Info("taskring: deregistered executor", "znode", r.path)
}

// onEvent runs on go-zookeeper's loop: it must not block.
func (r *registration) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		r.once.Do(func() { close(r.session) })
		select {
		case r.kick <- struct{}{}:
		default: // one re-register is already pending
		}
	case zk.StateExpired, zk.StateDisconnected:
		if !r.active.Load() {
			return // our own Close
		}
		if ev.State == zk.StateDisconnected {
			r.log.Warn("taskring: ZooKeeper connection lost; dispatchers may stop seeing this executor", "znode", r.path)
			return
		}
		r.log.Warn("taskring: ZooKeeper session lost; the znode is re-created on reconnect", "znode", r.path)
	}
}

func (r *registration) reregisterLoop() {
	defer r.loopWG.Done()
	for {
		select {
		case <-r.stopped:
			return
		case <-r.kick:
		}
		r.mu.Lock()
		if r.active.Load() {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-r.stopped; cancel() }()
			if err := r.retry(ctx, true, r.ensureOurs); err != nil && r.active.Load() {
				r.log.Error("taskring: could not re-create the znode", "znode", r.path, "err", err)
			}
			cancel()
		}
		r.mu.Unlock()
	}
}

// retry repeats an idempotent step through connection trouble until it
// succeeds, ctx ends, or (when interruptible) stop() is called.
func (r *registration) retry(ctx context.Context, interruptible bool, step func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := step()
		if err == nil {
			return nil
		}
		if interruptible && !r.active.Load() {
			return errors.New("stopped")
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, 2*time.Second)
	}
}

// ensurePath creates p and its parents as persistent znodes.
func (r *registration) ensurePath(p string) error {
	cur := ""
	for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + seg
		if _, err := r.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// ensureOurs is idempotent: afterwards the znode exists, is ours, and holds our data.
func (r *registration) ensureOurs() error {
	if err := r.ensurePath(r.path[:strings.LastIndex(r.path, "/")]); err != nil {
		return err
	}
	create := func() error {
		_, err := r.conn.Create(r.path, r.data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		return err
	}
	err := create()
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	data, stat, err := r.conn.Get(r.path)
	if errors.Is(err, zk.ErrNoNode) {
		return create()
	}
	if err != nil {
		return err
	}
	if stat.EphemeralOwner == r.conn.SessionID() {
		if !bytes.Equal(data, r.data) {
			_, err = r.conn.Set(r.path, r.data, stat.Version)
		}
		return err
	}
	r.log.Warn("taskring: replacing a znode held by another session", "znode", r.path)
	if err := r.conn.Delete(r.path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return create()
}

func (r *registration) deleteOurs() error {
	_, stat, err := r.conn.Get(r.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if stat.EphemeralOwner != r.conn.SessionID() {
		return nil // someone else's now: not ours to delete
	}
	if err := r.conn.Delete(r.path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

func processID() int { return os.Getpid() }
